"""Per-predicate CSVs: one evaluation's (a row per predicate, a column per mean-type metric), and the plots
page's comparison of a few models on every task (a row per task, predicate and model)."""

from __future__ import annotations

import csv
import io
import os

from sgg_eval.data.stats import TrainingStats, frequency_order
from sgg_eval.io.atomic import write_text
from sgg_eval.metrics.names import metric_name


def per_predicate_rows(result: dict, stats: TrainingStats) -> list[dict]:
    """Rows ``{predicate, train_count, num_pairs, <metric>: value, ...}`` in predicate id order."""
    names = stats.vocab.predicate_classes
    metrics = sorted(result["per_predicate"])
    num_pairs = stats.num_pairs  # a reduction of the triplet counts, computed on each read
    rows = []
    for c, name in enumerate(names, 1):
        row = {"predicate": name, "train_count": int(stats.predicate_counts[c]), "num_pairs": int(num_pairs[c])}
        for m in metrics:
            value = result["per_predicate"][m].get(name)
            row[m] = "" if value is None else repr(float(value))
        rows.append(row)
    return rows


def write_per_predicate_csv(path: str | os.PathLike, result: dict, stats: TrainingStats) -> None:
    write_rows_csv(path, per_predicate_rows(result, stats))


# the per-predicate values the plots page compares (dvc.yaml's top-level plots name these columns)
COMPARED = (metric_name("mR", 50), metric_name("IMR", 20))


def by_model_rows(
    docs: dict[tuple[str, str], dict], models: dict[str, str], tasks: dict[str, str], stats: TrainingStats
) -> list[dict]:
    """Rows ``{task, predicate, model, R@50, IMR@20}`` of each task, predicate and model: ``docs[entry, task]``
    are evaluation documents, ``models`` and ``tasks`` map entries and tasks to their labels. Predicates come most
    frequent in training first (ties: predicate id), as the papers' per-predicate figures order them; R@50 is
    the predicate's recall at 50, whose mean over predicates is mR@50."""
    names = stats.vocab.predicate_classes
    order = frequency_order(stats.predicate_counts[1:])
    rows = []
    for task, task_label in tasks.items():
        for c in order:
            for entry, label in models.items():
                values = docs[entry, task]["per_predicate"]
                row = {"task": task_label, "predicate": names[c], "model": label}
                for metric in COMPARED:
                    value = values[metric].get(names[c])
                    # a predicate's own recall at 50 (mR@50 is their mean)
                    column = metric_name("R", 50) if metric == metric_name("mR", 50) else metric
                    row[column] = "" if value is None else repr(float(value))
                rows.append(row)
    return rows


def write_rows_csv(path: str | os.PathLike, rows: list[dict]) -> None:
    """``rows`` (dicts with the same keys, in order) as a CSV with a header, written atomically."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, buf.getvalue())
