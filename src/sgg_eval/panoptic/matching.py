"""Panoptic SGG instance matching: every IoU of an image, and the two instance assignments (protocol ``sgbench``
and ``sgbench-paper``; ``openpsg`` matches per triplet, ``panoptic_ranks.triplet_ok``).

Mask IoU is ``|P ∧ G| / |P ∨ G|`` over the whole image (void pixels count in the union; an empty union is 0).
PSG GT segments do not overlap, so one ``bincount`` of the predicted masks' pixels by GT segment gives every
intersection of an image: O(P·H·W), not O(P·G·H·W). Box IoU: xyxy, area ``(x2 − x1)(y2 − y1)``; a 0/0 IoU (two
empty boxes) is 0, never a match (sgbench takes its NaN for one).

- ``assign`` (sgbench 1.0.0's code): a predicted instance maps to the same-class GT instance of highest IoU if
  that IoU ≥ 0.5; ties go to the lowest GT index; any number of predictions may map to one GT instance.
- ``assign_one_to_one`` (the SGBench paper's Algorithm 2): the same best same-class GT instance, kept only if
  its IoU is > 0.5 (strictly); then each GT instance keeps the one prediction of highest IoU among those whose
  best it is (the earliest on ties), and the others map to nothing (they do not fall back to a second choice).

``pred2gt[q]`` is −1 for an unmatched prediction.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.defaults import IOU_THRESHOLD as IOU  # the PSG protocols' threshold (sgbench, its paper, OpenPSG)
from sgg_eval.metrics.iou import sgbench_box_iou


def match_masks(seg_index: np.ndarray, gt_labels: np.ndarray, masks: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``pred2gt[P]``: each predicted mask's GT segment (−1: none). ``seg_index [H, W]`` gives each pixel's GT
    segment (``len(gt_labels)``: none), ``masks [P, H, W]`` the layers (non-zero: in the mask)."""
    return assign(mask_ious(seg_index, len(gt_labels), masks), labels, gt_labels)


def mask_ious(
    seg_index: np.ndarray,
    g: int,
    masks: np.ndarray,
    labels: np.ndarray | None = None,
    gt_labels: np.ndarray | None = None,
    gt_area: np.ndarray | None = None,
) -> np.ndarray:
    """``[P, G]`` IoU of every predicted layer ``masks [P, H, W]`` (non-zero: in the mask) with every GT segment;
    ``seg_index [H, W]``: each pixel's GT segment, ``g`` where none (``gt_area``: each segment's pixels, when
    known). Each layer is cropped to the rows and columns it covers (found 8 pixels at a time, as uint64
    words); one ``bincount`` of the GT segments under its pixels gives all its intersections (GT segments do not
    overlap). Given ``labels`` and ``gt_labels``, only same-class pairs are computed, the others left 0: every
    protocol compares a prediction only with GT segments of its class. For one to three such segments, counting
    each one's pixels in the crop beats gathering the crop's pixels."""
    p = len(masks)
    if gt_area is None:
        gt_area = np.bincount(seg_index.reshape(-1), minlength=g + 1)[:g]
    inter, area = np.zeros((p, g + 1), dtype=np.int64), np.zeros(p, dtype=np.int64)
    masks = np.ascontiguousarray(masks).view(np.uint8)
    words = masks.view(np.uint64) if masks.shape[2] % 8 == 0 else masks  # [P, H, W/8]: any pixel of 8 at once
    for q in range(p):
        same = None if labels is None else np.flatnonzero(gt_labels == labels[q])
        if same is not None and not len(same):
            continue
        rows = np.flatnonzero(words[q].any(axis=1))
        if not len(rows):
            continue
        top, bottom = rows[0], rows[-1] + 1
        cols = np.flatnonzero(np.bitwise_or.reduce(words[q, top:bottom], axis=0).view(np.uint8))
        left, right = cols[0], cols[-1] + 1
        inside = masks[q, top:bottom, left:right] != 0
        segments = seg_index[top:bottom, left:right]
        if same is not None and len(same) <= 3:
            area[q] = np.count_nonzero(inside)
            for k in same.tolist():
                inter[q, k] = np.count_nonzero(inside & (segments == k))
        else:
            under = segments[inside]
            counts = np.bincount(under, minlength=g + 1)
            if same is None:
                inter[q] = counts
            else:
                inter[q, same] = counts[same]
            area[q] = len(under)
    union = area[:, None] + gt_area[None, :] - inter[:, :g]
    return np.divide(inter[:, :g], union, out=np.zeros(union.shape), where=union > 0)


def assign_one_to_one(iou: np.ndarray, labels: np.ndarray, gt_labels: np.ndarray, threshold: float = IOU) -> np.ndarray:
    """``pred2gt`` by the paper's Algorithm 2: best same-class GT (first on ties) if IoU > ``threshold`` (0.5),
    then one prediction per GT instance, the highest IoU (the earliest on ties)."""
    if len(iou) == 0:
        return np.zeros(0, dtype=np.int64)
    iou = np.where(labels[:, None] == gt_labels[None, :], iou, 0.0)
    best = iou.argmax(axis=1)
    value = iou[np.arange(len(iou)), best]
    keep = np.flatnonzero(value > threshold)
    order = keep[np.lexsort((keep, -value[keep], best[keep]))]  # per GT: highest IoU first, then earliest
    winners = order[np.r_[True, best[order][1:] != best[order][:-1]]] if len(order) else order
    out = np.full(len(iou), -1, dtype=np.int64)
    out[winners] = best[winners]
    return out


def match_boxes(gt_boxes: np.ndarray, gt_labels: np.ndarray, boxes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``pred2gt[P]`` for xyxy boxes, the float64 operations in sgbench's order."""
    return assign(sgbench_box_iou(gt_boxes, boxes), labels, gt_labels)


def assign(iou: np.ndarray, labels: np.ndarray, gt_labels: np.ndarray, threshold: float = IOU) -> np.ndarray:
    """``pred2gt``: the same-class GT instance of highest IoU (the first on ties) if ≥ ``threshold`` (0.5), else
    −1."""
    if len(iou) == 0:
        return np.zeros(0, dtype=np.int64)
    iou = np.where(labels[:, None] == gt_labels[None, :], iou, 0.0)
    best = iou.argmax(axis=1)  # the first maximum: the lowest GT index on ties
    return np.where(iou[np.arange(len(iou)), best] >= threshold, best, -1)
