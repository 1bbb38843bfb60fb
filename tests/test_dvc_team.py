"""DVC beyond one run: outputs shared through a DVC remote (a local directory here) so a fresh clone gets every
result without recomputing it (issue 10). Experiments queued and run by DVC's own queue: tests/test_readme.py."""

from __future__ import annotations

import json
import sys

import pytest
from reproduced import copy_of, ran_stages
from test_pipeline import run

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


@pytest.fixture(scope="module")
def repo(reproduced_base, tmp_path_factory):
    """A copy of the reproduced quick start (tests/reproduced.py): a Git + DVC project on the tiny simulated
    data (set in conf/, as `dvc exp run -S` composes conf/ from scratch), reproduced and committed."""
    return copy_of(reproduced_base, tmp_path_factory.mktemp("team") / "project")


def test_push_to_a_remote_and_pull_into_a_fresh_clone_without_recomputing(repo, tmp_path):
    remote = tmp_path / "remote"
    run([sys.executable, "-m", "dvc", "remote", "add", "-d", "shared", str(remote)], repo)
    run(GIT + ["commit", "-q", "-am", "remote"], repo)
    run([sys.executable, "-m", "dvc", "push", "-q"], repo)
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(repo), str(clone)], tmp_path)
    run([sys.executable, "-m", "dvc", "pull", "-q"], clone)
    summary = "data/vg150_sim/results/summary.json"
    assert json.loads((clone / summary).read_text()) == json.loads((repo / summary).read_text())
    out = run([sys.executable, "-m", "dvc", "repro"], clone)
    # nothing is recomputed: what may run is the bookkeeping whose outputs DVC does not cache (so neither pushes
    # nor pulls): check_params' links to the user's model files, the files' fingerprints, and the MLflow runs,
    # logged into the teammate's own store; their outputs are as before, so no stage after them reruns
    ran = set(ran_stages(out))
    assert ran <= {"check_params", "model_files", "inputs", "track"}, sorted(ran)
