"""The predicate confusion matrix of a metrics document (its ``confusion``, ``metrics.engine.confusion_section``) as a
reader uses it (issue 49): a CSV ordered by training frequency, and the largest confusions in words
("mounted on → on: 100.0% of `mounted on`"), the share taken of the GT predicate's matched rows."""

from __future__ import annotations

import numpy as np

from sgg_eval.report.tables import Row, Table

TOP_CONFUSIONS = 10


def confusion_rows(confusion: dict, order: list[int]) -> list[dict]:
    """CSV rows: ``gt_predicate``, ``matched`` (its matched GT rows), then one column per top predicate, both axes
    in ``order`` (``data.stats.frequency_order``: most frequent in training first)."""
    names, counts = confusion["predicates"], np.asarray(confusion["counts"], dtype=np.int64)
    return [
        {"gt_predicate": names[g], "matched": int(counts[g].sum()), **{names[t]: int(counts[g, t]) for t in order}}
        for g in order
    ]


def top_confusions(confusion: dict, n: int = TOP_CONFUSIONS) -> list[tuple[str, str, float, int]]:
    """The ``n`` largest off-diagonal shares ``(gt predicate, read as, share of its matched rows, rows)``, the
    largest share first (ties: more rows, then vocabulary order)."""
    names, counts = confusion["predicates"], np.asarray(confusion["counts"], dtype=np.int64)
    matched = counts.sum(axis=1)
    cells = [
        (counts[g, t] / matched[g], int(counts[g, t]), g, t)
        for g in range(len(names))
        for t in range(len(names))
        if g != t and counts[g, t] > 0
    ]
    cells.sort(key=lambda x: (-x[0], -x[1], x[2], x[3]))
    return [(names[g], names[t], float(share), rows) for share, rows, g, t in cells[:n]]


def in_words(gt: str, top: str, share: float) -> str:
    return f"{gt} → {top}: {100 * share:.1f}% of `{gt}`"


def confusions_table(results: dict, models: list[str], tasks: dict[str, str], tag: str) -> Table | None:
    """The largest confusions of ``models`` (entries) on each task, in words, with their shares; None when no
    result has a confusion matrix."""
    rows = []
    for task, label in tasks.items():
        for entry in models:
            doc = results.get((entry, task))
            if doc is None or "confusion" not in doc:
                continue
            for gt, top, share, count in top_confusions(doc["confusion"]):
                rows.append(Row((entry, in_words(gt, top, share), str(count)), {"share": share}, label))
    if not rows:
        return None
    return Table(
        "confusions",
        f"The largest predicate confusions: for GT rows whose subject and object are matched, the predicate the "
        f"matched pair ranks first instead; the {TOP_CONFUSIONS} largest shares per model and task{tag}",
        ("Model", "Confusion", "GT rows"),
        ["share"],
        rows,
        mark_best=False,
    )
