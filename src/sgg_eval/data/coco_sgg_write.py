"""Split stores written as SGG-Benchmark's COCO-style files (``<folder>/<split>/_annotations.coco.json``), the layout
:mod:`sgg_eval.data.coco_sgg` reads: one interchange format for every box dataset sgg-eval reads (VG150, GQA,
OIv6, PSG's boxes, the simulated benchmark).

What is written, per image of the store in its order: ``images`` ``{id, file_name: "<id>.jpg", width, height}``
(VG150's and GQA's image files are named so; the store keeps no file name), ``annotations`` ``{id, image_id,
category_id, bbox [x1, y1, x2 - x1, y2 - y1], area, iscrowd: 0}`` numbered 1.. across the file, ``rel_annotations``
``{id, image_id, subject_id, predicate_id, object_id}`` numbered 1.., ``categories`` and ``rel_categories`` with
ids 1..C in the store's order. The widths are computed in float64 from the float32 corners, so ``x + w`` gives
back the corner exactly. Reading the files back (``split --coco-sgg --keep-all-relations``) gives the store back,
except what the format's loader rules change: an image without a relation is dropped, and a box past the border
is clipped to ``[0, W] x [0, H]``. The writer counts both, so the user sees them before reading the files back.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.coco_sgg import ANNOTATIONS
from sgg_eval.data.store import SplitStore
from sgg_eval.io.atomic import atomic_outputs


@dataclass(frozen=True)
class Written:
    """One file written: its path, images, images without a relation, boxes past the border."""

    path: str
    images: int
    without_relations: int
    past_the_border: int


def export_coco_sgg(stores: list[str], folder: str) -> list[Written]:
    """Write each split store in ``stores`` to ``folder/<its split>/_annotations.coco.json``; all files or none."""
    splits = {}
    for path in stores:
        with SplitStore(path) as store:
            split = store.meta.split
        if split in splits:
            raise InputError(f"two stores of the split {split!r:.20} ({splits[split]} and {path})", path=path)
        splits[split] = path
    outputs = [os.path.join(folder, split, ANNOTATIONS) for split in splits]
    written = []
    with atomic_outputs(outputs) as temps:
        for (split, path), out, tmp in zip(splits.items(), outputs, temps):
            with SplitStore(path) as store:
                doc, without, past = _document(store)
            tmp.write_text(json.dumps(doc, separators=(",", ":"), allow_nan=False))
            written.append(Written(out, len(doc["images"]), without, past))
    return written


def _document(store: SplitStore) -> tuple[dict, int, int]:
    vocab = store.meta.vocab
    images, annotations, relations = [], [], []
    without = past = 0
    for gt in store:
        images.append({"id": _plain(gt.image_id), "file_name": f"{gt.image_id}.jpg", "width": gt.width,
                       "height": gt.height})  # fmt: skip
        first = len(annotations) + 1
        boxes = gt.boxes.astype(np.float64)
        past += int(np.sum((boxes[:, 2] > gt.width) | (boxes[:, 3] > gt.height) | (boxes[:, :2] < 0).any(axis=1)))
        for k, (box, label) in enumerate(zip(boxes.tolist(), gt.labels.tolist())):
            w, h = box[2] - box[0], box[3] - box[1]
            annotations.append({"id": first + k, "image_id": _plain(gt.image_id), "category_id": label,
                                "bbox": [box[0], box[1], w, h], "area": w * h, "iscrowd": 0})  # fmt: skip
        for s, o, p in gt.rels.tolist():
            relations.append({"id": len(relations) + 1, "image_id": _plain(gt.image_id), "subject_id": first + s,
                              "predicate_id": p, "object_id": first + o})  # fmt: skip
        without += not len(gt.rels)
    doc = {
        "info": {"description": f"{store.meta.dataset} {store.meta.split}, written by sgg-eval from {store.path}"},
        "images": images,
        "annotations": annotations,
        "rel_annotations": relations,
        "categories": [{"id": i, "name": n, "supercategory": "object"} for i, n in enumerate(vocab.object_classes, 1)],
        "rel_categories": [{"id": i, "name": n} for i, n in enumerate(vocab.predicate_classes, 1)],
    }
    return doc, without, past


def _plain(image_id):
    """An image id as JSON holds it (a store may give numpy integers)."""
    return image_id if isinstance(image_id, str) else int(image_id)
