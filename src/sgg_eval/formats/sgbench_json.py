"""SGBench prediction JSON (Lorenz et al. 2024 §5.1): ``{"version": 1, "images": [{"id", "instances": [{"bbox",
"category"}], "triplets": [[subject, object, predicate], ...]}]}``.

Triplets are ordered by descending confidence and carry no scores, so only rank-based metrics apply
(``score_kind='ranked'``, ``order='stored'``). Categories and predicates are 0-based (our ids are +1);
boxes are read as xyxy pixels. Unlike SGBench itself, bad input is refused, not silently absorbed: negative
or out-of-range indices, out-of-range categories or predicates, non-finite boxes. Duplicate triplets are
dropped (first kept), as SGBench does, and counted.
"""

from __future__ import annotations

import os

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import PredImage, Vocabulary, check_xyxy
from sgg_eval.io.jsonio import json_array, load_json


def read_sgbench_json(path: str | os.PathLike, vocab: Vocabulary) -> tuple[dict[int, PredImage], int]:
    """Predictions by image id, and the number of duplicate triplets dropped."""
    path = os.fspath(path)
    doc = load_json(path)
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("images"), list):
        raise InputError("expected {'version': 1, 'images': [...]}", path=path, field="version")
    out: dict[int, PredImage] = {}
    dropped = 0
    for position, entry in enumerate(doc["images"]):
        image, duplicates = _image(entry, position, vocab, path)
        if image.image_id in out:
            raise InputError("image listed twice", path=path, image_id=image.image_id, position=position, field="id")
        out[image.image_id] = image
        dropped += duplicates
    return out, dropped


def _image(entry, position: int, vocab: Vocabulary, path: str) -> tuple[PredImage, int]:
    """One image entry, checked field by field, and how many duplicate triplets it dropped."""
    if not isinstance(entry, dict):
        raise InputError("image entry is not an object", path=path, position=position, field="images")
    image_id = entry.get("id")
    if not isinstance(image_id, int) or isinstance(image_id, bool):
        raise InputError(f"image id {image_id!r:.40} is not an integer", path=path, position=position, field="id")
    if not -(1 << 63) <= image_id < 1 << 63:  # a split store's ids are 64-bit: no GT image can have it
        raise InputError(f"image id {image_id:.3g} is past 64 bits", path=path, position=position, field="id")
    where = dict(path=path, image_id=image_id, position=position)
    inst = entry.get("instances", [])
    if not isinstance(inst, list) or not all(isinstance(i, dict) for i in inst):
        raise InputError("expected a list of {'bbox', 'category'} objects", field="instances", **where)
    boxes = _numbers([i.get("bbox") for i in inst], (len(inst), 4), np.float64, "instances.bbox", where)
    cats = _numbers([i.get("category") for i in inst], (len(inst),), np.int64, "instances.category", where)
    check_xyxy(boxes, "instances.bbox", where)
    if np.any(cats < 0) or np.any(cats >= vocab.num_objects):
        raise InputError(f"category outside [0, {vocab.num_objects - 1}]", field="instances.category", **where)
    triplets = entry.get("triplets", [])
    trip = _numbers(triplets, (len(triplets) if isinstance(triplets, list) else -1, 3), np.int64, "triplets", where)
    if np.any(trip[:, :2] < 0) or np.any(trip[:, :2] >= len(inst)):
        raise InputError(f"instance index outside [0, {len(inst) - 1}]", field="triplets", **where)
    if np.any(trip[:, 2] < 0) or np.any(trip[:, 2] >= vocab.num_predicates):
        raise InputError(f"predicate outside [0, {vocab.num_predicates - 1}]", field="triplets", **where)
    _, first = np.unique(trip, axis=0, return_index=True)
    keep = np.sort(first)
    trip_kept = trip[keep]
    scores = np.zeros((len(trip_kept), vocab.num_predicates + 1), dtype=np.float32)
    scores[np.arange(len(trip_kept)), trip_kept[:, 2] + 1] = 1.0  # one-hot: GC picks the triplet's predicate
    objects = np.ones(len(inst), dtype=np.float32)
    image = PredImage(int(image_id), boxes.astype(np.float32), cats + 1, objects, trip_kept[:, :2], scores)
    return image, len(trip) - len(keep)


def _numbers(value, shape: tuple[int, ...], dtype, field: str, where: dict) -> np.ndarray:
    return json_array(value, shape, integer=dtype == np.int64, field=field, where=where)
