"""Hydra sweeps over metric hyperparameters (wIMR's τ, the IMR K) on saved evaluation results.

A job recomputes wIMR@K(τ) for every entry × task (and every PSG entry × protocol) from the per-predicate
IMR@K vectors of the metrics JSON and n_c of the training statistics, exactly as the evaluator does, so
nothing else is recomputed.
Each job is a nested MLflow run under one parent run per sweep; the parent is created by
:class:`SweepReport` before the jobs start (its id is left in the sweep folder, so launchers that run jobs
in other processes, such as joblib or submitit, find it) and receives the aggregated τ-sweep table and plot.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from sgg_eval.core.defaults import IMR_KS
from sgg_eval.core.errors import InputError
from sgg_eval.core.tasks import PREDCLS
from sgg_eval.io.atomic import write_json
from sgg_eval.metrics.document import merged
from sgg_eval.metrics.names import metric_name, mlflow_key
from sgg_eval.pipeline.catalogue import resolve

PARENT_FILE = "mlflow_parent_run.json"
RESULT_FILE = "sweep_job.json"


def sweep_rows(params: dict, tau: float, k: int) -> list[dict]:
    """wIMR@k at τ (and IMR@k) for every evaluated entry × task."""
    from sgg_eval.data.stats import read_stats
    from sgg_eval.pipeline.eval_stages import load_results
    from sgg_eval.pipeline.paths import stats_file

    if k not in IMR_KS:
        raise InputError(f"metrics.imr_k={k}: the saved results hold IMR@K for K in {IMR_KS}")
    results = load_results(params)
    if not results:
        raise InputError("no evaluation results: run the pipeline first (make repro)", path=params["paths"]["results"])
    stats = read_stats(stats_file(params))
    rows = [
        _row(entry, task, doc["entry"]["backbone"], doc["entry"]["method"], doc, stats, tau, k)
        for (entry, task), doc in sorted(results.items())
    ]
    return rows + psg_sweep_rows(params, tau, k)


def _row(entry: str, task: str, backbone: str, method: str, doc: dict, stats, tau: float, k: int) -> dict:
    """One sweep row: wIMR@k at τ from ``doc``'s per-predicate IMR@k and n_c of ``stats``, and IMR@k."""
    from sgg_eval.pipeline.figure_stages import wimr_curve

    wimr = wimr_curve(doc, stats.vocab.predicate_classes, stats.num_pairs, [tau], k)[0]
    return {
        "entry": entry,
        "task": task,
        "backbone": backbone,
        "method": method,
        "tau": tau,
        "k": k,
        metric_name("wIMR", k): wimr,
        metric_name("IMR", k): doc["metrics"][metric_name("IMR", k)],
    }


def psg_sweep_rows(params: dict, tau: float, k: int) -> list[dict]:
    """The same for every PSG entry × protocol (task ``panoptic-<protocol>``), with PSG's training n_c."""
    from sgg_eval.data.stats import read_stats
    from sgg_eval.pipeline.psg_stages import PANOPTIC, load_psg_results, psg_stats_file

    results = load_psg_results(params)
    if not results:
        return []
    stats = read_stats(psg_stats_file(params))
    return [
        _row(entry, f"{PANOPTIC}-{protocol}", "", doc["entry"]["method"], merged(result), stats, tau, k)
        for entry, doc in results.items()
        for protocol, result in sorted(doc["protocols"].items())
    ]


def _uri(params: dict) -> str:
    from sgg_eval.pipeline.tracking import default_uri

    return params["tracking"]["uri"] or default_uri(".")


def run_job(knobs: dict, job_dir: str, sweep_dir: str | None, conf_dir: str = "conf") -> list[dict]:
    """One sweep job (``knobs``: the composed config): compute its rows, write them into ``job_dir``, log a
    nested MLflow run."""
    from sgg_eval.pipeline.params_check import check_params
    from sgg_eval.pipeline.tracking import ChildRun, git_commit, log_child

    params = resolve(knobs, conf_dir)
    check_params(params)  # a sweep value out of range (tau=2) is refused before anything is written
    tau, k = float(params["metrics"]["tau"]), int(params["metrics"]["imr_k"])
    rows = sweep_rows(params, tau, k)
    simulated = params["dataset"]["kind"] == "simulated"
    write_json(os.path.join(job_dir, RESULT_FILE), {"tau": tau, "k": k, "rows": rows, "simulated": simulated})
    parent = None
    if sweep_dir and os.path.exists(os.path.join(sweep_dir, PARENT_FILE)):
        parent = json.loads(Path(sweep_dir, PARENT_FILE).read_text())["run_id"]
    if params["tracking"]["enabled"]:
        wimr = metric_name("wIMR", k)
        metrics = {mlflow_key(f"{r['task']}/{r['entry']}", wimr): r[wimr] for r in rows}
        child = ChildRun(
            f"tau={tau:g} k={k}",
            {
                "tau": tau,
                "imr_k": k,
                "dataset": params["dataset"]["name"],
                "simulated": simulated,
                "git_commit": git_commit(),
            },
            metrics,
            [os.path.join(job_dir, RESULT_FILE)],
            {"sgg_eval.kind": "sweep_job"},
        )
        log_child(_uri(params), params["tracking"]["experiment"], parent, child)
    return rows


def collect(sweep_dir: str) -> list[dict]:
    rows = []
    for path in sorted(Path(sweep_dir).rglob(RESULT_FILE)):
        rows.extend(json.loads(path.read_text())["rows"])
    return rows


def write_report(rows: list[dict], folder: str, simulated: bool) -> list[str]:
    """τ-sweep table (Markdown, CSV) and plot (wIMR against τ per method, one line per entry, PredCls)."""
    from sgg_eval.report import figures as fg

    written = []
    for k in sorted({r["k"] for r in rows}):
        sub = [r for r in rows if r["k"] == k]
        written += _sweep_table(sub, k, simulated).write(folder)
        curves = _predcls_curves(sub, metric_name("wIMR", k))
        if curves:
            written += fg.wimr_vs_tau(curves, k, folder, simulated, name=f"tau_sweep_wIMR_at_{k}")
    return written


def _sweep_table(sub: list[dict], k: int, simulated: bool):
    """wIMR@k per (task, entry) and τ."""
    from sgg_eval.report.tables import Row, Table

    taus = sorted({r["tau"] for r in sub})
    table_rows = []
    for entry, task in sorted({(r["entry"], r["task"]) for r in sub}, key=lambda x: (x[1], x[0])):
        by_tau = {r["tau"]: r[metric_name("wIMR", k)] for r in sub if (r["entry"], r["task"]) == (entry, task)}
        table_rows.append(Row((task, entry), {f"tau={t:g}": by_tau.get(t) for t in taus}))
    tag = " SIMULATED data: not results on Visual Genome." if simulated else ""
    return Table(
        f"tau_sweep_wIMR_at_{k}",
        f"{metric_name('wIMR', k)} for each tau (sweep).{tag}",
        ("Task", "Entry"),
        [f"tau={t:g}" for t in taus],
        table_rows,
        mark_best=False,
    )


def _predcls_curves(sub: list[dict], metric: str) -> dict:
    """Per PredCls entry, ``(τ values, the metric at each)`` in τ order."""
    predcls = [r for r in sub if r["task"] == PREDCLS.name]
    curves = {}
    for entry in sorted({r["entry"] for r in predcls}):
        pts = sorted((r["tau"], r[metric]) for r in predcls if r["entry"] == entry)
        curves[entry] = (np.array([p[0] for p in pts]), np.array([p[1] for p in pts]))
    return curves


try:  # Hydra is a dependency of the pipeline, not of the metric library
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover
    Callback = object


class SweepReport(Callback):
    """Creates the parent MLflow run before a sweep, aggregates the jobs' results after it."""

    @staticmethod
    def _params(config) -> dict:
        """The config without Hydra's own node (whose job fields are unset outside a job), resolved."""
        from omegaconf import OmegaConf, open_dict

        config = config.copy()
        with open_dict(config):
            config.pop("hydra", None)
        return resolve(OmegaConf.to_container(config, resolve=True))

    def _start(self, config, folder: str, name: str) -> None:
        from sgg_eval.pipeline.tracking import start_parent

        params = self._params(config)
        os.makedirs(folder, exist_ok=True)
        if params["tracking"]["enabled"]:
            run_id = start_parent(
                _uri(params),
                params["tracking"]["experiment"],
                name,
                {"dataset": params["dataset"]["name"]},
                {"sgg_eval.kind": "sweep"},
            )
            if run_id:
                write_json(os.path.join(folder, PARENT_FILE), {"run_id": run_id})

    def _end(self, config, folder: str) -> None:
        from sgg_eval.pipeline.tracking import log_artifacts, mark_failed

        params = self._params(config)
        rows = collect(folder)
        parent_file = Path(folder, PARENT_FILE)
        if not rows:  # every job failed: the parent run holds nothing and must not look like a result
            if parent_file.exists() and params["tracking"]["enabled"]:
                mark_failed(_uri(params), json.loads(parent_file.read_text())["run_id"])
            return
        simulated = params["dataset"]["kind"] == "simulated"
        written = write_report(rows, folder, simulated)
        print(f"sweep: {len(rows)} rows; table and plot in {folder}")
        if parent_file.exists() and params["tracking"]["enabled"]:
            log_artifacts(_uri(params), json.loads(parent_file.read_text())["run_id"], written)

    def on_multirun_start(self, config, **kwargs) -> None:
        self._start(config, config.hydra.sweep.dir, f"sweep {os.path.basename(config.hydra.sweep.dir)}")

    def on_multirun_end(self, config, **kwargs) -> None:
        self._end(config, config.hydra.sweep.dir)

    def on_run_start(self, config, **kwargs) -> None:
        self._start(config, config.hydra.run.dir, f"sweep {os.path.basename(config.hydra.run.dir)}")

    def on_run_end(self, config, **kwargs) -> None:
        self._end(config, config.hydra.run.dir)
