"""The edge between ``params.yaml`` (plain dicts, generated from conf/) and the library, for the DVC stages
up to ``reduce`` (the stages after it, tables, figures and tracking, are in ``pipeline.report_stages``).

Where files live (all under ``paths.predictions``):
- ``simulated/<model>/<task>.h5``: SIMULATED model outputs (models with ``source: simulated``);
- a real model's file is ``models.<name>.files.<task>`` (eval_results.pytorch or an sgg-eval store);
- ``pko/<model>/<task>.h5``: the model + PKO (entry ``<model>_pko``); ``pko_only/<task>.h5``: PKO-only on
  ``pko.pko_only_from`` (entry ``pko_only``).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict

from sgg_eval.atomic import write_json
from sgg_eval.defaults import TAU
from sgg_eval.errors import InputError
from sgg_eval.metrics.names import metric_name
from sgg_eval.pipeline.entries import Entry, parse_entry
from sgg_eval.pko import PKOParams, blind_replacement, pko_predictions
from sgg_eval.simulate.models import Backbone, MethodParams, simulate_models
from sgg_eval.sources import PredictionSource, open_predictions
from sgg_eval.stats import TrainingStats, read_stats


def gt_split(params: dict) -> str:
    return f"{params['paths']['splits']}/test.h5"


def stats_file(params: dict) -> str:
    return f"{params['paths']['stats']}/stats.h5"


def _entry(params: dict, entry: str) -> Entry:
    return parse_entry(entry, params["models"], params["pko"]["pko_only_from"])


def prediction_file(params: dict, model: str, task: str) -> str:
    """The prediction file of ``model`` for ``task``: simulated, real, ``<model>_pko`` or ``pko_only``."""
    root = params["paths"]["predictions"]
    kind, base = _entry(params, model)
    if kind == "pko_only":
        return f"{root}/pko_only/{task}.h5"
    if kind == "pko":
        return f"{root}/pko/{base}/{task}.h5"
    cfg = params["models"][model]
    if cfg["source"] == "simulated":
        return f"{root}/simulated/{model}/{task}.h5"
    files = cfg.get("files") or {}
    if task not in files:
        raise InputError(f"model {model} has no prediction file for task {task}", field=f"models.{model}.files")
    return files[task]


def open_model(params: dict, model: str, task: str, stats: TrainingStats) -> PredictionSource:
    return open_predictions(prediction_file(params, model, task), gt=gt_split(params), vocab=stats.vocab)


def run_simulate(params: dict) -> list[str]:
    """Write the outputs of every simulated model for every task, and their list (``index.json``); returns
    the files written. The folder exists even when no model is simulated (a real dataset): it is the stage's
    declared output."""
    sim = params["simulation"]
    os.makedirs(f"{params['paths']['predictions']}/simulated", exist_ok=True)
    stats = read_stats(stats_file(params))
    by_backbone: dict[str, dict[str, str]] = defaultdict(dict)
    for name, cfg in params["models"].items():
        if cfg["source"] == "simulated":
            by_backbone[cfg["sim_backbone"]][cfg["sim_method"]] = name
    written = []
    method_params = MethodParams(**sim["methods"])
    tasks = params["evaluation"]["tasks"]
    step, start = 0, time.perf_counter()
    for backbone, methods in sorted(by_backbone.items()):
        bb = Backbone(backbone, **sim["backbones"][backbone])
        for task in tasks:
            # a line per step: the stage takes minutes at the default scale, and DVC shows lines, not bars
            step += 1
            print(
                f"simulate: {backbone} {task}, {len(methods)} models (step {step}/{len(by_backbone) * len(tasks)}"
                f", {time.perf_counter() - start:.0f} s so far)",
                flush=True,
            )
            outputs = {m: prediction_file(params, name, task) for m, name in sorted(methods.items())}
            for path in outputs.values():
                os.makedirs(os.path.dirname(path), exist_ok=True)
            simulate_models(
                gt_split(params),
                stats,
                bb,
                task,
                outputs,
                seed=int(sim["seed"]),
                score_kind=sim["score_kind"],
                score_dtype=sim["score_dtype"],
                val_path=f"{params['paths']['splits']}/val.h5",
                methods=method_params,
            )
            written.extend(outputs.values())
    # the stage's folder always holds this list, so a real dataset's run (no simulated model) leaves no empty
    # output folder, which DVC warns about once per stage that depends on it
    folder = f"{params['paths']['predictions']}/simulated"
    write_json(
        os.path.join(folder, "index.json"),
        {"simulated_prediction_stores": sorted(os.path.relpath(w, folder) for w in written)},
    )
    return written


def pko_params(params: dict) -> PKOParams:
    p = params["pko"]
    return PKOParams(lam=float(p["lam"]), eps=float(p["eps"]), prob_clip=float(p["prob_clip"]))


def run_apply_pko(params: dict, model: str, task: str, *, only: bool = False) -> str:
    """``<model>_pko`` (or PKO-only on ``pko.pko_only_from``) for ``task``; returns the file written."""
    src_model = params["pko"]["pko_only_from"] if only else model
    name = "pko_only" if only else f"{model}_pko"
    out = prediction_file(params, name, task)
    stats = read_stats(stats_file(params))  # read once per stage
    source = open_model(params, src_model, task, stats)
    pko_predictions(
        source,
        task,
        stats,
        out,
        pko_params(params),
        only=only,
        model=name,
        score_dtype=params["simulation"]["score_dtype"],
    )
    return out


def run_blind_replace(params: dict, out_json: str) -> list[dict]:
    """Paper Table 1 for ``pko.blind_model`` on ``pko.blind_task``; writes the rows as JSON."""
    p = params["pko"]
    stats = read_stats(stats_file(params))
    source = open_model(params, p["blind_model"], p["blind_task"], stats)
    rows = blind_replacement(source, stats, p["blind_task"], max_n=int(p["blind_max_n"]))
    write_json(
        out_json, {"model": p["blind_model"], "task": p["blind_task"], "simulated": source.simulated, "rows": rows}
    )
    return rows


def metrics_file(params: dict, entry: str, task: str) -> str:
    return f"{params['paths']['results']}/metrics/{entry}/{task}.json"


def per_predicate_file(params: dict, entry: str, task: str) -> str:
    return f"{params['paths']['results']}/per_predicate/{entry}/{task}.csv"


def entry_info(params: dict, entry: str) -> dict:
    """Backbone, method and simulated flag of an evaluation entry, for tables and tracking."""
    kind, base = _entry(params, entry)
    if kind == "pko_only":
        return {"backbone": "-", "method": "PKO-only", "base_model": base}
    cfg = params["models"][base]
    return {"backbone": cfg["backbone"], "method": "PKO" if kind == "pko" else cfg["method"], "base_model": base}


# The evaluate stage ranks at this τ; the reduce stage turns its documents into the configured τ
# (engine.with_tau, exact), so a τ change reruns the cheap reduction only, never the ranking.
RANKED_TAU = TAU


def ranked_file(params: dict, entry: str, task: str) -> str:
    return f"{params['paths']['results']}/ranked/{entry}/{task}.json"


def summary_file(params: dict) -> str:
    return f"{params['paths']['results']}/summary.json"


def by_model_file(params: dict) -> str:
    return f"{params['paths']['results']}/per_predicate_by_model.csv"


def summary_entry(params: dict) -> str:
    """``evaluation.summary_entry``, whose numbers DVC's summary holds (null: the first entry)."""
    return params["evaluation"].get("summary_entry") or params["evaluation"]["entries"][0]


def compared_entries(params: dict) -> list[str]:
    """The entries the plots page compares predicate by predicate: the figures' biased and debiased models and
    the summary entry, each once and only if evaluated."""
    wanted = (params["figures"]["biased_model"], params["figures"]["debiased_model"], summary_entry(params))
    return [entry for entry in dict.fromkeys(wanted) if entry in params["evaluation"]["entries"]]


def run_evaluate(params: dict, entry: str, task: str) -> dict:
    """Rank and count one entry on one task (the expensive part), at ``RANKED_TAU``; writes the document."""
    from sgg_eval.evaluate import run_evaluation
    from sgg_eval.metrics.blocks import default_jobs

    m = params["metrics"]
    zeroshot = None if m["zeroshot"] == "computed" else m["zeroshot"]
    result = run_evaluation(
        prediction_file(params, entry, task),
        task,
        gt=gt_split(params),
        protocol=m["protocol"],
        stats=stats_file(params),
        zeroshot=zeroshot,
        tau=RANKED_TAU,
        iou_threshold=float(m["iou_threshold"]),
        progress=True,
        jobs=default_jobs(),
    )
    write_json(ranked_file(params, entry, task), result)
    return result


SUMMARY_METRICS = tuple(metric_name(f, k) for f, k in (("R", 50), ("mR", 50), ("IMR", 20), ("wIMR", 20)))


def run_reduce(params: dict) -> dict[tuple[str, str], dict]:
    """Every ranked document at the configured τ with its row labels: the metrics JSON and per-predicate CSV
    of each entry × task, and a small summary (the DVC metrics file: ``dvc exp show`` stays readable)."""
    from sgg_eval.metrics.engine import with_tau
    from sgg_eval.report.per_predicate import by_model_rows, write_per_predicate_csv, write_rows_csv

    stats = read_stats(stats_file(params))
    tau = float(params["metrics"]["tau"])
    out = {}
    for entry in params["evaluation"]["entries"]:
        info = entry_info(params, entry)
        base = params["models"][info["base_model"]]
        for task in params["evaluation"]["tasks"]:
            with open(ranked_file(params, entry, task), encoding="utf-8") as fh:
                doc = with_tau(json.load(fh), stats.vocab.predicate_classes, stats.num_pairs, tau)
            doc["entry"] = {
                "name": entry,
                "backbone": info["backbone"],
                "method": info["method"],
                "dataset": params["dataset"]["name"],
                "simulated": params["dataset"]["kind"] == "simulated" or base["source"] == "simulated",
            }
            write_json(metrics_file(params, entry, task), doc)
            write_per_predicate_csv(per_predicate_file(params, entry, task), doc, stats)
            out[entry, task] = doc
    # numbers only: the entry and τ are params (evaluation.summary_entry, metrics.tau), shown beside them
    headline = summary_entry(params)
    write_json(
        summary_file(params),
        {
            task: {name: out[headline, task]["metrics"][name] for name in SUMMARY_METRICS}
            for task in params["evaluation"]["tasks"]
        },
    )
    labels = {
        entry: model_label(out[entry, params["evaluation"]["tasks"][0]]["entry"]) for entry in compared_entries(params)
    }
    if len(set(labels.values())) < len(labels):  # two models of one backbone and method: their entry names
        labels = {entry: entry for entry in labels}
    tasks = {task: params["tasks"][task]["label"] for task in params["evaluation"]["tasks"]}
    write_rows_csv(by_model_file(params), by_model_rows(out, labels, tasks, stats))
    return out


def model_label(entry: dict) -> str:
    """How figures and the plots page name an evaluated entry: its backbone and method."""
    return f"{entry['backbone']} {entry['method']}".strip("- ")


def load_results(params: dict) -> dict[tuple[str, str], dict]:
    """Every evaluation entry × task metrics document that exists."""
    import json

    out = {}
    for entry in params["evaluation"]["entries"]:
        for task in params["evaluation"]["tasks"]:
            path = metrics_file(params, entry, task)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    out[entry, task] = json.load(fh)
    return out
