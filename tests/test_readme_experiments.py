"""The README's experiments section, run as written on a copy of the reproduced quick start: `dvc exp run` with a
new tau reruns only what reads tau (no ranking, no PSG matching), `dvc exp show`, `dvc params diff`, the plots page
and the way back; then both sweep commands."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from readme_runner import sh, stages_run
from reproduced import VENV, copy_of, git, shell_env

from sgg_eval.pipeline.paths import LOCK_FILES

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out


@pytest.fixture(scope="module")
def project(reproduced_base, tmp_path_factory):
    """A copy of the reproduced quick start."""
    return copy_of(reproduced_base, tmp_path_factory.mktemp("readme_experiments") / "project")


def test_tau_experiment_reruns_only_what_reads_tau_then_back(project):
    out = sh(".venv/bin/dvc exp run -S metrics.tau=0", project)
    # as README: check_params, reduce, psg_reduce, video_tables and what follows; no ranking, no PSG or AG matching
    reran = {"check_params", "reduce", "tables", "figures", "psg_reduce", "psg_tables", "video_tables", "site"}
    assert stages_run(out) == reran | {"track"}, out[-2000:]
    summary = json.loads((project / "data/vg150_sim/results/summary.json").read_text())
    assert summary["predcls"]["wIMR@20"] == summary["predcls"]["IMR@20"]  # tau = 0: wIMR is IMR
    shown = sh(".venv/bin/dvc exp show --only-changed", project)
    assert "metrics.tau" in shown and "wIMR@20" in shown, shown
    # what it shows a user in a 120-column terminal without a pager: every changed summary metric, and tau
    narrow = subprocess.run(
        [str(VENV / "bin/dvc"), "exp", "show", "--only-changed", "--no-pager"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**shell_env(), "COLUMNS": "120"},
    ).stdout
    assert max(map(len, narrow.splitlines())) <= 120, narrow
    for column in ("predcls.wIMR@20", "sgcls.wIMR@20", "sgdet.wIMR@20", "metrics.tau"):
        assert column in narrow, narrow
    assert re.search(r"metrics\.tau\s+0\.5\s+0\b", sh(".venv/bin/dvc params diff", project))
    sh("make plots", project)
    assert "per_predicate" in (project / "reports/plots/index.html").read_text()
    sh(f"git checkout -- params.yaml {' '.join(LOCK_FILES)} && .venv/bin/dvc checkout", project)
    assert git(project, "status", "--porcelain", "params.yaml", *LOCK_FILES) == ""
    summary = json.loads((project / "data/vg150_sim/results/summary.json").read_text())
    assert summary["predcls"]["wIMR@20"] != summary["predcls"]["IMR@20"]  # the outputs are back at tau 0.5


def test_sweeps(project):
    sweeps = project / "reports/sweeps"
    before = set(sweeps.glob("*")) if sweeps.exists() else set()
    sh(".venv/bin/python stages/sweep.py -m metrics.tau=0,0.25,0.5,0.75,1 metrics.imr_k=10,20,50", project)
    sh(".venv/bin/python stages/sweep.py -m hydra/launcher=joblib metrics.tau=0,0.25,0.5,0.75,1", project)
    made = sorted(set(sweeps.glob("*")) - before)
    assert len(made) == 2 and all(any(d.glob("*.png")) and any(d.glob("*.md")) for d in made), made
