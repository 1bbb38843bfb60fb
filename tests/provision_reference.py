"""A slow loop reference for ``--protocol provision`` (issue 48), written from ProVision's rules as PROTOCOLS.md
states them, on answers already read (``text.provision.rows``): every GT triplet against every kept answered
triplet, one box pair at a time, in Python scalars; IoU as torch computes it for two one-box tensors."""

from __future__ import annotations

import random

import numpy as np


def torch_iou(a: list, b: list) -> float:
    """IoU of two boxes as ``box_iou(torch.tensor([a]), torch.tensor([b]))``: int64 arithmetic when both hold only
    ints, float32 otherwise; the quotient in float32."""
    ints = all(isinstance(v, int) for v in a + b)
    cast = int if ints else np.float32
    a, b = [cast(v) for v in a], [cast(v) for v in b]
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    w = max(min(a[2], b[2]) - max(a[0], b[0]), cast(0))
    h = max(min(a[3], b[3]) - max(a[1], b[1]), cast(0))
    inter = w * h
    union = area_a + area_b - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.float32(inter) / np.float32(union))


def nearest(encode, classes: list[str], query, name: str) -> int:
    table = np.asarray(encode([query(c) for c in classes]), dtype=np.float64)
    v = np.asarray(encode([query(name)])[0], dtype=np.float64)
    sims = [float(v @ t) / (np.linalg.norm(v) * np.linalg.norm(t)) for t in table]
    return max(range(len(sims)), key=lambda i: (sims[i], -i))


def reference(rows, truth, encode, objects, predicates, object_query, predicate_query, top_k, seed) -> dict:
    rng = random.Random(seed)
    hits, subject_hits, by_predicate, shares = [], [], {}, []
    for row in rows:
        if row.parsed.outcome in ("dropped", "crashed"):
            continue
        gt_triplets, gt_classes, gt_boxes = truth[row.key] if row.gt is None else row.gt
        classes = [nearest(encode, objects, object_query, n) for n in row.parsed.names]
        labelled = [(s, o, nearest(encode, predicates, predicate_query, p)) for s, o, p in row.parsed.triplets]
        if top_k and len(labelled) > top_k:
            rng.shuffle(labelled)
            rng.shuffle(list(range(len(labelled))))
            labelled = labelled[:top_k]
        answered = []
        for s, o, p in labelled:
            try:
                answered.append((classes[s], row.boxes[s], classes[o], row.boxes[o], p))
            except IndexError:
                pass
        for gs, go, gp in gt_triplets:
            hit = subject = False
            for cs, bs, co, bo, p in answered:
                s_ok = cs == gt_classes[gs] and torch_iou(bs, gt_boxes[gs]) >= 0.5
                subject = subject or s_ok
                hit = hit or (s_ok and co == gt_classes[go] and torch_iou(bo, gt_boxes[go]) >= 0.5 and p == gp)
            hits.append(hit)
            subject_hits.append(subject)
            by_predicate.setdefault(gp, []).append(hit)
        if not row.boxes:
            shares.append(0.0)
        elif not gt_boxes:
            shares.append(1.0)
        else:
            covered = sum(any(_coverage_iou(g, b, gt_boxes, row.boxes) > 0.5 for b in row.boxes) for g in gt_boxes)
            shares.append(float(np.float32(covered) / np.float32(len(gt_boxes))))
    per = [sum(v) / len(v) for v in by_predicate.values()]
    return {
        "ngR_provision": sum(hits) / len(hits),
        "ng-mR_provision": sum(per) / len(per),
        "objR_provision": sum(subject_hits) / len(hits),
        "coverage_provision": sum(shares) / len(shares),
    }


def _coverage_iou(g, b, gt_boxes, boxes) -> float:
    """In coverage every GT box shares the whole GT list's tensor type, every answered box the answer's."""
    gt_float = any(isinstance(v, float) for box in gt_boxes for v in box)
    answer_float = any(isinstance(v, float) for box in boxes for v in box)
    g = [float(v) for v in g] if gt_float else g
    b = [float(v) for v in b] if answer_float else b
    return torch_iou(g, b)
