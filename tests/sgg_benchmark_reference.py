"""A slow loop reference of SGG-Benchmark's relation evaluator, written from its rules (docs/sgg_benchmark.md;
``sgg_benchmark/data/datasets/evaluation/sgg_metrics.py`` @ a664201 and the Relative classes of 422d363), one image,
one prediction, one GT row at a time, in plain Python over float32 scalars; the tests compare
``sgg-eval evaluate --protocol sgg-benchmark`` with it.

Per image with GT relations (M rows; images without are skipped): predictions in stored order, each the triplet
(subject label, 1 + argmax of the foreground scores, object label) with its two boxes (PredCls: the GT boxes and
labels, object scores 1). A prediction matches a GT row when the three labels are equal and both IoUs are >= 0.5,
IoU = inter / (area_a + area_b - inter), inter with +1 per side, areas without, every step in float32.

- R@K = mean over images of |rows matched by the first K| / M; an image without predictions gives 0;
- mR@K = mean over predicates 1..C of (mean over images with the predicate of hits / count; absent: 0);
- F1@K = 2 R mR / (R + mR), 0 when both are 0;
- zR@K = mean over images with unseen rows (triplet not in the training split) of unseen rows hit / unseen rows;
- ngR@K, ng-zR@K: the same over the 100 best (pair, predicate) of score obj_s * obj_o * p;
- A@K (PredCls, SGCls) = Σ rows hit by the first K predictions whose pair is a GT pair / Σ M;
- R@1x, mR@1x: R and mR with K = M per image.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32


def iou(a, b) -> float:
    a = [F32(v) for v in a]
    b = [F32(v) for v in b]
    zero, one = F32(0), F32(1)
    area_a = max(a[2] - a[0], zero) * max(a[3] - a[1], zero)
    area_b = max(b[2] - b[0], zero) * max(b[3] - b[1], zero)
    w = max(min(a[2], b[2]) - max(a[0], b[0]) + one, zero)
    h = max(min(a[3], b[3]) - max(a[1], b[1]) + one, zero)
    inter = w * h
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(inter / (area_a + area_b - inter))


def _matches(gt, boxes, labels, triplets) -> list[set]:
    """For each predicted (s, o, p), the GT rows it matches."""
    out = []
    for s, o, p in triplets:
        hit = set()
        for g, (gs, go, gp) in enumerate(gt.rels.tolist()):
            if (labels[s], p, labels[o]) != (gt.labels[gs], gp, gt.labels[go]):
                continue
            if iou(gt.boxes[gs], boxes[s]) >= 0.5 and iou(gt.boxes[go], boxes[o]) >= 0.5:
                hit.add(g)
        out.append(hit)
    return out


def _union(matches, k) -> set:
    got = set()
    for m in matches[:k]:
        got |= m
    return got


def reference(pairs, task: str, num_predicates: int, seen: set, ks=(20, 50, 100)) -> dict:
    """``pairs``: (GTImage, PredImage) in split order; ``seen``: the training split's (s, o, p) triplets."""
    recall = {k: [] for k in ks}
    ng_recall = {k: [] for k in ks}
    zs = {k: [] for k in ks}
    ng_zs = {k: [] for k in ks}
    per_c = {k: [[] for _ in range(num_predicates + 1)] for k in (*ks, "rel")}
    rel_recall = []
    a_hits, a_rows = {k: 0 for k in ks}, 0
    for gt, pred in pairs:
        m = len(gt.rels)
        if m == 0:
            continue
        if task == "predcls":
            boxes, labels, obj = gt.boxes, gt.labels.tolist(), [1.0] * len(gt.labels)
        else:
            boxes, labels, obj = pred.boxes, pred.labels.tolist(), pred.obj_scores.tolist()
        rel = pred.rel_scores
        pairs_ = pred.pairs.tolist()
        gc = [(s, o, 1 + int(np.argmax(rel[j, 1:]))) for j, (s, o) in enumerate(pairs_)]
        gc_match = _matches(gt, boxes, labels, gc)
        # NG: every (pair, predicate) by obj_s * obj_o * p, in the toolkit's dtype (PredCls: float64 ones)
        dtype = np.float64 if task == "predcls" else np.float32
        ng_scores = []
        for j, (s, o) in enumerate(pairs_):
            both = dtype(obj[s]) * dtype(obj[o])
            for c in range(1, rel.shape[1]):
                ng_scores.append((-(both * rel[j, c]), j, c))
        ng = [(pairs_[j][0], pairs_[j][1], c) for _, j, c in sorted(ng_scores)[:100]]
        ng_match = _matches(gt, boxes, labels, ng)
        unseen = {g for g, (s, o, p) in enumerate(gt.rels.tolist()) if (gt.labels[s], gt.labels[o], p) not in seen}
        counts = np.bincount(gt.rels[:, 2], minlength=num_predicates + 1)
        gt_pairs = {(s, o) for s, o, _ in gt.rels.tolist()}
        a_rows += m
        for k in (*ks, "rel"):
            kk = m if k == "rel" else k
            hit = _union(gc_match, kk)
            if k == "rel":
                rel_recall.append(len(hit) / m)
            else:
                recall[k].append(len(hit) / m)
                ng_hit = _union(ng_match, k)
                ng_recall[k].append(len(ng_hit) / m)
                if unseen:
                    zs[k].append(len(hit & unseen) / len(unseen))
                    ng_zs[k].append(len(ng_hit & unseen) / len(unseen))
                on_gt_pairs = [mm for (s, o, _), mm in zip(gc[:k], gc_match[:k]) if (s, o) in gt_pairs]
                a_hits[k] += len(_union(on_gt_pairs, k))
            hits = np.bincount([gt.rels[g, 2] for g in hit], minlength=num_predicates + 1)
            for c in range(1, num_predicates + 1):
                if counts[c]:
                    per_c[k][c].append(hits[c] / counts[c])

    def mean(v):
        return float(np.mean(v)) if v else 0.0

    def mean_recall(k):
        return float(np.mean([mean(per_c[k][c]) for c in range(1, num_predicates + 1)]))

    out = {}
    for k in ks:
        r, mr = mean(recall[k]), mean_recall(k)
        out[f"R@{k}"], out[f"mR@{k}"] = r, mr
        out[f"F1@{k}"] = 2 * r * mr / (r + mr) if r + mr > 0 else 0.0
        out[f"zR@{k}"], out[f"ngR@{k}"], out[f"ng-zR@{k}"] = mean(zs[k]), mean(ng_recall[k]), mean(ng_zs[k])
        out[f"A@{k}"] = a_hits[k] / a_rows if task != "sgdet" and a_rows else None
    out["R@1x"], out["mR@1x"] = mean(rel_recall), mean_recall("rel")
    return out


def ir_reference(pairs, task: str, captions: dict, objects, predicates, ks=(5, 10, 20, 50, 100)) -> dict:
    """InformativeRecall@K with the exact encoder: per image with GT relations and captions, the share of its
    captions equal to the string of one of the first K stored predictions; mean over those images."""
    values = {k: [] for k in ks}
    for gt, pred in pairs:
        caps = captions.get(str(gt.image_id))
        if not len(gt.rels) or not caps:
            continue
        labels = gt.labels if task == "predcls" else pred.labels
        strings = []
        for j, (s, o) in enumerate(pred.pairs.tolist()):
            p = 1 + int(np.argmax(pred.rel_scores[j, 1:]))
            strings.append(f"{objects[labels[s] - 1]} {predicates[p - 1]} {objects[labels[o] - 1]}")
        for k in ks:
            top = set(strings[:k])
            values[k].append(sum(1 for c in caps if c in top) / len(caps))
    return {f"IR@{k}": (float(np.mean(v)) if v else None) for k, v in values.items()}
