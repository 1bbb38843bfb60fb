"""The SGBench paper's Tables 1-3 for panoptic SGG (Lorenz et al. 2024), our metrics on PSG, every metric, and
published beside ours, as Markdown, LaTeX and CSV (``report.tables.Table``).

- Table 1: R@20/50/100 and R@k× (k = 1, 10: K relative to the image's number of GT triplets);
- Table 2: the same columns for mR;
- Table 3: mR@50, ng-mR@50 (the paper's mNgR@50), PR@50, PRk (the paper's PRank: a mean rank, lower is
  better), mR@inf and InstR;
- ours: IMR@K and wIMR@K (Li et al. 2022) and F1@K.

Inputs are the ``psg_evaluate`` documents (entry info plus one metrics document per protocol). With several
protocols, each column appears once per protocol, side by side (``R@50 (sgbench)``, ``R@50 (openpsg)``);
every caption names the protocols and τ, and the columns a protocol's source does not report (computed by
sgg-eval under its matching: ``panoptic.reduce.PROTOCOL_METRICS``).
"""

from __future__ import annotations

import re

from sgg_eval.core.defaults import IMR_KS, IOU_THRESHOLD, RECALL_KS
from sgg_eval.metrics.document import every_metric
from sgg_eval.metrics.names import metric_name
from sgg_eval.panoptic.reduce import PROTOCOL_METRICS, SOURCES
from sgg_eval.report.agreement import AGREEMENT_BAND, agreement
from sgg_eval.report.published import published_rows
from sgg_eval.report.tables import Row, Table

RELATIVE = (1, 10)  # the paper's R@×1 and R@×10
TABLE1 = [*(metric_name("R", k) for k in RECALL_KS), *(metric_name("R", k, relative=True) for k in RELATIVE)]
TABLE2 = [*(metric_name("mR", k) for k in RECALL_KS), *(metric_name("mR", k, relative=True) for k in RELATIVE)]
TABLE3 = [metric_name("mR", 50), metric_name("mR", 50, ng=True), metric_name("PR", 50), "PRk"]
TABLE3 += [metric_name("mR", "inf"), "InstR"]
OURS = [*(metric_name(f, k) for f in ("IMR", "wIMR") for k in IMR_KS), *(metric_name("F1", k) for k in RECALL_KS)]
PUBLISHED_FILE = "sgbench2024_psg_tables.csv"


def our_name(published: str) -> str:
    """Our metric name for a column of the paper's tables (``R@x10`` -> ``R@10x``, ``mNgR@50`` -> ``ng-mR@50``,
    ``PRank`` -> ``PRk``)."""
    if published == "PRank":
        return "PRk"
    m = re.fullmatch(r"(m?)(Ng)?R@(x?)(\d+|inf)", published)
    if m is None:
        return published
    k = m.group(4)
    return metric_name(f"{m.group(1)}R", k if k == "inf" else int(k), ng=bool(m.group(2)), relative=bool(m.group(3)))


def published_psg() -> list[dict]:
    """The SGBench paper's Tables 1-3 (percent; PRank a rank), shipped with sgg-eval: one dict per method."""
    return published_rows(PUBLISHED_FILE)


def _header(metric: str, protocol: str, protocols: list[str]) -> str:
    return metric if len(protocols) == 1 else f"{metric} ({protocol})"


def _rows(results: dict[str, dict], columns: list[str], protocols: list[str]) -> list[Row]:
    return [
        Row(
            (doc["entry"]["method"],),
            {
                _header(c, p, protocols): every_metric(doc["protocols"][p]).get(c)
                for c in columns
                for p in protocols
                if p in doc["protocols"]
            },
        )
        for doc in results.values()
    ]


def beyond_caption(columns, protocols: list[str]) -> str:
    """The caption's sentence naming the columns a protocol's source does not report ("" if none)."""
    parts = []
    for p in protocols:
        beyond = [c for c in columns if c not in PROTOCOL_METRICS[p]]
        if beyond:
            listed = ", ".join(beyond) if len(beyond) <= 8 else f"{len(beyond)} of the {len(columns)} metrics"
            listed = f"all {len(columns)} metrics" if len(beyond) == len(columns) > 1 else listed
            parts.append(
                f"{listed} are beyond protocol {p}: computed by sgg-eval with its matching, not by {SOURCES[p]}."
            )
    return " " + " ".join(parts) if parts else ""


def _table(name: str, caption: str, results, columns, protocols, tag: str, mark_best: bool = True) -> Table:
    headers = [_header(c, p, protocols) for c in columns for p in protocols]
    caption += beyond_caption(columns, protocols) + tag
    return Table(name, caption, ("Method",), headers, _rows(results, columns, protocols), mark_best=mark_best)


def psg_tables(
    results: dict[str, dict],
    protocols: list[str],
    dataset: str,
    simulated: bool,
    tau: float,
    iou_threshold: float = IOU_THRESHOLD,
) -> list[Table]:
    """Tables 1-3, ours and the full table for the entries of ``results`` (in its order)."""
    tag = " SIMULATED data: not results on PSG." if simulated else ""
    setting = f"{dataset}, protocol {' / '.join(protocols)}, wIMR tau = {tau:g}"
    if iou_threshold != IOU_THRESHOLD:
        setting += f", IoU {iou_threshold:g} (the protocols': {IOU_THRESHOLD:g})"
    all_metrics = sorted({k for doc in results.values() for d in doc["protocols"].values() for k in every_metric(d)})
    return [
        _table("psg_table1_recall", f"Panoptic SGG, R@K and R@k× ({setting}).", results, TABLE1, protocols, tag),
        _table("psg_table2_mean_recall", f"Panoptic SGG, mR@K and mR@k× ({setting}).", results, TABLE2, protocols, tag),
        _table(
            "psg_table3_pairs_predicates",
            f"Panoptic SGG, mR@50, ng-mR@50, pair recall PR@50, predicate rank PRk (lower is better), mR@inf and "
            f"instance recall InstR ({setting}).",
            results,
            TABLE3,
            protocols,
            tag,
        ),
        _table("psg_ours", f"Panoptic SGG, IMR@K, wIMR@K and F1@K ({setting}).", results, OURS, protocols, tag),
        _table(
            "psg_full_metrics",
            f"Panoptic SGG, every metric (percent; PRk is a mean rank, shown as is; {setting}).",
            results,
            all_metrics,
            protocols,
            tag,
            mark_best=False,
        ),
    ]


def _agreement_caption(rows: list[Row]) -> str:
    cells = [(r.labels[1], r.values["published"], r.values["ours"]) for r in rows]
    cells = [c for c in cells if c[2] is not None and c[1]]
    if not cells:
        return ""
    within, means = agreement(cells)
    worst = max(means, key=means.get)
    return (
        f" Agreement: {within} of {len(cells)} cells within ±{AGREEMENT_BAND:.0%} of the published value; the "
        f"largest mean |relative difference| of a metric is {100 * means[worst]:.1f}% ({worst})."
    )


def published_vs_ours(results: dict[str, dict], protocol: str, dataset: str, simulated: bool) -> Table:
    """The paper's values beside ours under ``protocol``, matched on the method label, with the difference
    (ours - published) and the relative difference; PRk stays a rank (its difference too)."""
    rows = []
    by_method = {doc["entry"]["method"]: doc for doc in results.values()}
    for pub in published_psg():
        doc = by_method.get(pub["method"])
        if doc is None or protocol not in doc["protocols"]:
            continue
        for column, value in pub.items():
            if column == "method" or not value:
                continue
            name = our_name(column)
            ours = every_metric(doc["protocols"][protocol]).get(name)
            if ours is not None and name != "PRk":
                ours *= 100  # percent, as published (PRk is a rank)
            p = float(value)
            diff = None if ours is None else ours - p
            rows.append(
                Row(
                    (pub["method"], name),
                    {
                        "published": p,
                        "ours": ours,
                        "difference": diff,
                        "relative (%)": None if diff is None or not p else 100 * diff / p,
                    },
                )
            )
    what = "SIMULATED vs published" if simulated else "Published vs ours"
    caveat = (
        " The ours column is the SIMULATED PSG-like benchmark, calibrated to resemble the paper: it shows how close "
        "the simulation is, not a result on PSG."
        if simulated
        else ""
    )
    return Table(
        "psg_published_vs_ours",
        f"{what}: SGBench paper Tables 1-3 (Lorenz et al. 2024, PSG test) and {dataset} under protocol {protocol}; "
        f"percent except PRk (a rank); relative = difference / published.{_agreement_caption(rows)}"
        f"{beyond_caption(sorted({r.labels[1] for r in rows}), [protocol])}{caveat}",
        ("Method", "Metric"),
        ["published", "ours", "difference", "relative (%)"],
        rows,
        mark_best=False,
        scale=1.0,
    )
