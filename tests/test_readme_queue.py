"""The README's "Many experiments" commands, run as written on a copy of the reproduced quick start: two
experiments queued and run two at a time by DVC's queue, both shown by `dvc exp show` and both logged to MLflow."""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from readme_runner import RUN_OTHERWISE, sh
from reproduced import VENV, copy_of
from test_pipeline import mlflow_runs

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out


def test_queued_pair_runs_two_at_a_time_and_both_reach_mlflow(reproduced_base, tmp_path):
    project = copy_of(reproduced_base, tmp_path / "project")
    assert ". .venv/bin/activate" in RUN_OTHERWISE  # `active=True`: the commands below run in an activated shell
    sh("dvc exp run --queue -S metrics.tau=0.25", project, active=True)
    sh("dvc exp run --queue -S metrics.tau=0.75", project, active=True)
    sh("dvc queue start -j 2", project, active=True)
    deadline = time.time() + 900
    while time.time() < deadline:
        status = subprocess.run(
            [str(VENV / "bin/dvc"), "queue", "status"], cwd=project, capture_output=True, text=True
        ).stdout
        if not re.search(r"\b(Queued|Running)\b", status):
            break
        time.sleep(3)
    # dvc-task's worker may miss the shutdown its monitor sent while it was still running a task, and idle
    # on (seen with DVC 3.67: "shutting down due to empty queue" before its task ended): stop every worker
    subprocess.run(
        [str(VENV / "bin/dvc"), "queue", "stop"],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=120,
    )
    assert status.count("Success") == 2, status
    shown = sh("dvc exp show --only-changed", project, active=True)
    assert "0.25" in shown and "0.75" in shown, shown
    children = [
        r.data.params for r in mlflow_runs(f"sqlite:///{project / 'mlflow.db'}") if "mlflow.parentRunId" in r.data.tags
    ]
    assert {c.get("tau") for c in children} >= {"0.25", "0.75"}, [c.get("tau") for c in children]
