"""DVC beyond one run: outputs shared through a DVC remote (a local directory here) so a fresh clone gets every
result without recomputing it (issue 10). Experiments queued and run by DVC's own queue: tests/test_readme.py."""

from __future__ import annotations

import json
import sys

import pytest
from test_pipeline import copy_project, run

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A Git + DVC copy of the project on the tiny simulated data (set in conf/, as `dvc exp run -S` composes
    conf/ from scratch), without MLflow, reproduced and committed."""
    p = copy_project(tmp_path_factory.mktemp("team"))
    for rel, old, new in (
        ("conf/dataset/vg150_sim.yaml", "scale: default", "scale: tiny"),
        ("conf/psg_dataset/psg_sim.yaml", "scale: default", "scale: tiny"),
        ("conf/tracking/default.yaml", "enabled: true", "enabled: false"),
    ):
        f = p / rel
        assert old in f.read_text(), (rel, old)
        f.write_text(f.read_text().replace(old, new))
    run([sys.executable, "-m", "dvc", "config", "core.no_scm", "false"], p)
    run([sys.executable, "-m", "dvc", "config", "hydra.enabled", "true"], p)
    run([sys.executable, "-m", "sgg_eval.cli", "params"], p)
    (p / ".gitignore").write_text("*.db\n/mlruns/\n")
    run(GIT + ["init", "-q"], p)
    run([sys.executable, "-m", "dvc", "repro", "-q"], p)
    run(GIT + ["add", "-A"], p)
    run(GIT + ["commit", "-q", "-m", "project"], p)
    return p


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
    assert "Running stage" not in out, out  # nothing is recomputed
