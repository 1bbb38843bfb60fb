"""COCO box average precision over whole arrays (the detector mAP of SGDet), without an object per box.

The rules are the COCO API's (pycocotools ``COCOeval``, bbox, area range "all", ``maxDets = 100``, no crowd
boxes), which faster-coco-eval reimplements and the tests use as the oracle:

- IoU from xywh boxes: ``inter = max(0, min(x+w) − max(x)) · max(0, min(y+h) − max(y))``,
  ``iou = inter / (w_d h_d + w_g h_g − inter)``, in float64;
- per image and class, the detections by score, descending (ties: file order), at most 100 of them;
  each in turn takes, among the GT boxes not yet taken at this IoU threshold t, the one of highest IoU
  ≥ t (ties: the later GT box);
- per class, every image's detections by score (ties: image id, then the order above): cumulative
  true/false positives give recall ``tp / n_gt`` and precision ``tp / (tp + fp + ε)``; precision is made
  non-increasing from the right and read at the 101 recall thresholds 0, 0.01, …, 1 (``searchsorted``,
  left; 0 past the last detection); AP(class, t) is the mean of those 101 values;
- classes without GT boxes are left out; ``AP@50`` averages AP(class, 0.5) over classes, ``AP`` averages
  over classes and the ten thresholds 0.50:0.05:0.95.

Per image and class the matching is greedy, so it runs in rounds: round k matches the k-th detection of
every (image, class) group at once. Matching never looks beyond an image, so it runs block by block
(:func:`match`), and only what the AP needs of each kept detection travels to the end (:class:`Matched`,
~24 bytes per detection); :func:`average_precision` then ranks every image's detections per class.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sgg_eval.arrays.segments import expand_segments
from sgg_eval.metrics.iou import coco_iou

IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
RECALL_THRESHOLDS = np.linspace(0.0, 1.0, 101)
MAX_DETS = 100


def _segment_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """For keys sorted into groups, each element's group start index."""
    new = np.ones(len(sorted_keys), dtype=bool)
    new[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return np.maximum.accumulate(np.where(new, np.arange(len(sorted_keys)), 0))


@dataclass
class Matched:
    """The kept detections of some images (the first ``MAX_DETS`` per image and class, by score): image id,
    class, score, rank within their (image, class) group, and ``tp`` bit t set where the detection matched a
    GT box at ``IOU_THRESHOLDS[t]``; ``n_gt[c]`` counts the GT boxes of class c."""

    image: np.ndarray
    cls: np.ndarray
    score: np.ndarray
    rank: np.ndarray
    tp: np.ndarray
    n_gt: np.ndarray


def coco_box_ap(gt: np.ndarray, det: np.ndarray) -> tuple[float, float]:
    """``(AP over IoU 0.50:0.95, AP@50)``. ``gt`` rows ``(image, x, y, w, h, class)``, ``det`` rows
    ``(image, x, y, w, h, class, score)``, each in file order. NaN when no class has a GT box."""
    return average_precision([match(gt, det)])


def match(gt: np.ndarray, det: np.ndarray, void: np.ndarray | None = None) -> Matched:
    """COCO's greedy matching of the detections of some whole images (rows as in :func:`coco_box_ap`). A GT box
    flagged in ``void`` is matched as any other, but the detection that takes it is not a true positive: the COCO
    API reads a match to the annotation whose id is 0 as no match (R1-SGG numbers its GT annotations from 0)."""
    n_classes = int(max(gt[:, 5].max(initial=0), det[:, 5].max(initial=0))) + 1
    ids = np.unique(np.concatenate([gt[:, 0], det[:, 0]]))
    g_key = np.searchsorted(ids, gt[:, 0]).astype(np.int64) * n_classes + gt[:, 5].astype(np.int64)
    d_key = np.searchsorted(ids, det[:, 0]).astype(np.int64) * n_classes + det[:, 5].astype(np.int64)
    # each (image, class) group's detections by score, descending, stable; keep the first MAX_DETS
    order = np.lexsort((np.arange(len(det)), -det[:, 6], d_key))
    rank = np.arange(len(order)) - _segment_starts(d_key[order])
    kept = np.sort(order[rank < MAX_DETS])
    d_rank = np.full(len(det), -1, dtype=np.int64)
    d_rank[order] = rank
    # (detection, GT) pairs of the same group, with their IoU
    g_order = np.argsort(g_key, kind="stable")
    lo = np.searchsorted(g_key[g_order], d_key[kept], "left")
    hi = np.searchsorted(g_key[g_order], d_key[kept], "right")
    which, within = expand_segments(hi - lo)
    pd = kept[which]
    pg = g_order[lo[which] + within]
    iou = coco_iou(det[pd, 1:5], gt[pg, 1:5])
    tp = np.zeros(len(det), dtype=np.uint16)
    for t, threshold in enumerate(IOU_THRESHOLDS):
        taken = np.zeros(len(gt), dtype=bool)
        eligible_at = iou >= min(threshold, 1 - 1e-10)
        for k in range(int(d_rank[pd].max(initial=-1)) + 1):
            sel = np.flatnonzero(eligible_at & (d_rank[pd] == k) & ~taken[pg])
            if len(sel) == 0:
                continue
            # per detection: the highest IoU, ties to the later GT box (the last in this order)
            sel = sel[np.lexsort((pg[sel], iou[sel], pd[sel]))]
            last = np.ones(len(sel), dtype=bool)
            last[:-1] = pd[sel][1:] != pd[sel][:-1]
            taken[pg[sel[last]]] = True
            credited = sel[last] if void is None else sel[last][~void[pg[sel[last]]]]
            tp[pd[credited]] |= np.uint16(1 << t)
    return Matched(
        det[kept, 0],
        det[kept, 5].astype(np.int32),
        det[kept, 6],
        d_rank[kept].astype(np.int16),
        tp[kept],
        np.bincount(gt[:, 5].astype(np.int64)),
    )


def average_precision(parts: list[Matched]) -> tuple[float, float]:
    """``(AP over IoU 0.50:0.95, AP@50)`` of the matched detections of every image, in any grouping of the
    images into parts. Per class, detections by score, descending; ties by image id (COCO visits images by
    sorted id), then by rank within the image."""
    classes = np.concatenate([p.cls for p in parts]).astype(np.int64)
    order = _detection_order(
        classes,
        np.concatenate([p.score for p in parts]),
        np.concatenate([p.image for p in parts]),
        np.concatenate([p.rank for p in parts]),
    )
    tp_bits, classes = np.concatenate([p.tp for p in parts])[order], classes[order]
    width = max([len(p.n_gt) for p in parts] + [int(classes.max(initial=0)) + 1])
    n_gt = sum(np.pad(p.n_gt, (0, width - len(p.n_gt))) for p in parts)
    with_gt = np.flatnonzero(n_gt)
    starts = np.searchsorted(classes, with_gt, "left")
    ends = np.searchsorted(classes, with_gt, "right")
    ap = np.zeros((len(IOU_THRESHOLDS), len(with_gt)))
    shifts = np.arange(len(IOU_THRESHOLDS), dtype=np.uint16)[:, None]
    for j, (c, s, e) in enumerate(zip(with_gt.tolist(), starts.tolist(), ends.tolist())):
        if s == e:
            continue  # GT boxes but no detection: AP 0
        tp_all = (tp_bits[None, s:e] >> shifts) & np.uint16(1) == 1  # [IoU threshold, detection of class c]
        tp = np.cumsum(tp_all, axis=1).astype(np.float64)
        fp = np.arange(1, e - s + 1) - tp  # the false positives so far: exact integers, as their own cumsum
        recall = tp / n_gt[c]
        precision = np.maximum.accumulate((tp / (fp + tp + np.spacing(1)))[:, ::-1], axis=1)[:, ::-1]
        # per threshold, where each recall threshold falls; then every threshold's 101 precisions at once, a
        # contiguous [threshold, 101] array whose row means sum each row as a 1-D mean does
        at = np.stack([np.searchsorted(recall[t], RECALL_THRESHOLDS, side="left") for t in range(len(recall))])
        picked = precision[np.arange(len(recall))[:, None], np.minimum(at, e - s - 1)]
        ap[:, j] = np.where(at < e - s, picked, 0.0).mean(axis=1)
    if len(with_gt) == 0:
        return float("nan"), float("nan")
    return float(ap.mean()), float(ap[0].mean())


def _detection_order(classes: np.ndarray, score: np.ndarray, image: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """By class, score descending, image id, rank (COCO's order within a class; ties by image, then rank)."""
    return np.lexsort((rank, image, -score, classes))
