"""Metrics that are reductions of what the accumulator already holds, registered by name.

A function ``(acc, vocab, opts) -> {name: value or None}`` decorated with :func:`reduction` is called by
``engine.finalize`` after the built-in families (box SGG; the panoptic protocols reduce their own way).
Each name it returns appears in the metrics JSON, as the MLflow metric ``<task>/<name>`` and as a column of
the full-metrics table, with no other change (CONTRIBUTING.md, "a metric"). A name that is already a metric
is refused: nothing is overwritten silently.
"""

from __future__ import annotations

from collections.abc import Callable

from sgg_eval.data.types import Vocabulary
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.metrics.reduce import Accumulator

Reduction = Callable[[Accumulator, Vocabulary, EvalOptions], dict[str, float | None]]
REDUCTIONS: dict[str, Reduction] = {}


def reduction(fn: Reduction) -> Reduction:
    """Register ``fn`` (by its name) as a metric family of every evaluation."""
    REDUCTIONS[fn.__name__] = fn
    return fn


def registered_metrics(acc: Accumulator, vocab: Vocabulary, opts: EvalOptions, taken: set[str]) -> dict:
    """Every registered reduction's values, refusing a name that is already a metric."""
    out: dict[str, float | None] = {}
    for name, fn in REDUCTIONS.items():
        for metric, value in fn(acc, vocab, opts).items():
            if metric in taken or metric in out:
                raise ValueError(f"reduction {name!r} names {metric!r}, which is already a metric")
            out[metric] = None if value is None else float(value)
    return out
