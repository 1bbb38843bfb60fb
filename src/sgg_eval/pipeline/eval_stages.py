"""The DVC stages that evaluate: ``evaluate`` (ranks one entry on one task, the expensive part) and ``reduce``
(every ranked document at the configured τ: the metrics JSON, per-predicate CSVs and DVC's summary); and
the results as the report stages read them (``pipeline.report_stages``)."""

from __future__ import annotations

import json
import os

from sgg_eval.core.defaults import TAU
from sgg_eval.data.stats import read_stats
from sgg_eval.io.atomic import write_json
from sgg_eval.metrics.document import merged
from sgg_eval.metrics.names import metric_name
from sgg_eval.pipeline.paths import (
    by_model_file,
    entry_of,
    gt_split,
    metrics_file,
    per_image_file,
    per_predicate_file,
    prediction_file,
    ranked_file,
    stats_file,
    summary_file,
)
from sgg_eval.report.published import NO_BACKBONE


def entry_info(params: dict, entry: str) -> dict:
    """Backbone, method and simulated flag of an evaluation entry, for tables and tracking."""
    kind, base = entry_of(params, entry)
    if kind == "pko_only":
        return {"backbone": NO_BACKBONE, "method": "PKO-only", "base_model": base}
    cfg = params["models"][base]
    return {"backbone": cfg["backbone"], "method": "PKO" if kind == "pko" else cfg["method"], "base_model": base}


# The evaluate stage ranks at this τ; the reduce stage turns its documents into the configured τ
# (engine.with_tau, exact), so a τ change reruns the cheap reduction only, never the ranking.
RANKED_TAU = TAU


def summary_entry(params: dict) -> str:
    """``evaluation.summary_entry``, whose numbers DVC's summary holds (null: the first entry)."""
    return params["evaluation"].get("summary_entry") or params["evaluation"]["entries"][0]


def compared_entries(params: dict) -> list[str]:
    """The entries the plots page compares predicate by predicate: the figures' biased and debiased models and
    the summary entry, each once and only if evaluated."""
    wanted = (params["figures"]["biased_model"], params["figures"]["debiased_model"], summary_entry(params))
    return [entry for entry in dict.fromkeys(wanted) if entry in params["evaluation"]["entries"]]


def browser_images(params: dict) -> frozenset:
    """The ids of the results page's images: the first ``site.images`` test images with GT relations."""
    from sgg_eval.data.store import SplitStore

    wanted, ids = int(params["site"]["images"]), []
    with SplitStore(gt_split(params)) as split:
        for lo in range(0, len(split), 256):
            ids += [gt.image_id for gt in split.read(lo, min(len(split), lo + 256)) if len(gt.rels)]
            if len(ids) >= wanted:
                break
    return frozenset(ids[:wanted])


def run_evaluate(params: dict, entry: str) -> dict[str, dict]:
    """Rank and count one entry on every task of ``evaluation.tasks`` (the expensive part), at ``RANKED_TAU``;
    writes each task's document and returns them by task."""
    from sgg_eval.boxes.evaluate import run_evaluation
    from sgg_eval.io.processes import default_jobs

    m = params["metrics"]
    zeroshot = None if m["zeroshot"] == "computed" else m["zeroshot"]
    shown = browser_images(params)  # the same test images for every task
    docs = {}
    for task in params["evaluation"]["tasks"]:
        docs[task] = run_evaluation(
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
            setting=m["openvocab"]["setting"],
            split=m["openvocab"]["split"],
            longtail=m["longtail"],
            per_image=per_image_file(params, entry, task),
            per_image_ids=shown,
        )
        write_json(ranked_file(params, entry, task), docs[task])
    return docs


SUMMARY_METRICS = tuple(metric_name(f, k) for f, k in (("R", 50), ("mR", 50), ("IMR", 20), ("wIMR", 20)))


def is_simulated(params: dict, entry: str) -> bool:
    """Whether ``entry``'s numbers are SIMULATED: its dataset is the simulated benchmark or its model is."""
    base = params["models"][entry_info(params, entry)["base_model"]]
    return params["dataset"]["kind"] == "simulated" or base["source"] == "simulated"


def entry_record(params: dict, entry: str) -> dict:
    """What a metrics document says of the evaluated entry (its ``entry`` field): name, backbone, method, dataset
    and whether its numbers are SIMULATED."""
    info = entry_info(params, entry)
    return {
        "name": entry,
        "backbone": info["backbone"],
        "method": info["method"],
        "dataset": params["dataset"]["name"],
        "simulated": is_simulated(params, entry),
    }


def run_reduce(params: dict) -> dict[tuple[str, str], dict]:
    """Every ranked document at the configured τ with its row labels: the metrics JSON and per-predicate CSV
    of each entry × task, and a small summary (the DVC metrics file: ``dvc exp show`` stays readable)."""
    from sgg_eval.data.stats import frequency_order
    from sgg_eval.metrics.engine import with_tau
    from sgg_eval.report.confusion import confusion_rows
    from sgg_eval.report.per_predicate import by_model_rows, write_per_predicate_csv, write_rows_csv

    stats = read_stats(stats_file(params))
    order = frequency_order(stats.predicate_counts[1:])  # the confusion CSVs' axes, most frequent first
    tau = float(params["metrics"]["tau"])
    out = {}
    for entry in params["evaluation"]["entries"]:
        record = entry_record(params, entry)
        for task in params["evaluation"]["tasks"]:
            with open(ranked_file(params, entry, task), encoding="utf-8") as fh:
                doc = with_tau(json.load(fh), stats.vocab.predicate_classes, stats.num_pairs, tau)
            doc["entry"] = record
            write_json(metrics_file(params, entry, task), doc)
            out[entry, task] = merged(doc)  # a protocol's own numbers and the rest, as the reports read them
            write_per_predicate_csv(per_predicate_file(params, entry, task), out[entry, task], stats)
            if "confusion" in doc:  # beside it: the confusion matrix, most frequent predicates first
                rows = confusion_rows(doc["confusion"], order)
                write_rows_csv(per_predicate_file(params, entry, task).removesuffix(".csv") + ".confusion.csv", rows)
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


def load_results(params: dict, merge: bool = True) -> dict[tuple[str, str], dict]:
    """Every evaluation entry × task metrics document that exists; with ``merge``, a protocol's numbers (oiv6)
    and those beyond it in one mapping (``document.merged``), as the tables and figures read them."""
    import json

    out = {}
    for entry in params["evaluation"]["entries"]:
        for task in params["evaluation"]["tasks"]:
            path = metrics_file(params, entry, task)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    doc = json.load(fh)
                    out[entry, task] = merged(doc) if merge else doc
    return out
