"""Metrics that are reductions of what the accumulator already holds, registered by name, for boxes and PSG.

A function ``(acc) -> {name: value or None}`` decorated with :func:`reduction` is called with the run's
:class:`~sgg_eval.metrics.reduce.Accumulator` after the table's families (``metrics.document``): by
``engine.finalize`` for a box evaluation, and by ``panoptic.reduce`` for each panoptic protocol (its own
accumulator, so under that protocol's matching). Each name it returns appears in the metrics JSON (a panoptic
document lists it under ``beyond_protocol``: no protocol's source reports it), as the MLflow metric
``<task>/<name>`` and as a column of the full-metrics table, with no other change (CONTRIBUTING.md, "a
metric"). A name that is already a metric is refused: nothing is overwritten silently.
"""

from __future__ import annotations

from collections.abc import Callable

from sgg_eval.metrics.reduce import Accumulator

Reduction = Callable[[Accumulator], dict[str, float | None]]
REDUCTIONS: dict[str, Reduction] = {}


def reduction(fn: Reduction) -> Reduction:
    """Register ``fn`` (by its name) as a metric family of every evaluation."""
    REDUCTIONS[fn.__name__] = fn
    return fn


def registered_metrics(acc: Accumulator, taken: set[str]) -> dict:
    """Every registered reduction's values, refusing a name that is already a metric."""
    out: dict[str, float | None] = {}
    for name, fn in REDUCTIONS.items():
        for metric, value in fn(acc).items():
            if metric in taken or metric in out:
                raise ValueError(f"reduction {name!r} names {metric!r}, which is already a metric")
            out[metric] = None if value is None else float(value)
    return out
