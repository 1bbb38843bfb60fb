"""R1-SGG's answer files (issue 48, ``--protocol r1sgg``): the folder ``sgg_inference_vllm.py`` writes, one JSON
file per image (``<image_id>.json``: ``image_id``, ``response``, ``box_scale``), read by the rules of its
``sgg_gather_preds.py`` (commit e4de64d), which decide what counts as a failure:

1. the response loses every "```" and every ``json``; its answer is the text between the first ``<answer>`` and the
   next ``</answer>``, else everything after an unclosed ``<answer>``, else the whole text; then ``json.loads``
   (Python's: ``NaN`` is a number);
2. the answer must hold ``objects`` and ``relationships``; each object a ``bbox`` of 4 numbers (``true`` counts as
   1) and an ``id`` string; each relationship ``subject``, ``predicate``, ``object`` strings. Anything else, or
   a ``box_scale`` that cannot divide the image's size, makes the whole image a **failure**;
3. boxes are multiplied by ``(W / box_scale[0], H / box_scale[1])`` (default 1000 x 1000: Qwen2-VL's grid), W, H
   the GT image's size; ids and predicates are refined (``_``/``-`` as spaces, stripped, lowercase).

A file that is not a JSON object with an ``image_id`` is counted (``unreadable_files``) and skipped (R1-SGG stops
there); a second file for an image is counted (``duplicate_answers``) and skipped, files taken in name order (R1-SGG
keeps the last in its directory listing's order). Answers for images the GT lacks are refused in one line. An
answer whose boxes scale to NaN or ±inf (a ``box_scale`` of ``NaN`` or ``Infinity``, which Python's JSON reads and
R1-SGG divides by without a word) is scored as R1-SGG scores it and counted (``nonfinite_boxes``).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from glob import escape, glob

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonio import read_bytes
from sgg_eval.text.graphs import refuse_foreign
from sgg_eval.text.r1sgg.rows import refine_id

MAX_FILE_BYTES = 1 << 26  # 64 MiB for one image's answer: far beyond any model's output
DEFAULT_SCALE = (1000.0, 1000.0)


@dataclass
class ParsedAnswer:
    """One image's answer as R1-SGG parses it: refined object ``ids`` with ``boxes`` (lists of 4 floats, scaled to
    the image) and ``relations`` ``(subject id, predicate, object id)``, refined; ``failure`` says why it could
    not be parsed (then both are empty)."""

    image_id: str
    ids: list[str] = field(default_factory=list)
    boxes: list[list[float]] = field(default_factory=list)
    relations: list[tuple[str, str, str]] = field(default_factory=list)
    failure: str | None = None
    # a box_scale or a box coordinate that is not a finite number, which R1-SGG's rules take all the same: its boxes
    # scale to NaN, ±inf or 0, match nothing and count as false detections
    nonfinite: bool = False


@dataclass
class MappedAnswer:
    """An answer's kept objects (``labels`` 1-based, ``boxes`` ``[N, 4]`` float64) and relations (``subjects``,
    ``objects`` positions, ``predicates`` 1-based), in answer order; ``placeholder`` when no object was kept."""

    labels: np.ndarray
    boxes: np.ndarray
    subjects: np.ndarray
    objects: np.ndarray
    predicates: np.ndarray

    @property
    def placeholder(self) -> bool:
        return len(self.labels) == 0


def read_r1sgg_folder(folder: str | os.PathLike, sizes: dict) -> tuple[dict, Counter]:
    """The parsed answers of the folder's ``*json`` files by image id, and counts of what was found; ``sizes``
    maps each GT image id (text) to its ``(width, height)``."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise InputError("expected R1-SGG's folder of per-image answer files (*.json)", path=folder)
    files = sorted(p for p in glob(os.path.join(escape(folder), "*json")) if os.path.isfile(p))
    if not files:
        raise InputError("no answer files (*.json) in this folder", path=folder)
    answers, counts, foreign = {}, Counter(files=len(files)), []
    for path in files:
        try:
            item = json.loads(read_bytes(path, "answer file", MAX_FILE_BYTES).decode("utf-8"))
        except (InputError, ValueError, RecursionError):  # not JSON, not UTF-8, too large: counted, skipped
            item = None
        raw_id = item.get("image_id") if isinstance(item, dict) else None
        if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)):
            counts["unreadable_files"] += 1
            continue
        image_id = str(raw_id)
        if image_id not in sizes:
            foreign.append(image_id)
            continue
        if image_id in answers:
            counts["duplicate_answers"] += 1
            continue
        answers[image_id] = parse_answer(image_id, item, sizes[image_id])
        counts["failures"] += answers[image_id].failure is not None
        counts["nonfinite_boxes"] += answers[image_id].nonfinite
    refuse_foreign(foreign, folder, "images the GT rows do not have")
    return answers, counts


def extract_answer(text: str) -> str:
    """The answer part of a response, as R1-SGG's ``extract_answer_content`` takes it (rule 1; by string search,
    not its regular expression, which takes quadratic time on a response of many unclosed ``<answer>`` tags)."""
    text = text.replace("```", " ").replace("json", " ").strip()
    start = text.find("<answer>")
    if start < 0:
        return text
    end = text.find("</answer>", start + len("<answer>"))
    return (text[start + len("<answer>") : end] if end >= 0 else text[start + len("<answer>") :]).strip()


def parse_answer(image_id: str, item: dict, size: tuple[int, int]) -> ParsedAnswer:
    """Rules 1-3 of the module docstring on one answer file's ``item``."""
    try:
        scale = item["box_scale"] if "box_scale" in item else DEFAULT_SCALE
        sw, sh = size[0] / _number(scale[0]), size[1] / _number(scale[1])
        doc = json.loads(extract_answer(_text(item.get("response"))))
        objects, relations = _items(doc["objects"]), _items(doc["relationships"])
        ids, boxes = [], []
        for obj in objects:
            box = obj["bbox"]
            if not (isinstance(box, list) and len(box) == 4 and all(isinstance(v, (int, float)) for v in box)):
                raise ValueError(f"invalid box {str(box):.60}")
            if not isinstance(obj.get("id"), str):
                raise ValueError("an object without an 'id' string")
            boxes.append([box[0] * sw, box[1] * sh, box[2] * sw, box[3] * sh])
            ids.append(refine_id(obj["id"]))
        rels = [tuple(refine_id(_text(rel[k])) for k in ("subject", "predicate", "object")) for rel in relations]
    except Exception as exc:  # R1-SGG's own rule: whatever goes wrong here makes the image a failure
        return ParsedAnswer(image_id, failure=f"{type(exc).__name__}: {str(exc)[:80]}")
    finite = bool(np.isfinite(np.asarray([*scale[:2], *(v for b in boxes for v in b)], dtype=np.float64)).all())
    return ParsedAnswer(image_id, ids, boxes, rels, nonfinite=bool(boxes) and not finite)


def _text(value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


def _number(value) -> float:
    if not isinstance(value, (int, float)):
        raise TypeError(f"box_scale holds {type(value).__name__}")
    return value


def _items(value) -> list:
    """What R1-SGG's ``for x in value`` walks: a list's items; an empty text or object gives nothing; a non-empty
    text or object gives strings, which fail at the first field lookup, and a number cannot be walked."""
    if isinstance(value, list):
        return value
    if isinstance(value, (str, dict)) and not value:
        return []
    raise TypeError(f"expected a list, got {type(value).__name__}")
