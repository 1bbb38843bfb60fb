"""The detector's box mAP for SGDet, next to the relation metrics (as Maelic/SGG-Benchmark reports it).

COCO-style average precision of the predicted objects against the GT objects of every image of the file
(images without relations included), computed over whole arrays by ``box_ap`` with the COCO API's rules
(each block's images matched where they are ranked, the AP over all of them at the end); the tests check
it against faster-coco-eval, a C++ reimplementation of the COCO API. The library itself is not used here:
it builds a Python dict per box (~0.3 MB of heap per SGDet image, half of the SGDet time).

COCO conventions: boxes xyxy → xywh with ``w = x2 − x1``, ``h = y2 − y1``, ``area = w·h``, ``iscrowd = 0``;
one category per object class; the detection score is the object score; ``maxDets = 100``.
``det_mAP@50`` is AP at IoU 0.5, ``det_mAP`` the mean over IoU 0.50:0.05:0.95 (COCO's "mAP").
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sgg_eval.data.image_ids import image_order_key
from sgg_eval.metrics.box_ap import Matched, average_precision, match
from sgg_eval.metrics.names import DETECTOR

DET_METRICS = DETECTOR


class BoxCollector:
    """The GT and predicted objects of some images (``add``; a task of blocks), matched as COCO matches them
    when they are done (``finish``: what the AP needs of each kept detection, ~24 bytes, instead of the
    boxes), then merged; matching never looks beyond an image, so the result is the same for any grouping
    of the images and any number of workers."""

    def __init__(self) -> None:
        self.gt: list[np.ndarray] = []  # rows: image id, x1, y1, x2, y2, label (until finish)
        self.det: list[np.ndarray] = []  # rows: image id, x1, y1, x2, y2, label, score (until finish)
        self.parts: list[Matched] = []
        self.num_gt = self.num_det = 0

    def add(self, images: list) -> None:
        """The objects of (GT, prediction) ``images``, as rows of one array each (built per call, not per image)."""
        if not images:
            return
        # ids group the rows by image and break score ties in COCO's order of image ids (text ids too: GQA)
        ids = np.array([image_order_key(gt.image_id) for gt, _ in images], dtype=np.float64)
        gts, preds = [gt for gt, _ in images], [pred for _, pred in images]
        self.gt.append(
            np.column_stack(
                [
                    np.repeat(ids, [len(g.labels) for g in gts]),
                    np.concatenate([g.boxes for g in gts]).reshape(-1, 4),
                    np.concatenate([g.labels for g in gts]),
                ]
            )
        )
        self.det.append(
            np.column_stack(
                [
                    np.repeat(ids, [len(p.labels) for p in preds]),
                    np.concatenate([p.boxes for p in preds]).reshape(-1, 4),
                    np.concatenate([p.labels for p in preds]),
                    np.concatenate([p.obj_scores for p in preds]),
                ]
            )
        )

    def finish(self) -> BoxCollector:
        """Match the objects added so far; keep only the result."""
        gt = np.vstack(self.gt) if self.gt else np.zeros((0, 6))
        det = np.vstack(self.det) if self.det else np.zeros((0, 7))
        self.gt, self.det = [], []
        self.num_gt, self.num_det = self.num_gt + len(gt), self.num_det + len(det)
        if len(gt) or len(det):
            self.parts.append(
                match(
                    np.column_stack([gt[:, 0], _xywh(gt), gt[:, 5]]),
                    np.column_stack([det[:, 0], _xywh(det), det[:, 5], det[:, 6]]),
                )
            )
        return self

    def merge(self, other: BoxCollector, shift: int = 0) -> None:
        """Append ``other``'s images; ``shift`` is added to their image ids (positions: ``api.Evaluator.merge``)."""
        other.finish()
        self.parts += [replace(part, image=part.image + shift) for part in other.parts] if shift else other.parts
        self.num_gt, self.num_det = self.num_gt + other.num_gt, self.num_det + other.num_det


def _xywh(rows: np.ndarray) -> np.ndarray:
    return np.column_stack([rows[:, 1], rows[:, 2], rows[:, 3] - rows[:, 1], rows[:, 4] - rows[:, 2]])


def box_map(boxes: BoxCollector) -> tuple[dict[str, float | None], list[str]]:
    """``det_mAP@50`` and ``det_mAP`` of the collected objects, and notes (why a value is null)."""
    boxes.finish()
    if boxes.num_gt == 0:
        return dict.fromkeys(DET_METRICS), ["detector mAP needs GT objects; the evaluated images have none"]
    if boxes.num_det == 0:
        return dict.fromkeys(DET_METRICS, 0.0), ["no predicted objects: detector mAP is 0"]
    ap, ap50 = average_precision(boxes.parts)
    return dict(zip(DET_METRICS, (ap50, ap), strict=True)), []
