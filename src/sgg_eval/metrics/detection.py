"""The detector's box mAP for SGDet, next to the relation metrics (as Maelic/SGG-Benchmark reports it).

COCO-style average precision of the predicted objects against the GT objects of every image of the file
(images without relations included), computed by faster-coco-eval, a C++ reimplementation of the COCO API
(pycocotools) with the same results: box AP is a standard, so it is not hand-written here. We chose it over
pycocotools for speed (a VG150 test split has ~2 M detections) at the same install weight (one ~0.6 MB
wheel, numpy only).

COCO conventions: boxes xyxy → xywh with ``w = x2 − x1``, ``h = y2 − y1``, ``area = w·h``, ``iscrowd = 0``;
one category per object class; the detection score is the object score; ``maxDets = 100``.
``det_mAP@50`` is AP at IoU 0.5, ``det_mAP`` the mean over IoU 0.50:0.05:0.95 (COCO's "mAP").
"""

from __future__ import annotations

import numpy as np

DET_METRICS = ("det_mAP@50", "det_mAP")


class BoxCollector:
    """The GT and predicted objects of a block of images, as flat arrays (``add`` per image, ``merge`` per
    block, in block order so the result is the same for any number of workers)."""

    def __init__(self) -> None:
        self.gt: list[np.ndarray] = []    # rows: image id, x1, y1, x2, y2, label
        self.det: list[np.ndarray] = []   # rows: image id, x1, y1, x2, y2, label, score
        self.image_ids: list[int] = []

    def add(self, gt, pred) -> None:
        self.image_ids.append(int(gt.image_id))
        ids = np.full((len(gt.labels), 1), gt.image_id, dtype=np.float64)
        self.gt.append(np.hstack([ids, gt.boxes, gt.labels[:, None]]))
        ids = np.full((len(pred.labels), 1), gt.image_id, dtype=np.float64)
        self.det.append(np.hstack([ids, pred.boxes, pred.labels[:, None], pred.obj_scores[:, None]]))

    def merge(self, other: BoxCollector) -> None:
        self.gt += other.gt
        self.det += other.det
        self.image_ids += other.image_ids


def _xywh(rows: np.ndarray) -> np.ndarray:
    return np.column_stack([rows[:, 1], rows[:, 2], rows[:, 3] - rows[:, 1], rows[:, 4] - rows[:, 2]])


def box_map(boxes: BoxCollector, num_classes: int) -> tuple[dict[str, float | None], list[str]]:
    """``det_mAP@50`` and ``det_mAP`` of the collected objects, and notes (why a value is null)."""
    import contextlib
    import io

    from faster_coco_eval import COCO, COCOeval_faster

    gt = np.vstack(boxes.gt) if boxes.gt else np.zeros((0, 6))
    det = np.vstack(boxes.det) if boxes.det else np.zeros((0, 7))
    if len(gt) == 0:
        return dict.fromkeys(DET_METRICS), ["detector mAP needs GT objects; the evaluated images have none"]
    xywh = _xywh(gt)
    dataset = {
        "images": [{"id": i} for i in boxes.image_ids],
        "categories": [{"id": c} for c in range(1, num_classes + 1)],
        "annotations": [{"id": k + 1, "image_id": int(g[0]), "category_id": int(g[5]), "bbox": list(map(float, b)),
                         "area": float(b[2] * b[3]), "iscrowd": 0} for k, (g, b) in enumerate(zip(gt, xywh))],
    }
    with contextlib.redirect_stdout(io.StringIO()):  # the library prints its summary table
        coco_gt = COCO(dataset)
        if len(det) == 0:
            return {"det_mAP@50": 0.0, "det_mAP": 0.0}, ["no predicted objects: detector mAP is 0"]
        # loadRes's array layout: image id, x, y, w, h, score, category
        coco_det = coco_gt.loadRes(np.column_stack([det[:, 0], _xywh(det), det[:, 6], det[:, 5]]))
        ev = COCOeval_faster(coco_gt, coco_det, "bbox")
        ev.params.maxDets = [1, 10, 100]
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    ap, ap50 = float(ev.stats[0]), float(ev.stats[1])
    return {"det_mAP@50": ap50, "det_mAP": ap}, []
