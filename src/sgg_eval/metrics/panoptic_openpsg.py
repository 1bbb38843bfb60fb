"""Panoptic SGG metrics, protocol ``openpsg``: how OpenPSG's evaluator (the numbers PSG papers publish) counts.

Matching is per triplet, not per instance: a predicted triplet ``(s, o, p)`` hits a GT triplet ``(g_s, g_o,
g_p)`` when ``p = g_p``, the classes of s and o are those of g_s and g_o, and IoU(s, g_s) ≥ 0.5 and
IoU(o, g_o) ≥ 0.5 (masks, or boxes in box mode); one predicted triplet may hit several GT triplets. The
predicted rows are taken as they are, in order (no duplicates dropped: a model's rows are distinct pairs).

Per image, with GT the unique GT triplets: ``R@k = |GT triplets hit by one of the first k rows| / |GT|``;
``mR@k`` per predicate p of the GT, ``|GT_p hit| / |GT_p|``. Over images: only the test images with relations
that have at least one predicted row are evaluated (an absent image, or one with no row, is skipped, not
counted 0); R@k is the mean over them; mR@k is, per predicate, the mean over the evaluated images whose GT
has it, a predicate in none of them counting 0, then the mean over all predicates. OpenPSG reports neither
InstR nor a predicate rank: both are null.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.metrics.panoptic import IOU, KS


def image_metrics(gt_triplets: np.ndarray, gt_labels: np.ndarray, iou: np.ndarray, labels: np.ndarray,
                  rows: np.ndarray, num_predicates: int) -> dict:
    """One image's ``R@k`` and ``mR@k`` vectors ``[C]`` (NaN for predicates not in its GT). ``iou [P, G]``."""
    ok = (iou >= IOU) & (labels[:, None] == gt_labels[None, :])  # [P, G]: instance q may stand for segment g
    hit = ok[rows[:, 0]][:, gt_triplets[:, 0]] & ok[rows[:, 1]][:, gt_triplets[:, 1]] \
        & (rows[:, 2:3] == gt_triplets[None, :, 2])  # [rows, GT triplets]
    never = np.iinfo(np.int64).max
    first = np.where(hit.any(axis=0), hit.argmax(axis=0), never)  # the first row hitting each GT triplet
    c = num_predicates
    per_predicate = np.bincount(gt_triplets[:, 2], minlength=c)
    out = {}
    for k in KS:
        found = first < k
        out[f"R@{k}"] = int(found.sum()) / len(gt_triplets)
        got = np.bincount(gt_triplets[:, 2], weights=found, minlength=c)
        out[f"mR@{k}"] = np.divide(got, per_predicate, out=np.full(c, np.nan), where=per_predicate > 0)
    return out


def aggregate(evaluated: list[dict], num_predicates: int) -> tuple[dict, list[str]]:
    """The run's values from the evaluated images' dicts; InstR and PRk are null (OpenPSG has neither)."""
    metrics, notes = {}, ["InstR and PRk are not part of OpenPSG's evaluation: null under --protocol openpsg"]
    for k in KS:
        if not evaluated:
            metrics[f"R@{k}"] = metrics[f"mR@{k}"] = None
            continue
        metrics[f"R@{k}"] = float(np.mean([m[f"R@{k}"] for m in evaluated]))
        stack = np.array([m[f"mR@{k}"] for m in evaluated]).reshape(-1, num_predicates)
        seen = (~np.isnan(stack)).any(axis=0)
        with np.errstate(invalid="ignore"):
            per_predicate = np.where(seen, np.nanmean(np.where(seen, stack, 0.0), axis=0), 0.0)
        metrics[f"mR@{k}"] = float(per_predicate.mean())
    if not evaluated:
        notes.append("no image was evaluated (none has a predicted triplet)")
    metrics["InstR"] = metrics["PRk"] = None
    return metrics, notes
