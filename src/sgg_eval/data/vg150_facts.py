"""The VG150 names and real frequencies embedded in sgg-eval (copied from the VG150 dictionary file): the
default vocabulary of reference files and the simulator's source of truth. No heavy imports."""

from __future__ import annotations

import json
from importlib import resources

from sgg_eval.data.types import Vocabulary


def vg150_facts() -> dict:
    """Object and predicate names with their VG150 counts (``object_count``, ``predicate_count``)."""
    return json.loads(resources.files("sgg_eval.data").joinpath("resources/vg150_facts.json").read_text("utf-8"))


def vg150_vocabulary() -> Vocabulary:
    facts = vg150_facts()
    return Vocabulary(tuple(facts["object_classes"]), tuple(facts["predicate_classes"]))
