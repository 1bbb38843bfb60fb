"""Per-predicate CSV of one evaluation: one row per predicate, one column per mean-type metric."""

from __future__ import annotations

import csv
import io
import os

from sgg_eval.atomic import write_text
from sgg_eval.stats import TrainingStats


def per_predicate_rows(result: dict, stats: TrainingStats) -> list[dict]:
    """Rows ``{predicate, train_count, num_pairs, <metric>: value, ...}`` in predicate id order."""
    names = stats.vocab.predicate_classes
    metrics = sorted(result["per_predicate"])
    rows = []
    for c, name in enumerate(names, 1):
        row = {"predicate": name, "train_count": int(stats.predicate_counts[c]), "num_pairs": int(stats.num_pairs[c])}
        for m in metrics:
            value = result["per_predicate"][m].get(name)
            row[m] = "" if value is None else repr(float(value))
        rows.append(row)
    return rows


def write_per_predicate_csv(path: str | os.PathLike, result: dict, stats: TrainingStats) -> None:
    rows = per_predicate_rows(result, stats)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, buf.getvalue())
