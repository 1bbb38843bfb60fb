"""ASMv2's PSG ground truth (issue 48, ``--protocol asmv2``): its question file ``psg_eval.jsonl`` (Hub
``OpenGVLab/Region-Evaluation-Data``, ``psg/``), one question per line:

    {"question_id": 0, "image": "...", "text": "...", "width": 640, "height": 480,
     "relation_tuples": [["person", [x1, y1, x2, y2], "wall-other-merged", [x1, y1, x2, y2], "beside"], ...]}

Boxes are used as written (their frame, square-padded or not, is the file's: UNVERIFIED upstream). A GT name is
read as ASMv2 reads it, its text before the first ``-`` (``wall-other-merged`` -> ``wall``).

Refused in one line naming the file, the question and the field: a line that is not such an object, a repeated
question id, a size that is not two positive integers, a tuple that is not ``[name, box, name, box, predicate]``
with 4 finite numbers in each box.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonio import parse_json, read_bytes

MAX_QUESTIONS_BYTES = 1 << 32


@dataclass
class Question:
    """One question: the image's size and its GT tuples: subject and object names (before the first ``-``; as
    written: ``raw_*``), boxes ``[M, 4]`` float32 each, and predicates as written."""

    question_id: int | str
    width: int
    height: int
    subjects: tuple[str, ...]
    subject_boxes: np.ndarray
    objects: tuple[str, ...]
    object_boxes: np.ndarray
    predicates: tuple[str, ...]
    raw_subjects: tuple[str, ...] = ()
    raw_objects: tuple[str, ...] = ()


def read_asmv2_questions(path: str | os.PathLike) -> dict:
    """Question id -> :class:`Question` of ``psg_eval.jsonl`` at ``path``."""
    path = os.fspath(path)
    questions = {}
    for number, line in enumerate(read_bytes(path, "ASMv2 question file", MAX_QUESTIONS_BYTES).splitlines(), 1):
        if not line.strip():
            continue
        row = parse_json(line, f"{path}, line {number}")
        where = dict(path=path, position=number - 1)
        if not isinstance(row, dict):
            raise InputError("a line must be a JSON object (a question)", **where)
        qid = row.get("question_id")
        if isinstance(qid, bool) or not isinstance(qid, (int, str)):
            raise InputError("missing or not an integer or string", field="question_id", **where)
        where["image_id"] = qid
        if qid in questions:
            raise InputError("repeated question id", field="question_id", **where)
        size = [row.get(k) for k in ("width", "height")]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size):
            raise InputError("width and height must be positive integers", field="width", **where)
        questions[qid] = _question(qid, size, row.get("relation_tuples"), where)
    if not questions:
        raise InputError("no questions", path=path)
    return questions


def _question(qid, size, tuples, where: dict) -> Question:
    if not isinstance(tuples, list):
        raise InputError("must be a list of [subject, box, object, box, predicate]", field="relation_tuples", **where)
    parts, raw = [[], [], [], [], []], [[], []]
    for t in tuples:
        ok = isinstance(t, list) and len(t) == 5 and all(isinstance(t[k], str) for k in (0, 2, 4))
        if not ok or not (_box(t[1]) and _box(t[3])):
            raise InputError(
                f"{str(t)[:60]}: not [name, [x1, y1, x2, y2], name, [x1, y1, x2, y2], predicate]",
                field="relation_tuples",
                **where,
            )
        for k in range(5):
            parts[k].append(t[k].split("-")[0] if k in (0, 2) else t[k])
        raw[0].append(t[0])
        raw[1].append(t[2])
    boxes = [np.array(parts[k], dtype=np.float32).reshape(-1, 4) for k in (1, 3)]
    return Question(
        qid, size[0], size[1], tuple(parts[0]), boxes[0], tuple(parts[2]), boxes[1], tuple(parts[4]), tuple(raw[0]),
        tuple(raw[1]),
    )  # fmt: skip


def _box(value) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 4
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    )
