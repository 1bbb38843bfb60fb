"""The PSG names embedded in sgg-eval (``resources/psg_facts.json``, copied from OpenPSG with its source): the
133 COCO panoptic classes (80 things, then 53 stuff) and the 56 predicates, in index order. No heavy imports."""

from __future__ import annotations

import json
from importlib import resources


def psg_facts() -> dict:
    """``object_classes``, ``num_thing_classes``, ``predicate_classes`` and ``source``."""
    return json.loads(resources.files("sgg_eval.data").joinpath("resources/psg_facts.json").read_text("utf-8"))
