"""A slow, obviously-correct loop implementation of the three panoptic protocols and their whole metric family,
written from their documentation (the docstrings of ``sgg_eval.panoptic.matching``, ``panoptic_ranks`` and
``panoptic_reduce``, and docs/metrics.md; tests only): Python sets, dicts and per-pixel boolean masks."""

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


# every protocol's IoU threshold; a test sets another to check sgg-eval's iou_threshold
THRESHOLD = 0.5


def match(gt_items, gt_labels, pred_items, pred_labels, iou) -> list[int]:
    """sgbench 1.0.0: the best same-class GT instance (the first of equal IoUs) if its IoU >= 0.5 (THRESHOLD)."""
    out = []
    for q, item in enumerate(pred_items):
        best, best_iou = -1, -1.0
        for g, gt_item in enumerate(gt_items):
            value = iou(item, gt_item) if int(pred_labels[q]) == int(gt_labels[g]) else 0.0
            if value > best_iou:  # strictly greater: the first of equal values (the lowest GT index) stays
                best, best_iou = g, value
        out.append(best if best_iou >= THRESHOLD else -1)
    return out


def match_paper(gt_items, gt_labels, pred_items, pred_labels, iou) -> list[int]:
    """The paper's Algorithm 2, line by line: J[x] keeps the prediction of highest IoU (> t) among those whose
    best same-class GT instance is x; L is J's inverse."""
    j: dict[int, tuple[int, float]] = {}
    for q, item in enumerate(pred_items):
        same = [g for g in range(len(gt_items)) if int(gt_labels[g]) == int(pred_labels[q])]
        if not same:
            continue
        x = max(same, key=lambda g: (iou(item, gt_items[g]), -g))  # argmax, the first on ties
        value = iou(item, gt_items[x])
        if value > THRESHOLD and (x not in j or value > j[x][1]):
            j[x] = (q, value)
    out = [-1] * len(pred_items)
    for x, (q, _) in j.items():
        out[q] = x
    return out


def dedup(rows) -> list[tuple]:
    seen, out = set(), []
    for r in rows:
        r = tuple(int(v) for v in r)
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def one_per_pair(rows) -> list[tuple]:
    seen, out = set(), []
    for r in rows:
        if r[:2] not in seen:
            seen.add(r[:2])
            out.append(r)
    return out


def training_stats(psg: dict) -> tuple[set, list[int]]:
    """(zero-shot class triplets, n_c): class triplets of test images never in the training split (the entries
    outside test_image_ids), and per predicate the distinct (subject class, object class) pairs it has there."""

    def class_triplets(entry):
        cats = [s["category_id"] for s in entry["segments_info"]]
        return {(cats[s], cats[o], p) for s, o, p in entry["relations"]}

    test_ids = set(psg["test_image_ids"])
    train, test = set(), set()
    for entry in psg["data"]:
        (test if entry["image_id"] in test_ids else train).update(class_triplets(entry))
    n_c = [len({t[:2] for t in train if t[2] == p}) for p in range(len(psg["predicate_classes"]))]
    return test - train, n_c


def frequency_groups(psg: dict) -> dict[str, list[int]]:
    """Head, body and tail by the frequency rule (docs: metrics.longtail): predicates by training relations,
    most first (ties: lower id), PySGG's VG150 sizes 4 and 12 of 50 scaled to C and rounded; 0-based ids."""
    test_ids, c = set(psg["test_image_ids"]), len(psg["predicate_classes"])
    counts = [0] * c
    for entry in psg["data"]:
        if entry["image_id"] not in test_ids:
            for _, _, p in entry["relations"]:
                counts[p] += 1
    order = sorted(range(c), key=lambda p: (-counts[p], p))
    head, body = round(4 / 50 * c), round(12 / 50 * c)
    return {"head": order[:head], "body": order[head : head + body], "tail": order[head + body :]}


def zero_shot_rows(entry, zs: set) -> list[tuple]:
    cats = [s["category_id"] for s in entry["segments_info"]]
    return [t for t in sorted({tuple(r) for r in entry["relations"]}) if (cats[t[0]], cats[t[1]], t[2]) in zs]


def image(
    protocol, gt_triplets, gt_items, gt_labels, pred_items, pred_labels, triplets, ng, iou, c, zs_rows=()
) -> dict:
    """One evaluated image's values; ``ng`` is None when the submission has no ng lists; ``zs_rows``: its
    zero-shot GT triplets."""
    gt = sorted({tuple(int(v) for v in r) for r in gt_triplets})
    n_gt = len(gt_labels)
    if protocol == "openpsg":
        pred2gt = None

        def ok(q, g):
            return int(pred_labels[q]) == int(gt_labels[g]) and iou(pred_items[q], gt_items[g]) >= THRESHOLD

        gc = [tuple(int(v) for v in r) for r in triplets]
    else:
        pred2gt = (match if protocol == "sgbench" else match_paper)(gt_items, gt_labels, pred_items, pred_labels, iou)

        def ok(q, g):
            return pred2gt[q] == g

        gc = dedup(triplets) if protocol == "sgbench" else one_per_pair(dedup(triplets))

    def hits(rows, t):
        return ok(rows[0], t[0]) and ok(rows[1], t[1]) and rows[2] == t[2]

    def recall_and_vector(rows):
        hit = {t for t in gt if any(hits(r, t) for r in rows)}
        vec = [math.nan] * c
        for p in {t[2] for t in gt}:
            gp = [t for t in gt if t[2] == p]
            vec[p] = sum(t in hit for t in gp) / len(gp)
        return len(hit) / len(gt), vec

    out = {}
    for k in (20, 50, 100):
        out[f"R@{k}"], out[f"mR@{k}"] = recall_and_vector(gc[:k])
        if ng is not None:
            out[f"ngR@{k}"], out[f"ng-mR@{k}"] = recall_and_vector(dedup(ng)[:k])
        for name, rows in (("zR", gc), ("ng-zR", None if ng is None else dedup(ng))):
            if zs_rows and rows is not None:
                out[f"{name}@{k}"] = sum(any(hits(r, t) for r in rows[:k]) for t in zs_rows) / len(zs_rows)
        pairs = sorted({t[:2] for t in gt})
        out[f"PR@{k}"] = sum(any(ok(r[0], a) and ok(r[1], b) for r in gc[:k]) for a, b in pairs) / len(pairs)
    for x in (1, 2, 10):
        out[f"R@{x}x"], out[f"mR@{x}x"] = recall_and_vector(gc[: math.floor(x * len(gt) + 0.5)])
    for k in (10, 20, 50):
        vec = [math.nan] * c
        for p in {t[2] for t in gt}:
            own = [r for r in gc if r[2] == p][:k]
            gp = [t for t in gt if t[2] == p]
            vec[p] = sum(any(hits(r, t) for r in own) for t in gp) / len(gp)
        out[f"IMR@{k}"] = vec
    stood_for = {g for g in range(n_gt) if any(ok(q, g) for q in range(len(pred_items)))}
    reach = [t for t in gt if t[0] in stood_for and t[1] in stood_for]
    out["R@inf"] = len(reach) / len(gt)
    out["mR@inf"] = [math.nan] * c
    for p in {t[2] for t in gt}:
        out["mR@inf"][p] = sum(t in reach for t in gt if t[2] == p) / sum(t[2] == p for t in gt)
    out["InstR"] = len(stood_for) / n_gt
    out["PRk"] = None if pred2gt is None else predicate_ranks(gt, pred2gt, ng or [], c)
    # the confusion matrix's cells: per GT triplet whose ends some row stands for, the first such row's predicate
    firsts = [next((r for r in gc if ok(r[0], t[0]) and ok(r[1], t[1])), None) for t in gt]
    out["confusion"] = [(t[2], r[2]) for t, r in zip(gt, firsts) if r is not None]
    return out


def predicate_ranks(gt, pred2gt, ng, c) -> list[float]:
    rank, per_pair = {}, {}
    for t in [(pred2gt[s], pred2gt[o], p) for s, o, p in dedup(ng)]:
        if t[0] == -1 or t[1] == -1 or t in rank:
            continue
        rank[t] = per_pair.get(t[:2], 0)
        per_pair[t[:2]] = rank[t] + 1
    prk = []
    for p in range(c):
        found = [rank[t] for t in gt if t[2] == p and t in rank]
        prk.append(sum(found) / len(found) if found else math.nan)
    return prk


R_TYPE = [f"{f}@{k}" for f in ("R", "ngR", "PR") for k in (20, 50, 100)] + ["R@1x", "R@2x", "R@10x", "R@inf", "InstR"]
M_TYPE = [f"{f}@{k}" for f in ("mR", "ng-mR") for k in (20, 50, 100)] + ["mR@1x", "mR@2x", "mR@10x", "mR@inf"]


def aggregate(
    protocol: str,
    images: list[dict],
    absent: int,
    c: int,
    absent_zs: int = 0,
    n_c=None,
    tau: float = 0.5,
    groups: dict | None = None,
) -> dict:
    over = len(images) + (0 if protocol == "openpsg" else absent)
    out = {}
    for k in (20, 50, 100):
        for name in ("zR", "ng-zR"):
            values = [m[f"{name}@{k}"] for m in images if f"{name}@{k}" in m]
            count = len(values) + (0 if protocol == "openpsg" else absent_zs)
            out[f"{name}@{k}"] = (
                sum(values) / count if n_c is not None and count and (name == "zR" or f"ngR@{k}" in images[0]) else None
            )
    for key in R_TYPE:
        if key in images[0]:
            out[key] = sum(m[key] for m in images) / over
    for key in M_TYPE:
        if key not in images[0]:
            continue
        if groups is not None and key.split("@")[1] in ("20", "50", "100"):  # head/body/tail (metrics.longtail)
            seen = []
            for p in range(c):
                values = [m[key][p] for m in images if not math.isnan(m[key][p])]
                seen.append(sum(values) / len(values) if values else None)
            for name, members in groups.items():  # openpsg lists absent predicates as 0, the others leave them out
                listed = [seen[p] or 0.0 for p in members if seen[p] is not None or protocol == "openpsg"]
                family, k = key.split("@")
                out[f"{family}_{name}@{k}"] = sum(listed) / len(listed) if listed else None
        if protocol == "sgbench-paper":
            total = 0.0
            for m in images:
                values = [v for v in m[key] if not math.isnan(v)]
                total += sum(values) / len(values)
            out[key] = total / over
            continue
        means = []
        for p in range(c):
            values = [m[key][p] for m in images if not math.isnan(m[key][p])]
            means.append(sum(values) / len(values) if values else None)
        if protocol == "sgbench":
            out[key] = None if None in means else sum(means) / c
        else:
            out[key] = sum(v or 0.0 for v in means) / c
    for k in (20, 50, 100):
        for r, m, f in ((f"R@{k}", f"mR@{k}", f"F1@{k}"), (f"ngR@{k}", f"ng-mR@{k}", f"ng-F1@{k}")):
            if r not in out:
                continue
            out[f] = None
            if out[r] is not None and out[m] is not None:
                out[f] = 0.0 if out[r] + out[m] == 0 else 2 * out[r] * out[m] / (out[r] + out[m])
    for k in (10, 20, 50):
        means = []
        for p in range(c):
            values = [m[f"IMR@{k}"][p] for m in images if not math.isnan(m[f"IMR@{k}"][p])]
            means.append(sum(values) / len(values) if values else 0.0)
        out[f"IMR@{k}"] = sum(means) / c
        weights = None if n_c is None else [n**tau for n in n_c]
        out[f"wIMR@{k}"] = None if weights is None else sum(w * v for w, v in zip(weights, means)) / sum(weights)
    if protocol == "openpsg":
        out["PRk"] = None
    elif protocol == "sgbench":
        cells = [v for m in images for v in m["PRk"] if not math.isnan(v)]
        out["PRk"] = sum(cells) / len(cells) if cells else None
    else:
        per_image = []
        for m in images:
            values = [v for v in m["PRk"] if not math.isnan(v)]
            if values:
                per_image.append(sum(values) / len(values))
        out["PRk"] = sum(per_image) / len(per_image) if per_image else None
    return out
