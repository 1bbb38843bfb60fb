"""A slow, obviously-correct loop reference of the open-vocabulary protocols (docs/openvocab.md), written from the
documented rules with plain loops (tests only). It shares no code with ``sgg_eval.metrics.openvocab``: the GT
preparation walks boxes and relations one at a time, the subsets are tested row by row, and the hits come from
``reference_metrics.Image`` (itself a loop reference of the candidate lists).
"""

from __future__ import annotations

import numpy as np
from reference_metrics import Image

from sgg_eval.data.types import GTImage

F = np.float32


def plain_iou(a, b) -> np.float32:
    """OvSGTR's box IoU of two boxes: no +1 pixel, ``inter / (union + 1e-6)``, float32."""
    area_a = (F(a[2]) - F(a[0])) * (F(a[3]) - F(a[1]))
    area_b = (F(b[2]) - F(b[0])) * (F(b[3]) - F(b[1]))
    w = max(F(0), min(F(a[2]), F(b[2])) - max(F(a[0]), F(b[0])))
    h = max(F(0), min(F(a[3]), F(b[3])) - max(F(a[1]), F(b[1])))
    inter = F(w * h)
    return F(inter / F(F(F(area_a + area_b) - inter) + F(1e-6)))


def ovsgtr_gt(gt: GTImage) -> GTImage:
    """OvSGTR's GT: more than 100 boxes cut to the 100 ``RandomState(0).choice`` draws (in drawn order, relations
    between two kept boxes re-indexed), then each box ``e`` in order takes every same-class box not yet taken whose
    IoU with it is > 0.9 (itself included), and becomes a new entity if it took any."""
    boxes, labels, rels = list(gt.boxes), list(gt.labels), [tuple(int(v) for v in r) for r in gt.rels]
    if len(boxes) > 100:
        drawn = [int(i) for i in np.random.RandomState(0).choice(len(boxes), 100, replace=False)]
        boxes, labels = [boxes[i] for i in drawn], [labels[i] for i in drawn]
        rels = [(drawn.index(s), drawn.index(o), p) for s, o, p in rels if s in drawn and o in drawn]
    taken, new_id, keep = [False] * len(boxes), {}, []
    for e in range(len(boxes)):
        took = [
            j
            for j in range(len(boxes))
            if not taken[j] and labels[j] == labels[e] and (j == e or plain_iou(boxes[e], boxes[j]) > F(0.9))
        ]
        if took:
            for j in took:
                taken[j] = True
                new_id[j] = len(keep)
            keep.append(e)
    out_rels = np.array([(new_id[s], new_id[o], p) for s, o, p in rels], dtype=np.int64).reshape(-1, 3)
    return GTImage(gt.image_id, gt.width, gt.height, np.array([boxes[e] for e in keep]).reshape(-1, 4),
                   np.array([labels[e] for e in keep], dtype=np.int64), out_rels)  # fmt: skip


def clipped_gt(gt: GTImage) -> GTImage:
    boxes = [
        [min(max(F(x1), F(0)), F(gt.width - 1)), min(max(F(y1), F(0)), F(gt.height - 1)),
         min(max(F(x2), F(0)), F(gt.width - 1)), min(max(F(y2), F(0)), F(gt.height - 1))]
        for x1, y1, x2, y2 in gt.boxes
    ]  # fmt: skip
    return GTImage(
        gt.image_id, gt.width, gt.height, np.array(boxes, dtype=np.float32).reshape(-1, 4), gt.labels, gt.rels
    )


def in_subset(subset, gt, r, novel_objects, novel_predicates) -> bool:
    s, o, p = (int(v) for v in gt.rels[r])
    if subset == "novel_obj":
        return int(gt.labels[s]) in novel_objects and int(gt.labels[o]) in novel_objects
    if subset == "novel_rel":
        return p in novel_predicates
    return True


def reference_openvocab(
    cases, num_predicates, protocol, subsets, novel_objects, novel_predicates, *, clip=False, zeroshot=None,
    num_pairs=None, tau=0.5, skip=0,
) -> dict:  # fmt: skip
    """Every value an open-vocabulary document holds for ``subsets`` (R_S, and sgg-eval's family on them), or, for
    ``pgsg``, its R@K, mR@K, mR_novel@K and mR_seen@K; images as the engine takes them (no GT relation or no
    predicted pair: skipped; ``skip``: the first images not evaluated)."""
    zs = {tuple(int(v) for v in t) for t in zeroshot} if zeroshot is not None else None
    out = {}
    images = []
    for gt, pred in list(cases)[skip:]:
        gt = ovsgtr_gt(gt) if protocol == "ovsgtr" else clipped_gt(gt) if clip else gt
        if len(gt.rels) and len(pred.pairs):
            images.append(Image(gt, pred, "sgdet", "stored", "probabilities"))
    if protocol == "pgsg":
        return _pgsg(images, num_predicates, novel_predicates)
    for subset in subsets:
        out.update(_subset(images, subset, novel_objects, novel_predicates, zs, num_pairs, tau))
    return out


def _pgsg(images, num_predicates, novel_predicates) -> dict:
    out = {}
    for k in (20, 50, 100, 200, 300):
        out[f"R@{k}"] = sum(len(im.hit_rows(im.gc, k)) / len(im.gt.rels) for im in images) / len(images)
        per_c = []
        for c in range(1, num_predicates + 1):
            ratios = []
            for im in images:
                rows = [r for r in range(len(im.gt.rels)) if int(im.gt.rels[r][2]) == c]
                if rows:
                    hits = im.hit_rows(im.gc, k)
                    ratios.append(sum(r in hits for r in rows) / len(rows))
            per_c.append(sum(ratios) / len(ratios) if ratios else 0.0)
        out[f"mR@{k}"] = sum(per_c) / (num_predicates + 0.001)
        out[f"mR_novel@{k}"] = float(np.mean([v for c, v in enumerate(per_c, 1) if c in novel_predicates]))
        out[f"mR_seen@{k}"] = float(np.mean([v for c, v in enumerate(per_c, 1) if c not in novel_predicates]))
    return out


def _subset(images, subset, novel_objects, novel_predicates, zs, num_pairs, tau) -> dict:
    out = {}
    rows_of = {
        id(im): [r for r in range(len(im.gt.rels)) if in_subset(subset, im.gt, r, novel_objects, novel_predicates)]
        for im in images
    }
    with_rows = [im for im in images if rows_of[id(im)]]
    for family, cands in (("R", "gc"), ("ngR", "ng")):
        for k in (20, 50, 100):
            ratios = [
                sum(r in im.hit_rows(getattr(im, cands), k) for r in rows_of[id(im)]) / len(rows_of[id(im)])
                for im in with_rows
            ]
            out[f"{family}_{subset}@{k}"] = sum(ratios) / len(ratios) if ratios else None
            per_c = _per_predicate(with_rows, rows_of, lambda im, r, k=k, c=cands: r in im.hit_rows(getattr(im, c), k))
            name = "mR" if family == "R" else "ng-mR"
            out[f"{name}_{subset}@{k}"] = float(np.mean(list(per_c.values()))) if per_c else None
            if zs is not None:
                zr = []
                for im in with_rows:
                    z = [r for r in rows_of[id(im)] if _triplet(im.gt, r) in zs]
                    if z:
                        zr.append(sum(r in im.hit_rows(getattr(im, cands), k) for r in z) / len(z))
                out[f"{'zR' if family == 'R' else 'ng-zR'}_{subset}@{k}"] = sum(zr) / len(zr) if zr else None
    for k in (10, 20, 50):
        imr_c = _per_predicate(with_rows, rows_of, lambda im, r, k=k: im.imr_hit(r, k))
        out[f"IMR_{subset}@{k}"] = float(np.mean(list(imr_c.values()))) if imr_c else None
        if num_pairs is not None and imr_c:
            w = {c: float(num_pairs[c]) ** tau for c in imr_c}
            out[f"wIMR_{subset}@{k}"] = sum(w[c] * imr_c[c] for c in imr_c) / sum(w.values())
    return out


def _triplet(gt, r):
    s, o, p = (int(v) for v in gt.rels[r])
    return int(gt.labels[s]), int(gt.labels[o]), p


def _per_predicate(images, rows_of, hit) -> dict:
    """Per predicate with a subset row: the mean over the images holding one of its hit share of them."""
    ratios = {}
    for im in images:
        for c in sorted({int(im.gt.rels[r][2]) for r in rows_of[id(im)]}):
            rows = [r for r in rows_of[id(im)] if int(im.gt.rels[r][2]) == c]
            ratios.setdefault(c, []).append(sum(bool(hit(im, r)) for r in rows) / len(rows))
    return {c: sum(v) / len(v) for c, v in sorted(ratios.items())}
