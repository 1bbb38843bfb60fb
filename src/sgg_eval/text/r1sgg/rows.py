"""R1-SGG's ground truth (issue 48, ``--protocol r1sgg``): the rows of its Hub test sets
(``JosephZ/vg150_val_sgg_prompt``, ``JosephZ/psg_test_sg``) saved as a local JSON list or JSONL file, one row per image:

    {"image_id": "2343", "width": 800, "height": 600,
     "objects": "[{\\"id\\": \\"man.1\\", \\"bbox\\": [x1, y1, x2, y2]}, ...]",
     "relationships": "[{\\"subject\\": \\"man.1\\", \\"predicate\\": \\"on\\", \\"object\\": \\"horse.2\\"}]"}

- ``objects`` and ``relationships`` are JSON text, as on the Hub (a list is taken too); a box is in the image's
  pixels; an object's class is its id's text before the first ``.``, by its dataset's raw name (PSG:
  ``door-stuff.3``), which decides the dataset: VG150 or PSG (a file whose names fit both is refused);
- ``width`` and ``height`` are the image's size, which the Hub rows hold as the PIL image (``row["image"].size``):
  ``docs/text_graphs.md`` shows the two lines that save the rows this way;
- the image id is read as text, as R1-SGG's answers and gathered file key it.

Refused in one line naming the file, the image and the field: a row that is not an object with these fields, a
repeated image id or object id, a class or predicate the dataset does not have, a box that is not 4 finite numbers
with ``x2 >= x1``, ``y2 >= y1``, a relation naming an object the image does not have.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.psg_facts import psg_facts
from sgg_eval.data.types import GTImage, Vocabulary
from sgg_eval.data.vg150_facts import vg150_vocabulary
from sgg_eval.io.jsonio import parse_json, read_bytes

MAX_ROWS_BYTES = 1 << 32


@dataclass
class RowImage:
    """One GT row: object ``ids`` as R1-SGG refines them (``man.1``), ``boxes`` ``[N, 4]`` float64 as written,
    ``labels`` (1-based class ids), ``rels`` ``[M, 3]`` (subject, object, 1-based predicate); ``integer_boxes`` when
    every coordinate was written as an integer (R1-SGG then computes its +1-pixel IoU in float64, else float32)."""

    image_id: str
    width: int
    height: int
    ids: tuple[str, ...]
    boxes: np.ndarray
    labels: np.ndarray
    rels: np.ndarray
    integer_boxes: bool

    def gt_image(self) -> GTImage:
        return GTImage(self.image_id, self.width, self.height, self.boxes, self.labels, self.rels)


def psg_vocabulary() -> Vocabulary:
    facts = psg_facts()
    return Vocabulary(tuple(facts["object_classes"]), tuple(facts["predicate_classes"]))


def read_r1sgg_rows(path: str | os.PathLike) -> tuple[list[RowImage], Vocabulary, str]:
    """The rows of ``path`` (JSON list or JSONL), their vocabulary and dataset name (``vg150`` or ``psg``)."""
    path = os.fspath(path)
    text = read_bytes(path, "R1-SGG GT rows", MAX_ROWS_BYTES)
    stripped = text.lstrip()
    if stripped.startswith(b"["):
        rows = parse_json(text, path)
    else:
        rows = [parse_json(line, path) for line in text.splitlines() if line.strip()]
    if not isinstance(rows, list) or not rows:
        raise InputError("expected a JSON list of rows or one row per line, and at least one row", path=path)
    parsed = [_row(row, path, i) for i, row in enumerate(rows)]
    vocab, dataset = _dataset(parsed, path)
    seen, images = set(), []
    for i, (image_id, size, objects, rels) in enumerate(parsed):
        if image_id in seen:
            raise InputError("repeated image id", path=path, image_id=image_id, position=i, field="image_id")
        seen.add(image_id)
        images.append(_image(image_id, size, objects, rels, vocab, dict(path=path, image_id=image_id, position=i)))
    return images, vocab, dataset


def _row(row, path: str, i: int):
    where = dict(path=path, position=i)
    if not isinstance(row, dict):
        raise InputError("a row must be a JSON object", **where)
    image_id = row.get("image_id")
    if isinstance(image_id, bool) or not isinstance(image_id, (int, str)) or str(image_id) == "":
        raise InputError("missing or not a string or integer", field="image_id", **where)
    where["image_id"] = image_id = str(image_id)
    size = []
    for key in ("width", "height"):
        value = row.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InputError("missing or not a positive integer (the image's size)", field=key, **where)
        size.append(value)
    parts = []
    for key in ("objects", "relationships"):
        value = row.get(key)
        if isinstance(value, str):
            value = parse_json(value.encode("utf-8"), path)
        if not isinstance(value, list):
            raise InputError("must be a list (or JSON text of one)", field=key, **where)
        parts.append(value)
    return image_id, tuple(size), parts[0], parts[1]


def _dataset(parsed, path: str) -> tuple[Vocabulary, str]:
    """VG150 or PSG, whichever has every class and predicate the rows name."""
    classes = {str(o.get("id", "")).split(".")[0] for _, _, objs, _ in parsed for o in objs if isinstance(o, dict)}
    predicates = {str(r.get("predicate")) for _, _, _, rels in parsed for r in rels if isinstance(r, dict)}
    fits = [
        (vocab, name)
        for vocab, name in ((vg150_vocabulary(), "vg150"), (psg_vocabulary(), "psg"))
        if classes <= set(vocab.object_classes) and predicates <= set(vocab.predicate_classes)
    ]
    if len(fits) != 1:
        why = "fit both VG150 and PSG" if fits else "are neither all VG150's nor all PSG's"
        raise InputError(f"the rows' class and predicate names {why}", path=path)
    return fits[0]


def _image(image_id: str, size, objects: list, rels: list, vocab: Vocabulary, where: dict) -> RowImage:
    class_id = {c: i for i, c in enumerate(vocab.object_classes, 1)}
    ids, boxes, labels, integer = [], [], [], True
    for obj in objects:
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            raise InputError("an object must have an 'id' string", field="objects", **where)
        box = obj.get("bbox")
        if not (isinstance(box, list) and len(box) == 4 and all(_finite(v) for v in box)):
            raise InputError(f"object {obj['id']!r:.40}: bbox must be 4 finite numbers", field="objects", **where)
        if box[2] < box[0] or box[3] < box[1]:
            raise InputError(f"object {obj['id']!r:.40}: bbox has x2 < x1 or y2 < y1", field="objects", **where)
        ids.append(refine_id(obj["id"]))
        boxes.append(box)
        labels.append(class_id[obj["id"].split(".")[0]])
        integer &= all(isinstance(v, int) for v in box)
    if len(set(ids)) != len(ids):
        raise InputError("two objects have the same id", field="objects", **where)
    position = {k: i for i, k in enumerate(ids)}
    predicate_id = {p: i for i, p in enumerate(vocab.predicate_classes, 1)}
    rows = []
    for rel in rels:
        if not isinstance(rel, dict):
            raise InputError("a relationship must be an object", field="relationships", **where)
        ends = [position.get(refine_id(rel[k])) if isinstance(rel.get(k), str) else None for k in ("subject", "object")]
        if None in ends:
            raise InputError("a relationship names an object the image does not have", field="relationships", **where)
        rows.append([ends[0], ends[1], predicate_id[rel["predicate"]]])
    return RowImage(
        image_id, size[0], size[1], tuple(ids), np.array(boxes, dtype=np.float64).reshape(-1, 4),
        np.array(labels, dtype=np.int64), np.array(rows, dtype=np.int64).reshape(-1, 3), integer,
    )  # fmt: skip


def refine_id(text: str) -> str:
    """An object id as R1-SGG refines it: ``_`` and ``-`` read as spaces, stripped, lowercase (no space folding)."""
    return text.replace("_", " ").replace("-", " ").strip().lower()


def _finite(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
