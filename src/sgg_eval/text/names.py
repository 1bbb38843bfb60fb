"""The names a text scene graph uses, mapped to a dataset's classes and predicates (issue 48, the ``sets`` protocol).

A name is first normalised (:func:`refine`: lowercase, ``_`` and ``-`` read as spaces, runs of spaces as one); it
is then the class whose normalised name it equals, else the entry of the shipped, versioned table
``resources/text_names.json`` for the dataset (VG150's or PSG's: plural forms, PSG's stuff names without their
suffix; ``scripts/make_text_names.py`` states how each entry was made), else unknown. An entry never overrides a
class. Every mapping an evaluation used is listed in its output (:meth:`NameMap.used`), so a reader sees exactly
which words were read as which class.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from sgg_eval.data.types import Vocabulary


def refine(name: str) -> str:
    """``name`` normalised: lowercase, ``_`` and ``-`` as spaces, surrounding and repeated spaces dropped."""
    return " ".join(name.replace("_", " ").replace("-", " ").lower().split())


def name_table() -> dict:
    """The shipped table (``version``, ``objects`` and ``predicates`` entries by dataset), as stored."""
    return json.loads(resources.files("sgg_eval.data").joinpath("resources/text_names.json").read_text("utf-8"))


@dataclass
class NameMap:
    """Normalised name -> 1-based id, for objects and predicates, and what was read through the table."""

    objects: dict[str, int]
    predicates: dict[str, int]
    table: str
    version: int
    from_table: set[tuple[str, str]] = field(default_factory=set)  # (kind, name) read through the table
    counts: Counter = field(default_factory=Counter)

    def map(self, names, kind: str) -> np.ndarray:
        """The ids of ``names`` (``kind``: ``objects`` or ``predicates``), -1 for an unknown name; counts every
        name read through the table (:meth:`used`)."""
        index = getattr(self, kind)
        out = np.full(len(names), -1, dtype=np.int64)
        for i, name in enumerate(names):
            key = refine(name)
            out[i] = index.get(key, -1)
            if (kind, key) in self.from_table and out[i] >= 0:
                self.counts[(kind, key)] += 1
        return out

    def used(self, vocab: Vocabulary) -> list[dict]:
        """Every table mapping an evaluation used: the name, the class it was read as, and how often."""
        names = {"objects": vocab.object_classes, "predicates": vocab.predicate_classes}
        return [
            {"kind": kind, "name": key, "read_as": names[kind][getattr(self, kind)[key] - 1], "times": n}
            for (kind, key), n in sorted(self.counts.items())
        ]


def table_for(vocab: Vocabulary) -> str:
    """Which dataset's entries apply to ``vocab``: ``vg150``, ``psg``, or ``""`` (none: exact names only)."""
    from sgg_eval.data.psg_facts import psg_facts
    from sgg_eval.data.vg150_facts import vg150_vocabulary

    psg = psg_facts()
    psg_vocab = Vocabulary(tuple(psg["object_classes"]), tuple(psg["predicate_classes"]))
    return {vg150_vocabulary(): "vg150", psg_vocab: "psg"}.get(vocab, "")


def name_map(vocab: Vocabulary) -> NameMap:
    """The :class:`NameMap` of ``vocab``: its classes' own names, then the table's entries for its dataset."""
    table, dataset = name_table(), table_for(vocab)
    maps, from_table = {}, set()
    for kind, classes in (("objects", vocab.object_classes), ("predicates", vocab.predicate_classes)):
        own = {refine(c): i for i, c in enumerate(classes, 1)}
        by_name = {c: i for i, c in enumerate(classes, 1)}
        extra = {
            refine(k): by_name[v]
            for k, v in table[kind].get(dataset, {}).items()
            if v in by_name and refine(k) not in own
        }
        from_table |= {(kind, k) for k in extra}
        maps[kind] = {**extra, **own}
    return NameMap(maps["objects"], maps["predicates"], dataset, int(table["version"]), from_table)
