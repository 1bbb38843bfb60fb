"""DVC beyond one run: experiments queued and run by DVC's own queue, and outputs shared through a DVC remote
(a local directory here) so a fresh clone gets every result without recomputing it (issue 10)."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import time

import pytest

from test_pipeline import copy_project, run

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A Git + DVC copy of the project on the tiny simulated data (set in conf/, as `dvc exp run -S` composes
    conf/ from scratch), without MLflow, reproduced and committed."""
    p = copy_project(tmp_path_factory.mktemp("team"))
    for rel, old, new in (("conf/dataset/vg150_sim.yaml", "scale: default", "scale: tiny"),
                          ("conf/tracking/default.yaml", "enabled: true", "enabled: false")):
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


def test_queued_experiments_run_with_dvc_queue(repo):
    for tau in ("0.25", "0"):
        run([sys.executable, "-m", "dvc", "exp", "run", "--queue", "-S", f"metrics.tau={tau}"], repo)
    run([sys.executable, "-m", "dvc", "queue", "start", "-j", "1"], repo)
    deadline = time.time() + 600
    while time.time() < deadline:
        status = run([sys.executable, "-m", "dvc", "queue", "status"], repo)
        if not re.search(r"\b(Queued|Running)\b", status):
            break
        time.sleep(3)
    assert "Failed" not in status, status
    table = run([sys.executable, "-m", "dvc", "exp", "show", "--no-pager", "--csv"], repo)
    rows = list(csv.reader(io.StringIO(table)))
    tau_col, wimr, imr = (rows[0].index(c) for c in ("metrics.tau", "predcls.wIMR@20", "predcls.IMR@20"))
    done = {float(r[tau_col]): r for r in rows[1:] if len(r) > tau_col and r[tau_col]}
    assert {0.25, 0.0} <= set(done), table
    assert done[0.0][wimr] == done[0.0][imr]  # tau = 0: wIMR is IMR
