"""MLflow tracking: metric keys, nested runs without duplicates, and a missing store giving one warning."""

from __future__ import annotations

import json

import pytest

from sgg_eval.metrics.names import mlflow_key
from sgg_eval.pipeline.tracking import VIEW_TAG, ChildRun, log_runs, share_view

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out


def test_metric_keys_avoid_at_sign():
    assert mlflow_key("predcls", "R@50") == "predcls/R_at_50"
    assert mlflow_key("sgdet", "ng-mR@20") == "sgdet/ng-mR_at_20"


def test_nested_runs_are_not_duplicated(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    kids = [
        ChildRun(f"m{i}/predcls", {"model": f"m{i}", "git_commit": "a"}, {"predcls/R_at_50": 0.1 * i}) for i in range(3)
    ]
    first = log_runs(uri, "exp", "pipeline", {"dataset": "x", "git_commit": "a"}, kids)
    kids_new_commit = [ChildRun(c.name, {**c.params, "git_commit": "b"}, c.metrics) for c in kids]
    second = log_runs(uri, "exp", "pipeline", {"dataset": "x", "git_commit": "b"}, kids_new_commit)
    assert first == second
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("exp").experiment_id])
    assert len(runs) == 4
    assert sum(r.data.tags.get("mlflow.parentRunId") == first["parent"] for r in runs) == 3


def test_unavailable_store_warns_once_and_does_not_raise(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    uri = f"sqlite:///{blocker / 'sub' / 'm.db'}"  # cannot be created
    assert log_runs(uri, "exp", "p", {}, [ChildRun("c", {}, {"predcls/R_at_50": 0.5})]) is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len([ln for ln in err if ln.startswith("warning: MLflow tracking skipped")]) == 1


_KILLED_MIDWAY = """
import os, signal, sys
import mlflow
from sgg_eval.pipeline.tracking import ChildRun, log_runs
real = mlflow.log_metrics
calls = []
def dying(metrics, *a, **k):
    calls.append(1)
    if len(calls) == 2:  # the second child: params logged, metrics not yet
        os.kill(os.getpid(), signal.SIGKILL)
    return real(metrics, *a, **k)
mlflow.log_metrics = dying
kids = [ChildRun(f"m{i}/predcls", {"model": f"m{i}"}, {"predcls/R_at_50": 0.1 * i, "predcls/mR_at_50": 0.2})
        for i in range(3)]
log_runs(sys.argv[1], "exp", "pipeline", {"dataset": "x"}, kids)
"""


def test_a_run_killed_mid_logging_is_not_reused_and_the_next_track_completes_it(tmp_path):
    import signal
    import subprocess
    import sys

    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    proc = subprocess.run([sys.executable, "-c", _KILLED_MIDWAY, uri], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("exp").experiment_id
    stale = [r for r in client.search_runs([exp]) if r.info.run_name == "m1/predcls"]
    assert len(stale) == 1 and stale[0].info.status == "RUNNING" and not stale[0].data.metrics

    kids = [
        ChildRun(f"m{i}/predcls", {"model": f"m{i}"}, {"predcls/R_at_50": 0.1 * i, "predcls/mR_at_50": 0.2})
        for i in range(3)
    ]
    ids = log_runs(uri, "exp", "pipeline", {"dataset": "x"}, kids)
    assert ids["children"]["m1/predcls"] != stale[0].info.run_id
    assert client.get_run(stale[0].info.run_id).info.status == "FAILED"
    for name, run_id in ids["children"].items():
        run = client.get_run(run_id)
        assert run.info.status == "FINISHED" and set(run.data.metrics) == {"predcls/R_at_50", "predcls/mR_at_50"}
    assert log_runs(uri, "exp", "pipeline", {"dataset": "x"}, kids) == ids  # complete now: reused as is


def test_commit_is_mlflows_source_tag_and_parent_names_differ(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    ids = [
        log_runs(
            uri,
            "exp",
            "pipeline sim",
            {"tau": tau, "git_commit": "abc123"},
            [ChildRun("m/predcls", {"model": "m", "git_commit": "abc123"}, {"predcls/R_at_50": tau})],
        )
        for tau in (0.5, 0.25)
    ]
    client = MlflowClient(uri)
    parents = [client.get_run(i["parent"]) for i in ids]
    child = client.get_run(ids[0]["children"]["m/predcls"])
    for run in (*parents, child):
        assert run.data.tags["mlflow.source.git.commit"] == "abc123" and "git_commit" not in run.data.params
    names = [p.info.run_name for p in parents]
    assert names[0] != names[1] and all(n.startswith("pipeline sim ") for n in names)


def test_mark_failed(tmp_path):
    from mlflow.tracking import MlflowClient

    from sgg_eval.pipeline.tracking import mark_failed, start_parent

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    run_id = start_parent(uri, "exp", "sweep x", {"dataset": "d"}, {"sgg_eval.kind": "sweep"})
    mark_failed(uri, run_id)
    assert MlflowClient(uri).get_run(run_id).info.status == "FAILED"


def test_a_queued_experiments_runs_land_in_the_workspace_store(tmp_path):
    """DVC runs a queued experiment in ``<repo>/.dvc/tmp/exps/<tmp>/`` and deletes it afterwards: the default
    store is ``<repo>/mlflow.db``, not the copy's. A plain checkout keeps its own."""
    from sgg_eval.pipeline.tracking import default_uri, workspace_root

    copy = tmp_path / "repo" / ".dvc" / "tmp" / "exps" / "tmpab12" / "sub"
    copy.mkdir(parents=True)
    assert workspace_root(copy) == (tmp_path / "repo").resolve()
    assert default_uri(copy) == f"sqlite:///{(tmp_path / 'repo').resolve() / 'mlflow.db'}"
    assert workspace_root(tmp_path) == tmp_path.resolve()
    (tmp_path / "exps").mkdir()
    assert workspace_root(tmp_path / "exps") == (tmp_path / "exps").resolve()


def test_make_ui_names_the_runs_table_of_the_projects_experiment(tmp_path):
    """`make ui` prints the URL of the experiment's runs table (MLflow's home page is a GenAI overview), and
    the experiment is a model-development one, so the UI opens it as a table of runs."""
    import subprocess
    import sys
    from pathlib import Path

    from mlflow.tracking import MlflowClient

    script = Path(__file__).resolve().parents[1] / "scripts" / "mlflow_url.py"
    store = tmp_path / "m.db"
    url = subprocess.run(
        [sys.executable, str(script), "5001", str(store)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert url == "http://127.0.0.1:5001"  # no store yet: the UI's root
    log_runs(f"sqlite:///{store}", "other", "pipeline", {"dataset": "x"}, [])
    log_runs(f"sqlite:///{store}", "sgg-eval", "pipeline", {"dataset": "x"}, [])
    exp = MlflowClient(f"sqlite:///{store}").get_experiment_by_name("sgg-eval")
    assert exp.tags.get("mlflow.experimentKind") == "custom_model_development"
    url = subprocess.run(
        [sys.executable, str(script), "5001", str(store)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert url == f"http://127.0.0.1:5001/#/experiments/{exp.experiment_id}/runs"
    # once the pipeline has stored its shared view: the link opens it (runs grouped by task, metrics as columns)
    share_view(f"sqlite:///{store}", "sgg-eval", ["predcls/R_at_50", "predcls/mR_at_50"])
    state = json.loads(MlflowClient(f"sqlite:///{store}").get_experiment(exp.experiment_id).tags[VIEW_TAG])
    assert state["selectedColumns"] == ["metrics.`predcls/R_at_50`", "metrics.`predcls/mR_at_50`"]
    assert state["groupBy"]["groupByKeys"] == [{"mode": "tag", "groupByData": "sgg_eval.task"}]
    url = subprocess.run(
        [sys.executable, str(script), "5001", str(store)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert url == f"http://127.0.0.1:5001/#/experiments/{exp.experiment_id}/runs?viewStateShareKey=sggeval"
