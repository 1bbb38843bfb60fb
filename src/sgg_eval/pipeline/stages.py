"""The edge between ``params.yaml`` (plain dicts, generated from conf/) and the library, for the DVC stages.

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
from pathlib import Path

from sgg_eval.atomic import write_json
from sgg_eval.pipeline.entries import Entry, method_family, parse_entry
from sgg_eval.errors import InputError
from sgg_eval.simulate.models import Backbone, MethodParams, simulate_models
from sgg_eval.pko import PKOParams, blind_replacement, pko_predictions
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
            print(f"simulate: {backbone} {task}, {len(methods)} models (step {step}/{len(by_backbone) * len(tasks)}"
                  f", {time.perf_counter() - start:.0f} s so far)", flush=True)
            outputs = {m: prediction_file(params, name, task) for m, name in sorted(methods.items())}
            for path in outputs.values():
                os.makedirs(os.path.dirname(path), exist_ok=True)
            simulate_models(gt_split(params), stats, bb, task, outputs, seed=int(sim["seed"]),
                            score_kind=sim["score_kind"], score_dtype=sim["score_dtype"],
                            val_path=f"{params['paths']['splits']}/val.h5", methods=method_params)
            written.extend(outputs.values())
    # the stage's folder always holds this list, so a real dataset's run (no simulated model) leaves no empty
    # output folder, which DVC warns about once per stage that depends on it
    folder = f"{params['paths']['predictions']}/simulated"
    write_json(os.path.join(folder, "index.json"),
               {"simulated_prediction_stores": sorted(os.path.relpath(w, folder) for w in written)})
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
    pko_predictions(source, task, stats, out, pko_params(params), only=only, model=name,
                    score_dtype=params["simulation"]["score_dtype"])
    return out


def run_blind_replace(params: dict, out_json: str) -> list[dict]:
    """Paper Table 1 for ``pko.blind_model`` on ``pko.blind_task``; writes the rows as JSON."""
    p = params["pko"]
    stats = read_stats(stats_file(params))
    source = open_model(params, p["blind_model"], p["blind_task"], stats)
    rows = blind_replacement(source, stats, p["blind_task"], max_n=int(p["blind_max_n"]))
    write_json(out_json, {"model": p["blind_model"], "task": p["blind_task"], "simulated": source.simulated,
                          "rows": rows})
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
RANKED_TAU = 0.5


def ranked_file(params: dict, entry: str, task: str) -> str:
    return f"{params['paths']['results']}/ranked/{entry}/{task}.json"


def summary_file(params: dict) -> str:
    return f"{params['paths']['results']}/summary.json"


def by_model_file(params: dict) -> str:
    return f"{params['paths']['results']}/per_predicate_by_model.csv"


def compared_entries(params: dict) -> list[str]:
    """The entries the plots page compares predicate by predicate: the figures' biased and debiased models and
    the summary entry, each once and only if evaluated."""
    e = params["evaluation"]
    wanted = (params["figures"]["biased_model"], params["figures"]["debiased_model"],
              e.get("summary_entry") or e["entries"][0])
    return [entry for entry in dict.fromkeys(wanted) if entry in e["entries"]]


def run_evaluate(params: dict, entry: str, task: str) -> dict:
    """Rank and count one entry on one task (the expensive part), at ``RANKED_TAU``; writes the document."""
    from sgg_eval.evaluate import run_evaluation
    from sgg_eval.metrics.blocks import default_jobs

    m = params["metrics"]
    zeroshot = None if m["zeroshot"] == "computed" else m["zeroshot"]
    result = run_evaluation(prediction_file(params, entry, task), task, gt=gt_split(params),
                            protocol=m["protocol"], stats=stats_file(params), zeroshot=zeroshot, tau=RANKED_TAU,
                            iou_threshold=float(m["iou_threshold"]),
                            progress=True, jobs=default_jobs())
    write_json(ranked_file(params, entry, task), result)
    return result


SUMMARY_METRICS = ("R@50", "mR@50", "IMR@20", "wIMR@20")


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
            doc["entry"] = {"name": entry, "backbone": info["backbone"], "method": info["method"],
                            "dataset": params["dataset"]["name"],
                            "simulated": params["dataset"]["kind"] == "simulated" or base["source"] == "simulated"}
            write_json(metrics_file(params, entry, task), doc)
            write_per_predicate_csv(per_predicate_file(params, entry, task), doc, stats)
            out[entry, task] = doc
    # numbers only: the entry and τ are params (evaluation.summary_entry, metrics.tau), shown beside them
    headline = params["evaluation"].get("summary_entry") or params["evaluation"]["entries"][0]
    write_json(summary_file(params), {task: {name: out[headline, task]["metrics"][name] for name in SUMMARY_METRICS}
                                      for task in params["evaluation"]["tasks"]})
    labels = {entry: model_label(out[entry, params["evaluation"]["tasks"][0]]["entry"])
              for entry in compared_entries(params)}
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


def run_tables(params: dict, folder: str) -> list[str]:
    """Write Tables 1-3, the full table and (on real VG150) published vs reproduced into ``folder``."""
    import json

    from sgg_eval.report.tables import paper_tables, published_vs_reproduced

    results = load_results(params)
    blind_path = f"{params['paths']['results']}/blind_replacement.json"
    blind = json.load(open(blind_path, encoding="utf-8")) if os.path.exists(blind_path) else None
    simulated = any(doc["entry"]["simulated"] for doc in results.values())
    entries = list(params["evaluation"]["entries"])
    tau = float(params["metrics"]["tau"])
    labels = {task: cfg["label"] for task, cfg in params["tasks"].items()}
    tables = paper_tables(results, entries, blind, simulated, tau, labels)
    tables.append(published_vs_reproduced(results, entries, simulated, tau))
    return [p for t in tables for p in t.write(folder)]


def wimr_curve(result: dict, predicates: tuple[str, ...], num_pairs, taus, k: int) -> list[float]:
    """wIMR@k for each τ from a metrics document (``engine.with_tau``: the evaluator's formula, exact)."""
    from sgg_eval.metrics.engine import with_tau

    return [with_tau(result, predicates, num_pairs, t)["metrics"][f"wIMR@{k}"] for t in taus]


def run_figures(params: dict, folder: str) -> list[str]:
    """Figures 2-5 and the wIMR-τ curve into ``folder`` (PNG and SVG)."""
    import numpy as np

    from sgg_eval.data.store import SplitStore
    from sgg_eval.metrics.candidates import softmax
    from sgg_eval.metrics.reduce import wimr_weights
    from sgg_eval.pko import to_logits
    from sgg_eval.report import figures as fg

    stats = read_stats(stats_file(params))
    names = list(stats.vocab.predicate_classes)
    results = load_results(params)
    simulated = any(doc["entry"]["simulated"] for doc in results.values())
    f = params["figures"]
    written = []

    panels = []
    for title, model, transform in (("biased logits", f["biased_model"], "logits"),
                                    ("debiased logits", f["debiased_model"], "logits"),
                                    ("debiased softmax", f["debiased_model"], "softmax")):
        unit = "mean softmax probability" if transform == "softmax" else "mean logit"
        source = open_model(params, model, "predcls", stats)

        def logits_of(x, kind=source.score_kind, transform=transform):
            z = to_logits(x, kind, 1e-12)
            return softmax(z).astype(np.float64) if transform == "softmax" else z

        m, _ = fg.mean_score_vectors(source.pairs(), len(names), logits_of)
        panels.append((f"{title} ({model})", unit, m))
    written += fg.score_heatmaps(panels, names, folder, simulated)
    written += fg.composable_pairs(names, stats.num_pairs[1:], folder, simulated)

    doc = results[f["per_predicate_model"], "predcls"]
    mr50 = np.array([doc["per_predicate"]["mR@50"][n] for n in names])
    imr20 = np.array([doc["per_predicate"]["IMR@20"][n] for n in names])
    written += fg.mr_vs_imr(names, mr50, imr20, stats.predicate_counts[1:], f["per_predicate_model"], folder,
                            simulated)

    gt_counts = np.zeros(len(names))
    with SplitStore(gt_split(params)) as split:
        for gt in split:
            gt_counts += np.bincount(gt.rels[:, 2] - 1, minlength=len(names))
    tau = float(params["metrics"]["tau"])
    written += fg.predicate_weights(names, gt_counts, stats.predicate_counts[1:], wimr_weights(stats.num_pairs, tau),
                                    tau, folder, simulated)

    k = int(params["metrics"]["imr_k"])
    taus = np.round(np.linspace(0, 1, 11), 2)
    curves = {model_label(doc["entry"]): (taus, wimr_curve(doc, stats.vocab.predicate_classes, stats.num_pairs,
                                                           taus, k))
              for (entry, task), doc in results.items() if task == "predcls"}
    written += fg.wimr_vs_tau(curves, k, folder, simulated)
    return written


def run_track(params: dict, out_json: str, root: str = ".") -> dict | None:
    """Log the pipeline to MLflow: a parent run and one nested run per evaluation entry × task."""
    from sgg_eval.pipeline.tracking import ChildRun, default_uri, git_commit, log_runs, metrics_of

    t = params["tracking"]
    results = load_results(params)
    uri = t["uri"] or default_uri(root)
    common = {"dataset": params["dataset"]["name"], "protocol": params["metrics"]["protocol"],
              "tau": params["metrics"]["tau"], "iou_threshold": params["metrics"]["iou_threshold"],
              "recall_ks": [20, 50, 100], "imr_ks": [10, 20, 50],
              "triplet_ks": [5, 10, 15, 20, 50], "pko": {"lam": params["pko"]["lam"], "eps": params["pko"]["eps"]},
              "git_commit": git_commit(root)}
    children = []
    for (entry, task), doc in sorted(results.items()):
        info = doc["entry"]
        children.append(ChildRun(
            name=f"{entry}/{task}",
            params={**common, "model": entry, "task": task, "backbone": info["backbone"], "method": info["method"],
                    "simulated": info["simulated"]},
            metrics=metrics_of(task, doc),
            artifacts=[metrics_file(params, entry, task), per_predicate_file(params, entry, task)],
            tags={"sgg_eval.task": task, "sgg_eval.model": entry,
                  "sgg_eval.method_family": method_family(info["method"])}))
    reports = params["paths"]["reports"]
    figures = sorted(str(p) for p in Path(reports, "figures").glob("*.png")) if Path(reports, "figures").exists() else []
    tables = sorted(str(p) for p in Path(reports, "tables").glob("*.md")) if Path(reports, "tables").exists() else []
    # the inputs' hashes (dvc.lock) and the configuration (the knobs, and the models and simulation settings
    # they name) travel as files, not as a truncated parameter
    inputs = [os.path.join(root, name) for name in ("dvc.lock", "params.yaml", "data/params/catalogue.json")]
    ids = log_runs(uri, t["experiment"], f"pipeline {params['dataset']['name']}", common, children,
                   parent_artifacts=figures + tables + inputs, parent_tags={"sgg_eval.kind": "pipeline"})
    # no run ids here: they are random, and this file must be the same on every machine (dvc.lock)
    write_json(out_json, {"tracking_uri_kind": uri.split(":", 1)[0], "experiment": t["experiment"],
                          "logged": ids is not None, "runs": sorted(c.name for c in children)})
    return ids
