"""MLflow tracking: metric keys, nested runs without duplicates, and a missing store giving one warning."""

from __future__ import annotations

from sgg_eval.tracking import ChildRun, log_runs, metric_key


def test_metric_keys_avoid_at_sign():
    assert metric_key("predcls", "R@50") == "predcls/R_at_50"
    assert metric_key("sgdet", "ng-mR@20") == "sgdet/ng-mR_at_20"


def test_nested_runs_are_not_duplicated(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    kids = [ChildRun(f"m{i}/predcls", {"model": f"m{i}", "git_commit": "a"}, {"predcls/R_at_50": 0.1 * i})
            for i in range(3)]
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
