"""The table SGG-Benchmark's evaluator prints, one per pipeline on ``metrics.protocol: sgg-benchmark``
(docs/sgg_benchmark.md): R@K, mR@K, F1@K and zR@K at K = 20, 50, 100 in the order it prints them, then its Relative
recall and mean recall (K = the image's GT count), one section per task, backbone x method."""

from __future__ import annotations

from sgg_eval.core.tasks import TASKS
from sgg_eval.metrics.sgg_benchmark_document import TABLE_COLUMNS
from sgg_eval.report.tables import Table, method_rows


def sgg_benchmark_table(
    results: dict[tuple[str, str], dict],
    entries: list[str],
    simulated: bool,
    task_labels: dict[str, str],
    dataset: str = "",
) -> Table:
    """Its numbers for every entry and task (``results`` as the pipeline loads them: ``(entry, task) -> document``)."""
    columns = list(TABLE_COLUMNS)
    on = f" on {dataset}" if dataset else ""
    rows = [row for task in TASKS for row in method_rows(results, entries, task, task_labels.get(task, task), columns)]
    return Table(
        "sgg_benchmark_table",
        "As SGG-Benchmark's evaluator computes them (protocol sgg-benchmark): IoU with the +1 pixel in the "
        "intersection only, one test predicate per pair, an image without a prediction counted as a miss; zR: "
        "triplets absent from the training split; R@1x and mR@1x: its Relative recall (K = the image's GT count)"
        + on
        + (". SIMULATED data." if simulated else "."),
        ("Backbone", "Method"),
        columns,
        rows,
    )
