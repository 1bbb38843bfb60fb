"""Scene graphs written as text by multimodal LLMs (issue 48), in sgg-eval's own JSONL: one line per answered image,

    {"image_id": 2343, "objects": [{"name": "man", "box": [x1, y1, x2, y2]}, ...], "relations": [[0, "riding", 1]]}

- ``box`` is ``x1, y1, x2, y2`` in the image's pixels, or on a grid when the line has ``"box_scale": [sx, sy]``
  (Qwen2-VL answers on 1000 x 1000): then scaled by ``(W / sx, H / sy)``, W and H the GT image's size;
- a relation is ``[subject, predicate, object]``; an end is the object's position in ``objects`` (from 0) or the
  ``"id"`` an object carries (``"man.1"``, as R1-SGG's answers name them);
- names and predicates are kept as written: mapping them to the dataset's classes is a protocol's rule.

Nothing in an answer aborts the run; every problem is counted, per image (:class:`AnswerReport`):

- a line that is not a JSON object with an ``image_id``: ``unreadable_lines`` (its image, if any, is unanswered);
- a second answer for an image: ``duplicate_answers`` (the first is kept);
- ``objects`` or ``relations`` missing or not lists: the image's answer is a ``failure``, scored as an empty answer;
- an object without a name, or whose box is not 4 finite numbers with ``x2 >= x1`` and ``y2 >= y1``: dropped
  (``objects_dropped``), with the relations that name it;
- a relation that is not ``[end, "predicate", end]`` or names no kept object: dropped (``relations_dropped``);
- a box past the image: kept, counted (``boxes_outside``).

Refused in one line, naming the file: a file that is not UTF-8 JSONL text, and answers for images the GT does not
have (the answers were made for another split).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonio import jsonl_lines, parse_json, read_text

MAX_ANSWERS_BYTES = 1 << 32  # 4 GiB of answers: far beyond any test split's


@dataclass
class TextGraph:
    """One image's answer: object ``names`` with ``boxes`` ``[N, 4]`` float64 xyxy pixels; relations as
    ``subjects[M]``, ``objects[M]`` (object positions) and ``predicates`` (names, as written). ``failure`` says why
    the answer could not be read (then it is empty)."""

    image_id: int | str
    names: tuple[str, ...] = ()
    boxes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    subjects: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    objects: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    predicates: tuple[str, ...] = ()
    failure: str | None = None


@dataclass
class AnswerReport:
    """What reading the answers found: totals by kind, and each image's problems (``problems[image_id]``)."""

    counts: Counter = field(default_factory=Counter)
    problems: dict = field(default_factory=dict)

    def note(self, kind: str, image_id=None, detail: str = "", n: int = 1) -> None:
        self.counts[kind] += n
        if image_id is not None:
            self.problems.setdefault(image_id, []).append(f"{kind}: {detail}" if detail else kind)


def read_text_graphs(path: str | os.PathLike, sizes: dict) -> tuple[dict, AnswerReport]:
    """The answers of the JSONL file ``path`` by GT image id, and the report; ``sizes`` maps each GT image id to
    its ``(width, height)``. Answers for images ``sizes`` lacks are refused (module docstring)."""
    path = os.fspath(path)
    lines = jsonl_lines(read_text(path, "JSONL file of answers", MAX_ANSWERS_BYTES))
    key_of = {str(k): k for k in sizes}  # answers may write an integer id as text (R1-SGG's are strings)
    answers, report, foreign = {}, AnswerReport(), []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        report.counts["lines"] += 1
        try:
            doc = parse_json(line.encode("utf-8"), path)
        except InputError:
            doc = None
        raw_id = doc.get("image_id") if isinstance(doc, dict) else None
        if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)):
            report.note("unreadable_lines", None)
            continue
        image_id = key_of.get(str(raw_id))
        if image_id is None:
            foreign.append(raw_id)
            continue
        if image_id in answers:
            report.note("duplicate_answers", image_id, f"line {number}")
            continue
        answers[image_id] = _answer(doc, image_id, sizes[image_id], report)
    refuse_foreign(foreign, path)
    return answers, report


def refuse_foreign(foreign: list, path: str, whose: str = "images the GT does not have", made_for: str = "split"):
    """One :class:`InputError` naming ``path`` when answers are for ``foreign`` images (or questions) of no GT."""
    if foreign:
        raise InputError(
            f"{len(foreign)} answers are for {whose}, e.g. {foreign[0]!r:.40}: the answers were made for another "
            f"{made_for}",
            path=path,
        )


def _answer(doc: dict, image_id, size: tuple[int, int], report: AnswerReport) -> TextGraph:
    objects, relations = doc.get("objects"), doc.get("relations")
    if not isinstance(objects, list) or not isinstance(relations, list):
        report.note("failures", image_id, "objects and relations must be lists")
        return TextGraph(image_id, failure="objects and relations must be lists")
    scale = _scale(doc.get("box_scale"), size)
    if scale is None:
        report.note("failures", image_id, "box_scale must be two positive numbers")
        return TextGraph(image_id, failure="box_scale must be two positive numbers")
    names, boxes, position_of = [], [], {}
    for i, obj in enumerate(objects):
        box = _box(obj.get("box") if isinstance(obj, dict) else None)
        name = obj.get("name") if isinstance(obj, dict) else None
        if box is None or not isinstance(name, str) or not name.strip():
            report.note("objects_dropped", image_id, f"object {i}")
            continue
        position_of[i] = len(names)
        if isinstance(obj.get("id"), str):
            position_of.setdefault(obj["id"], len(names))  # a repeated id names its first object
        names.append(name)
        boxes.append([box[0] * scale[0], box[1] * scale[1], box[2] * scale[0], box[3] * scale[1]])
    arr = np.array(boxes, dtype=np.float64).reshape(-1, 4)
    w, h = size
    outside = int(
        np.count_nonzero((arr < 0).any(axis=1) | (arr[:, [0, 2]] > w).any(axis=1) | (arr[:, [1, 3]] > h).any(axis=1))
    )
    if outside:
        report.note("boxes_outside", image_id, f"{outside} box(es)", n=outside)
    subjects, objs, predicates = [], [], []
    for j, rel in enumerate(relations):
        ok = isinstance(rel, list) and len(rel) == 3 and isinstance(rel[1], str) and rel[1].strip()
        ends = [_end(rel[0], position_of), _end(rel[2], position_of)] if ok else [None, None]
        if None in ends:
            report.note("relations_dropped", image_id, f"relation {j}")
            continue
        subjects.append(ends[0])
        objs.append(ends[1])
        predicates.append(rel[1])
    return TextGraph(
        image_id, tuple(names), arr, np.array(subjects, dtype=np.int64), np.array(objs, dtype=np.int64),
        tuple(predicates),
    )  # fmt: skip


def _scale(value, size: tuple[int, int]) -> tuple[float, float] | None:
    if value is None:
        return 1.0, 1.0
    if not (isinstance(value, list) and len(value) == 2 and all(_number(v) and v > 0 for v in value)):
        return None
    return size[0] / value[0], size[1] / value[1]


def _number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def _box(value) -> list[float] | None:
    if not (isinstance(value, list) and len(value) == 4 and all(_number(v) for v in value)):
        return None
    if value[2] < value[0] or value[3] < value[1]:
        return None
    return [float(v) for v in value]


def _end(value, position_of: dict) -> int | None:
    """A relation end's kept object: a position (an int, not a bool) or an object's id."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    return position_of.get(value)
