"""The metrics document of a run, for boxes and PSG alike: one table of metric families (:data:`TABLE`: their K
values and NG variants, in document order), filled by a product's values, with one null rule.

A product (boxes: ``metrics.engine``; PSG: ``panoptic.reduce``) gives, per family name, a function of the
:class:`Cell` (family, K, NG or not, relative K or not, the metric's name) returning a :class:`Value` (the number
or ``None``, why it is ``None``, and its per-predicate vector if it has one), or ``None`` when the family is not
part of that product's document (boxes have no ``R@inf``; PSG no ``A@K``). :func:`fill` walks the table in order
and applies the null rule: a metric that cannot be computed is ``null`` and its reason becomes a note, once.
The registered reductions (``metrics.reductions``) then add their metrics, for both products.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from sgg_eval.metrics.names import TABLE, Block, metric_name  # noqa: F401  (Block: the table's rows)


@dataclass(frozen=True)
class Cell:
    """One metric of the table: ``family`` at ``k`` (its ``index`` in the block's K list), NG variant or not."""

    family: str
    k: int | str | None
    index: int
    ng: bool
    relative: bool

    @property
    def name(self) -> str:
        return metric_name(self.family, self.k, ng=self.ng, relative=self.relative)


@dataclass(frozen=True)
class Value:
    """A metric's value (``None``: undefined, ``reason`` says why), and its per-predicate values ``[C]`` where it
    has them (``listed``: which predicates the document lists; all by default)."""

    value: float | None
    reason: str | None = None
    per_predicate: np.ndarray | None = None
    listed: np.ndarray | None = None


Values = Mapping[str, Callable[[Cell], Value | None]]

# Each family's method on a product's values (``metrics.box_values.BoxValues``, ``panoptic.reduce.PanopticValues``):
# a product has the families whose method it defines.
METHODS = {
    "R": "recall",
    "mR": "mean_recall",
    "F1": "f1",
    "zR": "zero_shot",
    "A": "accuracy",
    "PR": "pair_recall",
    "IMR": "imr",
    "wIMR": "wimr",
    "R_tr": "triplet_recall",
    "wR_tr": "weighted_triplet_recall",
    "PRk": "predicate_rank",
    "InstR": "instance_recall",
}


class FamilyValues:
    """The base of a product's values: :meth:`table` maps each family whose method (:data:`METHODS`) the product
    defines to that method, a function of a :class:`Cell`."""

    def table(self) -> Values:
        return {family: getattr(self, name) for family, name in METHODS.items() if hasattr(self, name)}


class Document:
    """A metrics document being built: ``metrics`` by name, ``per_predicate`` by metric name then predicate name,
    ``notes`` (each once, in the order they arose)."""

    def __init__(self, predicates: tuple[str, ...]):
        self.predicates = predicates
        self.metrics: dict[str, float | None] = {}
        self.per_predicate: dict[str, dict[str, float]] = {}
        self.notes: list[str] = []

    def note(self, text: str | None) -> None:
        if text and text not in self.notes:
            self.notes.append(text)

    def value_at(self, family: str, cell: Cell) -> float | None:
        """The value already written for ``family`` at ``cell``'s K and variant (F1 from R and mR)."""
        return self.metrics[Cell(family, cell.k, cell.index, cell.ng, cell.relative).name]

    def put(self, name: str, value: Value) -> None:
        """The null rule: a number is stored as a float; ``None`` with its reason as a note."""
        self.metrics[name] = None if value.value is None else float(value.value)
        if value.value is None:
            self.note(value.reason)
        if value.per_predicate is not None:
            listed = range(len(self.predicates)) if value.listed is None else np.flatnonzero(value.listed)
            self.per_predicate[name] = {self.predicates[c]: float(value.per_predicate[c]) for c in listed}


def cells(block: Block):
    """The block's cells in document order."""
    for index, k in enumerate(block.ks):
        for ng in (False, True) if block.ng else (False,):
            for family in block.families:
                yield Cell(family, k, index, ng, block.relative)
        for family in block.plain:
            yield Cell(family, k, index, False, block.relative)


def fill(doc: Document, values: Values) -> None:
    """Every metric of :data:`TABLE` that ``values`` gives, in order, into ``doc``."""
    for block in TABLE:
        for cell in cells(block):
            value = values[cell.family](cell) if cell.family in values else None
            if value is not None:
                doc.put(cell.name, value)


# A protocol defined by someone's tool (PSG's sgbench and OpenPSG, Open Images V6's PySGG) reports some numbers;
# the document's "metrics" holds exactly those, and what sgg-eval computes beyond them under that protocol's
# matching goes to this section, with an "about" saying so, never beside them.
BEYOND = "beyond_protocol"


def apart(doc: dict, metrics: dict, per_predicate: dict, about: str, notes: list[str], moved=None) -> dict:
    """``doc`` (the engine's document) as a protocol's tool reports it: ``metrics`` and ``per_predicate`` its own,
    every other value of the engine's in ``BEYOND`` with ``about``, and ``notes`` first among the notes. ``moved``:
    the engine's names of the values ``metrics`` holds under other names (default: its own names)."""
    moved = metrics if moved is None else moved
    return {
        **doc,
        "metrics": metrics,
        "per_predicate": per_predicate,
        BEYOND: {
            "about": about,
            "metrics": {k: v for k, v in doc["metrics"].items() if k not in moved},
            "per_predicate": {k: v for k, v in doc["per_predicate"].items() if k not in per_predicate},
        },
        "notes": notes + doc["notes"],
    }


def every_metric(doc: dict) -> dict:
    """A document's metrics and those beyond its protocol, as one mapping (tables, MLflow, tests)."""
    return {**doc["metrics"], **doc.get(BEYOND, {}).get("metrics", {})}


def every_per_predicate(doc: dict) -> dict:
    return {**doc["per_predicate"], **doc.get(BEYOND, {}).get("per_predicate", {})}


def merged(doc: dict) -> dict:
    """``doc`` with the metrics beyond its protocol beside its own, as a document without a protocol section has
    them (what tables, figures, sweeps and MLflow read; the metrics JSON keeps the two apart)."""
    if BEYOND not in doc:
        return doc
    return {**doc, "metrics": every_metric(doc), "per_predicate": every_per_predicate(doc)}
