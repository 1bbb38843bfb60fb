"""SGBench prediction JSON (seed 001 §5.1): ``{"version": 1, "images": [{"id", "instances": [{"bbox",
"category"}], "triplets": [[subject, object, predicate], ...]}]}``.

Triplets are ordered by descending confidence and carry no scores, so only rank-based metrics apply
(``score_kind='ranked'``, ``order='stored'``). Categories and predicates are 0-based (our ids are +1);
boxes are read as xyxy pixels. Unlike SGBench itself, bad input is refused, not silently absorbed: negative
or out-of-range indices, out-of-range categories or predicates, non-finite boxes. Duplicate triplets are
dropped (first kept), as SGBench does, and counted.
"""

from __future__ import annotations

import json
import os

import numpy as np

from sgg_eval.data.types import PredImage, Vocabulary
from sgg_eval.errors import InputError


def read_sgbench_json(path: str | os.PathLike, vocab: Vocabulary) -> tuple[dict[int, PredImage], int]:
    """Predictions by image id, and the number of duplicate triplets dropped."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("file not found", path=path)
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc})", path=path) from None
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("images"), list):
        raise InputError("expected {'version': 1, 'images': [...]}", path=path, field="version")
    out: dict[int, PredImage] = {}
    dropped = 0
    c = vocab.num_predicates + 1
    for entry in doc["images"]:
        image_id = entry.get("id")
        if image_id is None:
            raise InputError("image entry without id", path=path, field="id")
        where = dict(path=path, image_id=image_id)
        inst = entry.get("instances", [])
        try:
            boxes = np.array([i["bbox"] for i in inst], dtype=np.float64).reshape(-1, 4)
            cats = np.array([i["category"] for i in inst], dtype=np.int64)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"bad instance ({exc})", field="instances", **where) from None
        if not np.all(np.isfinite(boxes)):
            raise InputError("non-finite box", field="instances.bbox", **where)
        if np.any(cats < 0) or np.any(cats >= vocab.num_objects):
            raise InputError(f"category outside [0, {vocab.num_objects - 1}]", field="instances.category", **where)
        trip = np.array(entry.get("triplets", []), dtype=np.int64).reshape(-1, 3)
        if np.any(trip[:, :2] < 0) or np.any(trip[:, :2] >= len(inst)):
            raise InputError(f"instance index outside [0, {len(inst) - 1}]", field="triplets", **where)
        if np.any(trip[:, 2] < 0) or np.any(trip[:, 2] >= vocab.num_predicates):
            raise InputError(f"predicate outside [0, {vocab.num_predicates - 1}]", field="triplets", **where)
        _, first = np.unique(trip, axis=0, return_index=True)
        keep = np.sort(first)
        dropped += len(trip) - len(keep)
        trip = trip[keep]
        scores = np.zeros((len(trip), c), dtype=np.float32)
        scores[np.arange(len(trip)), trip[:, 2] + 1] = 1.0  # one-hot: GC picks the triplet's predicate
        if int(image_id) in out:
            raise InputError("image listed twice", field="id", **where)
        out[int(image_id)] = PredImage(int(image_id), boxes.astype(np.float32), cats + 1,
                                       np.ones(len(inst), dtype=np.float32), trip[:, :2], scores)
    return out, dropped
