"""A slow loop reference of STTran's Action Genome scoring, written from the rules (docs/action_genome.md), one frame
and one triplet at a time in plain Python floats: what ``video.sttran`` and ``video.ag_metrics`` must equal."""

from __future__ import annotations

import numpy as np

GROUPS = ((0, 3), (3, 9), (9, 26))
KS = (10, 20, 50, 100)


def iou(g, p) -> float:
    """Fast R-CNN's bbox_overlaps, +1 pixel, ``g`` as its box and ``p`` as its query box."""
    iw = min(g[2], p[2]) - max(g[0], p[0]) + 1.0
    if iw <= 0:
        return 0.0
    ih = min(g[3], p[3]) - max(g[1], p[1]) + 1.0
    if ih <= 0:
        return 0.0
    union = (g[2] - g[0] + 1.0) * (g[3] - g[1] + 1.0) + (p[2] - p[0] + 1.0) * (p[3] - p[1] + 1.0) - iw * ih
    return iw * ih / union


def iou_oed(g, p) -> float:
    """DETR's box_iou as OED calls it: no +1, ``g`` first; a zero union gives NaN (no hit)."""
    w = max(0.0, min(g[2], p[2]) - max(g[0], p[0]))
    h = max(0.0, min(g[3], p[3]) - max(g[1], p[1]))
    union = (g[2] - g[0]) * (g[3] - g[1]) + (p[2] - p[0]) * (p[3] - p[1]) - w * h
    return w * h / union if union else float("nan")


def frame_triplets(pred, frame: int, constraint: str, threshold: float, shuffle=None, cut=100) -> list[tuple]:
    """``(subject, object, column, score)`` of one frame, ranked, the first ``cut`` (None: all): equal scores in the
    order they were made, or in a random order when ``shuffle`` (a ``random.Random``) is given, as STTran's unstable
    sort may."""

    def order(items, key):
        tie = [shuffle.random() for _ in items] if shuffle else list(range(len(items)))
        return [x for _, _, x in sorted(zip([key(x) for x in items], tie, items, strict=True), key=lambda t: t[:2])]

    pairs = [q for q in range(len(pred.pairs)) if pred.pair_frame[q] == frame]
    dists = (pred.attention, pred.spatial, pred.contacting)
    rows = []
    for g, (s, e) in enumerate(GROUPS):
        for q in pairs:
            a, b = int(pred.pairs[q][0]), int(pred.pairs[q][1])
            vec = [0.0] * 26
            vec[s:e] = [float(x) for x in dists[g][q]]
            rows.append((b, a, vec) if g == 1 else (a, b, vec))
    made = []
    if constraint == "with":
        made = [(sub, obj, vec.index(max(vec)), max(vec)) for sub, obj, vec in rows]
    elif constraint == "semi":
        for sub, obj, vec in rows:
            if vec[0] + vec[1] > 0:
                made.append((sub, obj, vec.index(max(vec)), max(vec)))
            elif vec[3] + vec[4] > 0 or vec[9] + vec[10] > 0:
                made.extend((sub, obj, c, vec[c]) for c in range(26) if vec[c] > threshold)
    else:
        entries = []
        for sub, obj, vec in rows:
            pair = float(np.float32(pred.scores[sub]) * np.float32(pred.scores[obj]))
            entries.extend((pair * vec[c], (sub, obj, c, vec[c])) for c in range(26))
        made = [t for _, t in order(entries, lambda e: -e[0])[:100]]
    scored = [(sub, obj, c, float(pred.scores[sub]) * float(pred.scores[obj]) * v) for sub, obj, c, v in made]
    return order(scored, lambda t: -t[3])[:cut]


def first_hits(truth, pred, constraint: str, threshold: float = 0.9, shuffle=None, overlap=iou) -> list[int]:
    out = []
    for f in range(len(truth.box_offsets) - 1):
        triplets = frame_triplets(pred, f, constraint, threshold, shuffle)
        b0 = int(truth.box_offsets[f])
        for sub, obj, p in truth.rels[truth.rel_offsets[f] : truth.rel_offsets[f + 1]]:
            gs, go = b0 + int(sub), b0 + int(obj)
            rank = 100
            for i, (ps, po, c, _) in enumerate(triplets):
                if (int(pred.labels[ps]), c + 1, int(pred.labels[po])) == (int(truth.labels[gs]), int(p),
                                                                           int(truth.labels[go])):  # fmt: skip
                    if (
                        overlap(truth.boxes[gs], pred.boxes[ps]) >= 0.5
                        and overlap(truth.boxes[go], pred.boxes[po]) >= 0.5
                    ):
                        rank = i
                        break
            out.append(rank)
    return out


def metrics(first: list[int], rels, rel_offsets) -> dict[str, float]:
    """R@K (mean over frames), TEMPURA's pooled mR and DSG-DETR's per-frame mR, from their definitions."""
    out = {}
    frames = range(len(rel_offsets) - 1)
    for k in KS:
        per = []
        hit_p, count_p, lists = [0] * 26, [0] * 26, [[] for _ in range(26)]
        for f in frames:
            idx = range(rel_offsets[f], rel_offsets[f + 1])
            hits = [first[i] < k for i in idx]
            per.append(sum(hits) / len(hits))
            fh, fc = [0] * 26, [0] * 26
            for i, h in zip(idx, hits, strict=True):
                p = int(rels[i][2]) - 1
                fc[p] += 1
                fh[p] += h
            for p in range(26):
                hit_p[p] += fh[p]
                count_p[p] += fc[p]
                if fc[p]:
                    lists[p].append(fh[p] / fc[p])
        out[f"R@{k}"] = sum(per) / len(per)
        out[f"mR_pooled@{k}"] = sum(hit_p[p] / (count_p[p] + 1e-10) for p in range(26)) / 26
        out[f"mR_per_frame@{k}"] = sum(sum(v) / len(v) if v else 0.0 for v in lists) / 26
    return out


def first_hits_imr(truth, pred, constraint: str, threshold: float = 0.9) -> list[int]:
    """IMR's first-hit rank of each GT relation: its rank among the frame's triplets predicted with its predicate
    (every triplet the constraint makes; for "no", its top-100 cut), 100 when none hits."""
    out = []
    for f in range(len(truth.box_offsets) - 1):
        triplets = frame_triplets(pred, f, constraint, threshold, cut=None)
        b0 = int(truth.box_offsets[f])
        for sub, obj, p in truth.rels[truth.rel_offsets[f] : truth.rel_offsets[f + 1]]:
            gs, go = b0 + int(sub), b0 + int(obj)
            same = [t for t in triplets if t[2] + 1 == int(p)]
            rank = 100
            for i, (ps, po, _, _) in enumerate(same[:100]):
                if (int(pred.labels[ps]), int(pred.labels[po])) == (int(truth.labels[gs]), int(truth.labels[go])):
                    if iou(truth.boxes[gs], pred.boxes[ps]) >= 0.5 and iou(truth.boxes[go], pred.boxes[po]) >= 0.5:
                        rank = i
                        break
            out.append(rank)
    return out


def beyond(first, imr_first, truth, train_triplets: set, counts, tau: float) -> dict:
    """zR@K, IMR@K, wIMR@K and the head/body/tail means of both mean recalls, from their definitions: ``n_c`` is the
    number of distinct label pairs of ``train_triplets`` with predicate c; ``counts``, the training relations per
    predicate, make the groups."""
    out = {}
    frames = range(len(truth.rel_offsets) - 1)
    weights = [float(sum(1 for _, p, _ in train_triplets if p == c + 1)) ** tau for c in range(26)]
    order = sorted(range(26), key=lambda c: (-counts[c], c))
    group = {c: 0 if i < 2 else 1 if i < 8 else 2 for i, c in enumerate(order)}
    base = metrics(first, truth.rels, truth.rel_offsets)
    for k in KS:
        zs, lists, hit_p, count_p, per_frame_lists = (
            [],
            [[] for _ in range(26)],
            [0] * 26,
            [0] * 26,
            [[] for _ in range(26)],
        )
        for f in frames:
            b0 = int(truth.box_offsets[f])
            idx = range(truth.rel_offsets[f], truth.rel_offsets[f + 1])
            z = [i for i in idx if (int(truth.labels[b0 + truth.rels[i][0]]), int(truth.rels[i][2]),
                                    int(truth.labels[b0 + truth.rels[i][1]])) not in train_triplets]  # fmt: skip
            if z:
                zs.append(sum(first[i] < k for i in z) / len(z))
            for c in range(26):
                rows = [i for i in idx if int(truth.rels[i][2]) == c + 1]
                if rows:
                    lists[c].append(sum(imr_first[i] < k for i in rows) / len(rows))
                    per_frame_lists[c].append(sum(first[i] < k for i in rows) / len(rows))
                    hit_p[c] += sum(first[i] < k for i in rows)
                    count_p[c] += len(rows)
        imr = [sum(v) / len(v) if v else 0.0 for v in lists]
        out[f"IMR@{k}"] = sum(imr) / 26
        out[f"wIMR@{k}"] = sum(w * v for w, v in zip(weights, imr, strict=True)) / sum(weights)
        out[f"zR@{k}"] = sum(zs) / len(zs) if zs else None
        pooled = [hit_p[c] / (count_p[c] + 1e-10) for c in range(26)]
        per_frame = [sum(v) / len(v) if v else 0.0 for v in per_frame_lists]
        assert abs(sum(per_frame) / 26 - base[f"mR_per_frame@{k}"]) < 1e-12
        for name, values in (("mR_per_frame", per_frame), ("mR_pooled", pooled)):
            for g, gname in enumerate(("head", "body", "tail")):
                members = [values[c] for c in range(26) if group[c] == g]
                out[f"{name}_{gname}@{k}"] = sum(members) / len(members)
    return out
