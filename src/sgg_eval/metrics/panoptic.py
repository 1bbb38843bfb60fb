"""Panoptic SGG metrics, protocol ``sgbench``: what the ``sgbench`` 1.0.0 command computes.

Matching (per instance): a predicted instance maps to the same-class GT instance of highest IoU if that IoU
≥ 0.5; ties go to the lowest GT index; any number of predictions may map to one GT instance. Mask IoU is
``|P ∧ G| / |P ∨ G|`` over the whole image (void pixels count in the union; an empty union is 0). PSG GT
segments do not overlap, so one ``bincount`` of the predicted masks' pixels by GT segment gives every
intersection of an image: O(P·H·W), not O(P·G·H·W). Box IoU: xyxy, area ``(x2 − x1)(y2 − y1)``; a 0/0 IoU (two
empty boxes) is 0, never a match (sgbench takes its NaN for one). Triplets ``(s, o, p)`` become ``(g(s), g(o),
p)``, −1 for an unmatched end (the row keeps its place in the ranking).

Per image, with GT the unique GT triplets and M the mapped predicted triplets (best first):
- ``R@k = |GT ∩ M[:k]| / |GT|``;
- ``mR@k`` vector: for each predicate p of the GT, ``|GT_p ∩ M[:k]| / |GT_p|`` (NaN for the others);
- ``InstR = |distinct GT instances matched| / |GT instances|``;
- ``PRk`` vector (sgbench's PRank): walking the mapped ``ng_triplets`` in order, skipping rows with a −1 end,
  a triplet first seen gets the number of distinct triplets of its (subject, object) pair seen before it (0
  is best); per predicate p, the mean of its GT triplets' ranks (those present), NaN for none.
Over the test images with relations: R@k and InstR are plain means, an image absent from the predictions
counting 0; mR@k is, per predicate, the mean over the images (with predictions) whose GT has it, then the
mean over all predicates, undefined when a predicate has no such image; PRk is the mean of every
(image, predicate) value.
"""

from __future__ import annotations

import numpy as np

KS = (20, 50, 100)
IOU = 0.5


def match_masks(seg_index: np.ndarray, gt_labels: np.ndarray, masks: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``pred2gt[P]``: each predicted mask's GT segment (−1: none). ``seg_index [H, W]`` gives each pixel's GT
    segment (−1: none), ``masks [P, H, W]`` bool."""
    return assign(mask_ious(seg_index, len(gt_labels), masks), labels, gt_labels)


def mask_ious(seg_index: np.ndarray, g: int, masks: np.ndarray) -> np.ndarray:
    """``[P, G]`` IoU of every predicted mask with every GT segment, from one ``bincount``."""
    p = len(masks)
    if p == 0:
        return np.zeros((0, g))
    flat = seg_index.reshape(-1)
    gt_area = np.bincount(flat[flat >= 0], minlength=g)
    layer, pixel = np.nonzero(masks.reshape(p, -1))
    seg = flat[pixel]
    inside = seg >= 0
    inter = np.bincount(layer[inside] * g + seg[inside], minlength=p * g).reshape(p, g)
    area = np.bincount(layer, minlength=p)
    union = area[:, None] + gt_area[None, :] - inter
    return np.divide(inter, union, out=np.zeros((p, g)), where=union > 0)


def match_boxes(gt_boxes: np.ndarray, gt_labels: np.ndarray, boxes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``pred2gt[P]`` for xyxy boxes, the float64 operations in sgbench's order."""
    return assign(box_ious(gt_boxes, boxes), labels, gt_labels)


def box_ious(gt_boxes: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """``[P, G]`` IoU of xyxy boxes; two empty boxes: 0."""
    if len(boxes) == 0:
        return np.zeros((0, len(gt_boxes)))
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    gt_area = (gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1])
    lt = np.maximum(boxes[:, None, :2], gt_boxes[:, :2])
    rb = np.minimum(boxes[:, None, 2:], gt_boxes[:, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area[:, None] + gt_area - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def assign(iou: np.ndarray, labels: np.ndarray, gt_labels: np.ndarray) -> np.ndarray:
    """``pred2gt``: the same-class GT instance of highest IoU (the first on ties) if ≥ 0.5, else −1."""
    if len(iou) == 0:
        return np.zeros(0, dtype=np.int64)
    iou = np.where(labels[:, None] == gt_labels[None, :], iou, 0.0)
    best = iou.argmax(axis=1)  # the first maximum: the lowest GT index on ties
    return np.where(iou[np.arange(len(iou)), best] >= IOU, best, -1)


def image_metrics(gt_triplets: np.ndarray, n_gt: int, pred2gt: np.ndarray, triplets: np.ndarray,
                  ng_triplets: np.ndarray, num_predicates: int) -> dict:
    """One image's values (see the module docstring): ``R@k`` floats, ``mR@k`` and ``PRk`` vectors ``[C]``."""
    c = num_predicates
    mapped = _mapped(pred2gt, triplets)
    gt_keys = _keys(gt_triplets, n_gt, c)
    per_predicate = np.bincount(gt_triplets[:, 2], minlength=c)
    out = {}
    for k in KS:
        hit = np.isin(gt_keys, _keys(mapped[:k], n_gt, c))
        out[f"R@{k}"] = int(hit.sum()) / len(gt_keys)
        found = np.bincount(gt_triplets[:, 2], weights=hit, minlength=c)
        out[f"mR@{k}"] = np.divide(found, per_predicate, out=np.full(c, np.nan), where=per_predicate > 0)
    out["InstR"] = len(np.unique(pred2gt[pred2gt >= 0])) / n_gt
    out["PRk"] = _predicate_ranks(gt_triplets, _mapped(pred2gt, ng_triplets), n_gt, c)
    return out


def _mapped(pred2gt: np.ndarray, triplets: np.ndarray) -> np.ndarray:
    return np.column_stack([pred2gt[triplets[:, 0]], pred2gt[triplets[:, 1]], triplets[:, 2]]) if len(triplets) \
        else np.zeros((0, 3), dtype=np.int64)


def _keys(rows: np.ndarray, n_gt: int, c: int) -> np.ndarray:
    """One integer per (s, o, p) row; −1 ends have their own values."""
    return ((rows[:, 0] + 1) * (n_gt + 1) + rows[:, 1] + 1) * c + rows[:, 2]


def _predicate_ranks(gt_triplets: np.ndarray, mapped: np.ndarray, n_gt: int, c: int) -> np.ndarray:
    ranks = np.full(c, np.nan)
    mapped = mapped[(mapped[:, 0] >= 0) & (mapped[:, 1] >= 0)]
    if len(mapped) == 0:
        return ranks
    keys, first = np.unique(_keys(mapped, n_gt, c), return_index=True)
    order = np.argsort(first, kind="stable")  # distinct triplets in the order first seen
    keys = keys[order]
    pair = keys // c
    by_pair = np.argsort(pair, kind="stable")  # within a pair: the order first seen
    sorted_pair = pair[by_pair]
    starts = np.flatnonzero(np.r_[True, sorted_pair[1:] != sorted_pair[:-1]])
    rank = np.empty(len(keys), dtype=np.int64)
    rank[by_pair] = np.arange(len(keys)) - np.repeat(starts, np.diff(np.r_[starts, len(keys)]))
    gt_keys = _keys(gt_triplets, n_gt, c)
    lookup = np.argsort(keys)
    at = np.minimum(np.searchsorted(keys[lookup], gt_keys), len(keys) - 1)
    present = keys[lookup][at] == gt_keys
    p = gt_triplets[present, 2]
    total = np.bincount(p, weights=rank[lookup][at][present], minlength=c)
    count = np.bincount(p, minlength=c)
    return np.divide(total, count, out=ranks, where=count > 0)


def aggregate(present: list[dict], absent: int, num_predicates: int) -> tuple[dict, list[str]]:
    """The run's values from the present images' dicts (file order) and the number of absent test images
    (sgbench lists the absent first: each R@k and InstR 0, no mR or PRk). Returns (metrics, notes)."""
    metrics, notes = {}, []
    n = len(present) + absent
    for key in [f"R@{k}" for k in KS] + ["InstR"]:
        metrics[key] = float(np.mean([0.0] * absent + [m[key] for m in present])) if n else None
    for k in KS:
        stack = np.array([m[f"mR@{k}"] for m in present]).reshape(-1, num_predicates)
        seen = (~np.isnan(stack)).any(axis=0)
        if not seen.all():
            metrics[f"mR@{k}"] = None
            if not any(note.startswith("mR@K") for note in notes):
                notes.append(f"mR@K is undefined: {int((~seen).sum())} predicates never occur in the GT of an "
                             "image with predictions (sgbench prints NaN)")
            continue
        with np.errstate(invalid="ignore"):
            metrics[f"mR@{k}"] = float(np.nanmean(stack, axis=0).mean())
    ranks = np.array([m["PRk"] for m in present]).reshape(-1)
    ranks = ranks[~np.isnan(ranks)]
    metrics["PRk"] = float(ranks.mean()) if len(ranks) else None
    if not len(ranks):
        notes.append("PRk needs ng_triplets that hit a GT triplet; none does")
    return metrics, notes
