"""A slow, obviously-correct loop implementation of the ``sgbench`` protocol, written from its documentation
(``sgg_eval.metrics.panoptic``'s docstring; tests only): Python sets and per-pixel boolean masks."""

from __future__ import annotations

import math

import numpy as np


def iou_masks(p: np.ndarray, g: np.ndarray) -> float:
    union = int((p | g).sum())
    return int((p & g).sum()) / union if union else 0.0


def iou_boxes(a, b) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def match(gt_items, gt_labels, pred_items, pred_labels, iou) -> list[int]:
    out = []
    for q, item in enumerate(pred_items):
        best, best_iou = -1, -1.0
        for g, gt_item in enumerate(gt_items):
            value = iou(item, gt_item) if int(pred_labels[q]) == int(gt_labels[g]) else 0.0
            if value > best_iou:  # strictly greater: the first of equal values (the lowest GT index) stays
                best, best_iou = g, value
        out.append(best if best_iou >= 0.5 else -1)
    return out


def dedup(rows) -> list[tuple]:
    seen, out = set(), []
    for r in rows:
        r = tuple(int(v) for v in r)
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def image(gt_triplets, n_gt, pred2gt, triplets, ng_triplets, num_predicates) -> dict:
    gt = {tuple(int(v) for v in r) for r in gt_triplets}
    mapped = [(pred2gt[s], pred2gt[o], p) for s, o, p in dedup(triplets)]
    out = {}
    for k in (20, 50, 100):
        top = set(mapped[:k])
        out[f"R@{k}"] = len(gt & top) / len(gt)
        vec = [math.nan] * num_predicates
        for p in {t[2] for t in gt}:
            gp = {t for t in gt if t[2] == p}
            vec[p] = len(gp & top) / len(gp)
        out[f"mR@{k}"] = vec
    out["InstR"] = len({g for g in pred2gt if g >= 0}) / n_gt
    rank, per_pair = {}, {}
    for t in [(pred2gt[s], pred2gt[o], p) for s, o, p in dedup(ng_triplets)]:
        if t[0] == -1 or t[1] == -1 or t in rank:
            continue
        rank[t] = per_pair.get(t[:2], 0)
        per_pair[t[:2]] = rank[t] + 1
    prk = []
    for p in range(num_predicates):
        found = [rank[t] for t in gt if t[2] == p and t in rank]
        prk.append(sum(found) / len(found) if found else math.nan)
    out["PRk"] = prk
    return out


def aggregate(present: list[dict], absent: int, num_predicates: int) -> dict:
    n = len(present) + absent
    out = {key: sum(m[key] for m in present) / n for key in ("R@20", "R@50", "R@100", "InstR")}
    for k in (20, 50, 100):
        means = []
        for p in range(num_predicates):
            values = [m[f"mR@{k}"][p] for m in present if not math.isnan(m[f"mR@{k}"][p])]
            means.append(sum(values) / len(values) if values else None)
        out[f"mR@{k}"] = None if None in means else sum(means) / num_predicates
    cells = [v for m in present for v in m["PRk"] if not math.isnan(v)]
    out["PRk"] = sum(cells) / len(cells) if cells else None
    return out


# --------------------------------------------------------------------------- protocol openpsg

def openpsg_image(gt_triplets, gt_items, gt_labels, rows, pred_items, pred_labels, iou, num_predicates) -> dict:
    """Per-triplet matching: a row hits a GT triplet with its predicate, both classes and both IoUs >= 0.5."""
    gt = sorted({tuple(int(v) for v in r) for r in gt_triplets})

    def same(q, g):
        return int(pred_labels[q]) == int(gt_labels[g]) and iou(pred_items[q], gt_items[g]) >= 0.5

    out = {}
    for k in (20, 50, 100):
        hit = {t for t in gt if any(p == t[2] and same(s, t[0]) and same(o, t[1]) for s, o, p in rows[:k])}
        out[f"R@{k}"] = len(hit) / len(gt)
        vec = [math.nan] * num_predicates
        for p in {t[2] for t in gt}:
            gp = [t for t in gt if t[2] == p]
            vec[p] = sum(t in hit for t in gp) / len(gp)
        out[f"mR@{k}"] = vec
    return out


def openpsg_aggregate(evaluated: list[dict], num_predicates: int) -> dict:
    out = {"InstR": None, "PRk": None}
    for k in (20, 50, 100):
        out[f"R@{k}"] = sum(m[f"R@{k}"] for m in evaluated) / len(evaluated)
        means = []
        for p in range(num_predicates):
            values = [m[f"mR@{k}"][p] for m in evaluated if not math.isnan(m[f"mR@{k}"][p])]
            means.append(sum(values) / len(values) if values else 0.0)
        out[f"mR@{k}"] = sum(means) / num_predicates
    return out
