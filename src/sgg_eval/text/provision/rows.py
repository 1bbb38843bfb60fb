"""ProVision's answer files (issue 48, ``--protocol provision``; ``get_data`` in
``osprey/eval/psg/get_scene_graph_metric.py``), one JSON object per line, of two kinds:

- **end-to-end** (what ``eval_psg_sg_detection_e2e.py`` writes): ``pred_raw`` (the answer, read in mode 2),
  ``pred_boxes`` (its regions' boxes in pixels), and the image's GT: ``gt_labels`` ``[[s, o, p], ...]``,
  ``gt_object_labels``, ``gt_boxes``. No ``--gt``;
- **GPT scene graphs**: ``id`` and ``updated_sg`` (``{id: {name, bbox, rel: {predicate: [ids]}}}``), written as
  mode-0 text (``text.provision.answers.gpt_text``); the GT comes from ``--gt`` by ``id``. A file is of this kind
  when any line has ``updated_sg``, as a pandas column decides it there.

A line that is not a JSON object is counted and left out (pandas stops on it there); an answer ProVision's script
would stop on (no answer text, boxes that are not lists of 4 numbers, a graph it cannot write out) is counted as
**crashed** and left out. The GT an end-to-end line carries is checked as ``--gt`` is, and refused in one line.
Region results in HDF5 (its Robin runs on SAM regions) are not read: their loader is not in the repository.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sgg_eval.arrays.torch_tensors import as_tensor
from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonio import parse_json, read_bytes
from sgg_eval.text.provision.answers import CRASHED, Parsed, gpt_text, parse_scene_graph
from sgg_eval.text.provision.gt import GroundTruth, check_gt

MAX_ANSWERS_BYTES = 1 << 33
E2E_GT = ("gt_labels", "gt_object_labels", "gt_boxes")


@dataclass(frozen=True)
class Answer:
    """One answer line: its key (``id``; the line number for end-to-end lines), what was read, its boxes and,
    for an end-to-end line, the GT it carries."""

    key: str
    parsed: Parsed
    boxes: list
    gt: GroundTruth | None


def read_provision_answers(path: str | os.PathLike) -> tuple[list[Answer], bool, int]:
    """The answers of ``path`` in file order, whether they are GPT scene graphs, and the unreadable lines."""
    path = os.fspath(path)
    docs, unreadable = [], 0
    for number, line in enumerate(read_bytes(path, "JSONL file of answers", MAX_ANSWERS_BYTES).splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = parse_json(line, path)
        except InputError:
            doc = None
        if isinstance(doc, dict):
            docs.append((number, doc))
        else:
            unreadable += 1
    if not docs:
        raise InputError("no answers: expected one JSON object per line (pred_raw or updated_sg)", path=path)
    gpt = any("updated_sg" in doc for _, doc in docs)
    return [_gpt(number, doc, path) if gpt else _e2e(number, doc, path) for number, doc in docs], gpt, unreadable


def _gpt(number: int, doc: dict, path: str) -> Answer:
    key = doc.get("id")
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise InputError("missing or not an integer or string", path=path, position=number - 1, field="id")
    written = gpt_text(doc["updated_sg"]) if isinstance(doc.get("updated_sg"), dict) else None
    if written is None or as_tensor(written[1]) is None:
        return Answer(str(key), Parsed(CRASHED), [], None)
    return Answer(str(key), parse_scene_graph(written[0], 0), written[1], None)


def _e2e(number: int, doc: dict, path: str) -> Answer:
    where = dict(path=path, position=number - 1, image_id=doc.get("image_id"))
    missing = [f for f in E2E_GT if f not in doc]
    if missing:
        raise InputError(f"an end-to-end answer carries its GT: no {', '.join(missing)} (a GPT scene graph file "
                         "has updated_sg)", field=missing[0], **where)  # fmt: skip
    gt = check_gt(doc["gt_labels"], doc["gt_object_labels"], doc["gt_boxes"], where, E2E_GT)
    boxes = doc.get("pred_boxes")
    if as_tensor(boxes) is None:
        return Answer(str(number), Parsed(CRASHED), [], gt)
    return Answer(str(number), parse_scene_graph(doc.get("pred_raw"), 2), boxes, gt)
