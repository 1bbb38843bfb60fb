"""MLflow tracking: one parent run per pipeline or sweep, one nested child run per model × task or job.

Runs are keyed by a content hash (tag ``sgg_eval.key``): logging the same results again finds the existing
run instead of adding a duplicate. If the tracking store cannot be reached, tracking gives up with one
warning and the caller carries on: evaluation outputs never depend on MLflow.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sgg_eval.metrics.names import mlflow_key

KEY_TAG = "sgg_eval.key"
COMMIT_TAG = "mlflow.source.git.commit"  # MLflow's own tag: the UI links the run to its source commit


def default_uri(root: str | os.PathLike) -> str:
    """Absolute sqlite URI of ``mlflow.db`` at the root of the user's workspace (:func:`workspace_root`)."""
    return f"sqlite:///{workspace_root(root) / 'mlflow.db'}"


def workspace_root(root: str | os.PathLike) -> Path:
    """The repository the user works in. A queued or ``--temp`` DVC experiment runs in a temporary copy inside
    it (``<repo>/.dvc/tmp/exps/...``) that DVC deletes afterwards: its runs must land in ``<repo>``'s store,
    or they vanish with the copy."""
    path = Path(root).resolve()
    parts = path.parts
    for i in range(len(parts) - 3, 0, -1):
        if parts[i : i + 3] == (".dvc", "tmp", "exps"):
            return Path(*parts[:i])
    return path


def content_key(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


def git_commit(root: str | os.PathLike = ".") -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@dataclass
class ChildRun:
    """What one nested run records."""

    name: str
    params: dict
    metrics: dict[str, float]
    artifacts: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)


def _find(client, experiment_id: str, key: str, expected_metrics: Iterable[str] = ()):
    """The run with content ``key`` that FINISHED and holds every expected metric, or None. Any other run
    with that key (killed mid-logging and left RUNNING, or missing metrics) is marked FAILED, so it is
    neither reused nor mistaken for a result later; the caller then logs the run again."""
    runs = client.search_runs(
        [experiment_id],
        filter_string=f"tags.`{KEY_TAG}` = '{key}'",
        max_results=100,
        order_by=["attributes.start_time ASC"],
    )
    expected, good = set(expected_metrics), None
    for run in runs:
        complete = run.info.status == "FINISHED" and expected <= set(run.data.metrics)
        if complete and good is None:
            good = run
        elif not complete and run.info.status != "FAILED":
            client.set_terminated(run.info.run_id, status="FAILED")
    return good


def log_runs(
    uri: str,
    experiment: str,
    parent_name: str,
    parent_params: dict,
    children: Iterable[ChildRun],
    parent_artifacts: Iterable[str | tuple[str, str | None]] = (),
    parent_tags: dict | None = None,
) -> dict | None:
    """Log a parent run and its children; returns ``{"parent": id, "children": {name: id}}``, or None (with one
    warning) when the tracking store is unavailable. Existing runs with the same content key are reused. A parent
    artifact is a path (logged at the run's artifact root) or ``(path, folder)``: two files of one name (the two
    ``dvc.lock``) must not overwrite each other."""
    children = list(children)
    try:
        mlflow, client, exp_id = _client(uri, experiment)
        # the commit is recorded but not part of the key: identical inputs and results are the same run
        child_keys = [content_key(c.name, _without_commit(c.params), c.metrics) for c in children]
        parent_key = content_key(parent_name, _without_commit(parent_params), child_keys)
        out = {"parent": None, "children": {}}
        existing = _find(client, exp_id, parent_key)
        if existing is not None:
            out["parent"] = existing.info.run_id
        else:
            # the key's prefix tells apart runs of the same pipeline with different parameters or results
            with mlflow.start_run(
                experiment_id=exp_id,
                run_name=f"{parent_name} {parent_key[:8]}",
                tags={KEY_TAG: parent_key, **_commit_tags(parent_params), **(parent_tags or {})},
            ) as parent:
                mlflow.log_params(_flat(_without_commit(parent_params)))
                for artifact in parent_artifacts:
                    path, folder = (artifact, None) if isinstance(artifact, str) else artifact
                    if os.path.exists(path):
                        mlflow.log_artifact(path, folder)
                out["parent"] = parent.info.run_id
        for child, key in zip(children, child_keys):
            out["children"][child.name] = _log_child_run(mlflow, client, exp_id, out["parent"], child, key)
        return out
    except Exception as exc:  # any store failure: warn once, never fail the pipeline
        _warn(uri, exc)
        return None


def _without_commit(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != "git_commit"}


def _commit_tags(params: dict) -> dict[str, str]:
    """The ``git_commit`` a caller passes among the params becomes MLflow's source-commit tag."""
    return {COMMIT_TAG: str(params["git_commit"])} if "git_commit" in params else {}


def _flat(params: dict, prefix: str = "") -> dict[str, str]:
    """Nested params as ``a.b`` keys with string values (MLflow params are strings, max 6000 chars)."""
    out = {}
    for k, v in params.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        else:
            out[key] = (json.dumps(v) if isinstance(v, (list, tuple)) else str(v))[:6000]
    return out


def metrics_of(task: str, doc: dict) -> dict[str, float]:
    """All non-null metrics of a result document as MLflow metrics ``task/name``."""
    return {mlflow_key(task, k): v for k, v in doc["metrics"].items() if v is not None}


def _client(uri: str, experiment: str):
    """mlflow, a client and the experiment id; an unreachable server fails fast instead of retrying."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    import mlflow
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    # a model-development experiment: the MLflow UI then opens on the runs table, not the GenAI overview
    exp_id = (
        exp.experiment_id
        if exp
        else client.create_experiment(experiment, tags={"mlflow.experimentKind": "custom_model_development"})
    )
    return mlflow, client, exp_id


# The MLflow UI's shared view (issue 49): ``#/experiments/<id>/runs?viewStateShareKey=sggeval`` reads the UI state
# from this experiment tag, as plain JSON (MLflow 3's "Views" share link): runs grouped by task, every group open,
# the summary metrics as columns, sorted by the first, so comparing methods on a task takes no click
# (scripts/mlflow_url.py links it).
VIEW_KEY = "sggeval"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"


def share_view(uri: str, experiment: str, columns: list[str]) -> None:
    """Store the shared view of the runs table: grouped by the ``sgg_eval.task`` tag, ``columns`` (MLflow metric
    keys) shown. Warns once and goes on when the store is unavailable."""
    try:
        _, client, exp_id = _client(uri, experiment)
        state = {
            "selectedColumns": [f"metrics.`{key}`" for key in columns],
            "orderByKey": f"metrics.`{columns[0]}`",  # the first task's group first, its best run on top
            "orderByAsc": False,
            "groupBy": {
                "aggregateFunction": "average",
                "groupByKeys": [{"mode": "tag", "groupByData": "sgg_eval.task"}],
            },
        }
        client.set_experiment_tag(exp_id, VIEW_TAG, json.dumps(state))
    except Exception as exc:  # any store failure: warn once, never fail the pipeline
        _warn(uri, exc)


def _warn(uri: str, exc: Exception) -> None:
    print(
        f"warning: MLflow tracking skipped, store {uri} unavailable ({type(exc).__name__}: {exc}); once it is "
        "back, `dvc repro -f track` logs these results",
        file=sys.stderr,
    )


def start_parent(uri: str, experiment: str, name: str, params: dict, tags: dict) -> str | None:
    """Create a (finished) parent run for a sweep; its children attach to it by id. None if unavailable."""
    try:
        mlflow, _, exp_id = _client(uri, experiment)
        with mlflow.start_run(experiment_id=exp_id, run_name=name, tags={**_commit_tags(params), **tags}) as run:
            mlflow.log_params(_flat(_without_commit(params)))
            return run.info.run_id
    except Exception as exc:
        _warn(uri, exc)
        return None


def log_child(uri: str, experiment: str, parent: str | None, child: ChildRun) -> str | None:
    """One nested run under ``parent`` (or a top-level run when there is none)."""
    try:
        mlflow, client, exp_id = _client(uri, experiment)
        key = content_key(child.name, _without_commit(child.params), child.metrics, parent)
        return _log_child_run(mlflow, client, exp_id, parent, child, key)
    except Exception as exc:
        _warn(uri, exc)
        return None


def _log_child_run(mlflow, client, exp_id: str, parent: str | None, child: ChildRun, key: str) -> str:
    """The run with content ``key`` if it exists, else a new (nested, when ``parent``) run for ``child``."""
    found = _find(client, exp_id, key, child.metrics)
    if found is not None:
        return found.info.run_id
    with mlflow.start_run(
        experiment_id=exp_id,
        run_name=child.name,
        nested=parent is not None,
        parent_run_id=parent,
        tags={KEY_TAG: key, **_commit_tags(child.params), **child.tags},
    ) as run:
        mlflow.log_params(_flat(_without_commit(child.params)))
        mlflow.log_metrics({k: float(v) for k, v in sorted(child.metrics.items())})
        for path in child.artifacts:
            if os.path.exists(path):
                mlflow.log_artifact(path)
        return run.info.run_id


def log_artifacts(uri: str, run_id: str, paths: Iterable[str]) -> None:
    try:
        _, client, _ = _client(uri, "sgg-eval")
        for p in paths:
            client.log_artifact(run_id, p)
    except Exception as exc:
        _warn(uri, exc)


def mark_failed(uri: str, run_id: str) -> None:
    """Mark a run FAILED (a sweep parent none of whose jobs logged a result), so it is not read as a result."""
    try:
        _, client, _ = _client(uri, "sgg-eval")
        client.set_terminated(run_id, status="FAILED")
    except Exception as exc:
        _warn(uri, exc)
