"""ProVision's scene-graph text (issue 48, ``--protocol provision``; JieyuZ2/ProVision at 579ef22,
``provision/annotation/osprey/eval/psg/eval_psg.py``, ``SceneGraphParser.parse_outputs``), read as it reads it:

    Objects:
    region1: person
    region2: wall-other-merged
    Relations:
    region1: region2 beside, region2 in front of        (mode 2: Osprey/Robin answers)
    region1: beside: region2, region3; holding: region4  (mode 0: what GPT scene graphs are written as)

- no ``Relations:`` at all: an empty answer, which is scored (**no_relations**);
- ``Relations:`` twice, a relation line of mode 0 without ``:``, a mode-2 line with one target and no predicate,
  an empty mode-0 relation block, or a region number Python cannot read as an int: its ``ValueError``, which
  drops the image and its GT from every number (**dropped**);
- no ``Objects:``, or an object line without ``:`` (an empty line too): an ``IndexError`` it does not catch, which
  stops its script (**crashed**: sgg-eval drops the image too, and counts it apart);
- an object is the text after its line's first ``:`` up to the next; a region number is the first
  ``region<digits>`` minus one, else -1, which Python indexing reads as the **last** object; mode 2 keeps only
  lines with exactly one ``:``; a relations text holding ``s:`` has it replaced by ``region1:`` (no ``region1``
  in it) or deleted, as there.

:func:`gpt_text` writes a GPT scene graph (``updated_sg``) as that text, with its boxes, as ``process_gpt_sg`` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

READ, NO_RELATIONS, DROPPED, CRASHED = "read", "no_relations", "dropped", "crashed"
REGION = re.compile(r"region(\d+)")


@dataclass(frozen=True)
class Parsed:
    """What ProVision read from one answer: its outcome, the object names and the ``(subject, object,
    predicate)`` triplets with 0-based region numbers (-1: unreadable)."""

    outcome: str
    names: list[str] = field(default_factory=list)
    triplets: list[tuple[int, int, str]] = field(default_factory=list)


def region_id(text: str) -> int:
    """``get_region_id``: the first ``region<digits>`` minus one, -1 without one (``int`` raises past 4,300
    digits, as there)."""
    match = REGION.search(text)
    return int(match.group(1)) - 1 if match else -1


def parse_scene_graph(text, mode: int) -> Parsed:
    """One answer read by ``parse_outputs`` in ``mode`` (0 or 2; module docstring)."""
    if not isinstance(text, str):
        return Parsed(CRASHED)
    if "Relations:" not in text:
        return Parsed(NO_RELATIONS)
    try:
        return _parse(text, mode)
    except ValueError:
        return Parsed(DROPPED)
    except IndexError:
        return Parsed(CRASHED)


def _parse(text: str, mode: int) -> Parsed:
    objects, relations = text.split("Relations:")
    objects = objects.split("Objects:")[1].strip()
    names = [line.split(":")[1].strip() for line in objects.split("\n")]
    if "s:" in relations:
        relations = relations.replace("s:", "region1:" if "region1" not in relations else "")
    lines = relations.strip().split("\n")
    return Parsed(READ, names, _mode0(lines) if mode == 0 else _mode2(lines))


def _mode0(lines: list[str]) -> list[tuple[int, int, str]]:
    out = []
    for line in lines:
        subject, listed = line.split(":", 1)
        source = region_id(subject)
        for relation in listed.split(";"):
            relation = relation.strip()
            if ":" not in relation:
                continue
            try:  # a triplet kept before an unreadable target stays, as its generator yielded it
                predicate, targets = relation.split(":", 1)
                for target in targets.split(","):
                    out.append((source, region_id(target), predicate))
            except ValueError:
                continue
    return out


def _mode2(lines: list[str]) -> list[tuple[int, int, str]]:
    out = []
    for line in lines:
        if line.count(":") != 1:
            continue
        head, rest = line.split(":")
        source = region_id(head)
        if "," not in rest:
            target, predicate = rest.strip().split(" ", 1)
            out.append((source, region_id(target), predicate))
            continue
        for relation in rest.split(","):
            try:
                target, predicate = relation.strip().split(" ", 1)
                out.append((source, region_id(target), predicate))
            except ValueError:
                continue
    return out


def gpt_text(graph) -> tuple[str, list] | None:
    """``process_gpt_sg``: a GPT scene graph ``{id: {name, bbox, rel: {predicate: [ids]}}}`` as mode-0 text and
    its boxes in id order; None where ProVision's script would stop (an id that is not an integer, an object
    without ``name``, ``bbox`` or a ``rel`` mapping, a target that is not a number)."""
    try:
        graph = {int(k): v for k, v in graph.items()}
        objects, relations, boxes = "Objects:\n", "Relations:\n", []
        for subject, obj in sorted(graph.items()):
            objects += f"region{subject + 1}: {obj['name']}\n"
            listed = "".join(
                f"{predicate}: {', '.join([f'region{target + 1}' for target in targets])};"
                for predicate, targets in obj["rel"].items()
            )
            if listed:
                relations += f"region{subject + 1}: {listed}\n"
            boxes.append(obj["bbox"])
    except (AttributeError, TypeError, KeyError, ValueError, IndexError, RecursionError):
        return None
    return f"{objects}\n{relations}", boxes
