"""A slow, obviously-correct evaluator written from docs/definitions.md §2-§3's words with plain loops (tests only).

It shares no code with sgg_eval.metrics: every candidate list is built and scanned explicitly, every
metric is a sum over rows and images written out.
"""

from __future__ import annotations

import math

import numpy as np


def iou(a, b) -> np.float32:
    f = np.float32
    area_a = (f(a[2]) - f(a[0]) + f(1)) * (f(a[3]) - f(a[1]) + f(1))
    area_b = (f(b[2]) - f(b[0]) + f(1)) * (f(b[3]) - f(b[1]) + f(1))
    w = max(f(0), min(f(a[2]), f(b[2])) - max(f(a[0]), f(b[0])) + f(1))
    h = max(f(0), min(f(a[3]), f(b[3])) - max(f(a[1]), f(b[1])) + f(1))
    inter = f(w * h)
    return f(inter / (area_a + area_b - inter))


def obj_ok(gt, g, boxes, labels, q, thr=0.5) -> bool:
    return int(gt.labels[g]) == int(labels[q]) and iou(gt.boxes[g], boxes[q]) >= np.float32(thr)


def softmax(row):
    x = np.asarray(row, dtype=np.float64)
    e = np.exp(x - x.max())
    return (e / e.sum()).astype(np.float32)


class Image:
    """One image's predictions after the task's substitution, with every candidate list spelled out."""

    def __init__(self, gt, pred, task, order, score_kind, thr=0.5):
        self.gt, self.thr = gt, thr
        if task == "predcls":
            self.boxes, self.labels = gt.boxes, gt.labels
            self.scores = [np.float32(1)] * len(gt.labels)
        else:
            self.boxes, self.labels = pred.boxes, pred.labels
            self.scores = [np.float32(s) for s in pred.obj_scores]
        self.pairs = [(int(a), int(b)) for a, b in pred.pairs]
        if score_kind == "logits":
            self.probs = [softmax(r) for r in pred.rel_scores]
        else:
            self.probs = [np.asarray(r, dtype=np.float32) for r in pred.rel_scores]
        self.C = len(pred.rel_scores[0]) - 1 if len(pred.rel_scores) else 0
        # GC: argmax over columns 1.. with the lowest id on ties; score max_c p_c * s_s * s_o
        gc = []
        for j, (a, b) in enumerate(self.pairs):
            p = self.probs[j]
            best_c = 1
            for c in range(2, len(p)):
                if p[c] > p[best_c]:
                    best_c = c
            score = np.float32(np.float32(p[best_c]) * self.scores[a]) * self.scores[b]
            gc.append((j, best_c, float(score)))
        if order == "score":
            gc = sorted(gc, key=lambda t: (-t[2], t[0]))  # Python's sort is stable; j breaks ties anyway
        self.gc = [(j, c) for j, c, _ in gc]
        # NG: every (pair, predicate) by s_s * s_o * p_c, ties by flat (row-major) index, top 100
        ng = []
        for j, (a, b) in enumerate(self.pairs):
            for c in range(1, self.C + 1):
                ng.append((-float(self.pair_score(j, c)), j * self.C + (c - 1), j, c))
        self.ng = [(j, c) for _, _, j, c in sorted(ng)[:100]]

    def both_ok(self, gs, go, a, b) -> bool:
        """Predicted objects a and b match GT objects gs and go (label and IoU >= the threshold)."""
        return obj_ok(self.gt, gs, self.boxes, self.labels, a, self.thr) and obj_ok(
            self.gt, go, self.boxes, self.labels, b, self.thr
        )

    def pair_score(self, j, c):
        a, b = self.pairs[j]
        return np.float32(self.scores[a] * self.scores[b]) * self.probs[j][c]

    def cand_matches(self, r, j, c) -> bool:
        gs, go, gp = (int(v) for v in self.gt.rels[r])
        a, b = self.pairs[j]
        return c == gp and self.both_ok(gs, go, a, b)

    def hit_rows(self, cands, k):
        """GT rows matched by any of the first k candidates (a set: each row counted once)."""
        return {r for r in range(len(self.gt.rels)) for (j, c) in cands[:k] if self.cand_matches(r, j, c)}

    def imr_hit(self, r, k) -> bool:
        """IMR (docs/definitions.md §3): the image's GC triplets whose predicted predicate is the row's predicate c,
        kept in GC ranking order, top k; row r is hit when one of them matches it."""
        c = int(self.gt.rels[r][2])
        predicted_as_c = [(j, p) for j, p in self.gc if p == c]
        return any(self.cand_matches(r, j, p) for j, p in predicted_as_c[:k])

    def ng_imr_hit(self, r, k) -> bool:
        """ng-IMR: row r is hit when one of the top-k pairs ranked by s_s*s_o*p_c (c = row's predicate) matches it."""
        c = int(self.gt.rels[r][2])
        ranked = sorted(range(len(self.pairs)), key=lambda j: (-float(self.pair_score(j, c)), j))
        return any(self.cand_matches(r, j, c) for j in ranked[:k])

    def triplet_rank(self, r):
        gs, go, _ = (int(v) for v in self.gt.rels[r])
        cands = []
        for j, (a, b) in enumerate(self.pairs):
            if (a, b) in ((gs, go), (go, gs)):
                for c in range(1, self.C + 1):
                    cands.append((-float(self.pair_score(j, c)), j, c))
        for pos, (_, j, c) in enumerate(sorted(cands)):
            if self.cand_matches(r, j, c):
                return pos
        return None

    def predicate_rank(self, r):
        gs, go, gp = (int(v) for v in self.gt.rels[r])
        for j, _ in self.gc:
            a, b = self.pairs[j]
            if self.both_ok(gs, go, a, b):
                p = self.probs[j]
                return sum(1 for c in range(1, self.C + 1) if p[c] > p[gp] or (p[c] == p[gp] and c < gp))
        return None

    def pair_hits(self, k):
        gt_pairs = sorted({(int(s), int(o)) for s, o, _ in self.gt.rels})
        hit = 0
        for gs, go in gt_pairs:
            for j, _ in self.gc[:k]:
                a, b = self.pairs[j]
                if self.both_ok(gs, go, a, b):
                    hit += 1
                    break
        return hit, len(gt_pairs)


def reference_evaluate(
    cases,
    num_predicates,
    task,
    *,
    protocol="reference",
    order="score",
    score_kind="probabilities",
    tau=0.5,
    zeroshot=None,
    triplet_counts=None,
    num_pairs=None,
    iou_threshold=0.5,
    groups=None,
):
    C = num_predicates
    zs = {tuple(int(v) for v in t) for t in zeroshot} if zeroshot is not None else None
    R = {f: {k: [] for k in (20, 50, 100)} for f in ("gc", "ng")}
    mr = {f: {k: {c: [] for c in range(1, C + 1)} for k in (20, 50, 100)} for f in ("gc", "ng")}
    zr = {f: {k: [] for k in (20, 50, 100)} for f in ("gc", "ng")}
    group_r = {(f, k, g): [] for f in ("gc", "ng") for k in (20, 50, 100) for g in (groups or {})}
    imr = {v: {k: {c: [] for c in range(1, C + 1)} for k in (10, 20, 50)} for v in ("IMR", "ng-IMR")}
    acc_hit, acc_cnt = {k: 0 for k in (20, 50, 100)}, 0
    tr_hit, tr_w_hit, tr_rows, tr_w = {k: 0 for k in (5, 10, 15, 20, 50)}, {k: 0.0 for k in (5, 10, 15, 20, 50)}, 0, 0.0
    prk = {c: [] for c in range(1, C + 1)}
    pr = {k: [] for k in (20, 50, 100)}
    inst = []
    rel = {x: [] for x in (1, 2, 10)}
    rel_mr = {x: {c: [] for c in range(1, C + 1)} for x in (1, 2, 10)}
    evaluated = 0
    for gt, pred in cases:
        if len(gt.rels) == 0:
            continue
        if len(pred.pairs) == 0 and protocol == "reference":
            continue
        evaluated += 1
        im = Image(gt, pred, task, order, score_kind, iou_threshold)
        M = len(gt.rels)
        preds_of = [int(p) for p in gt.rels[:, 2]]
        for fam, cands in (("gc", im.gc), ("ng", im.ng)):
            for k in (20, 50, 100):
                hits = im.hit_rows(cands, k)
                R[fam][k].append(len(hits) / M)
                for c in set(preds_of):
                    rows_c = [r for r in range(M) if preds_of[r] == c]
                    mr[fam][k][c].append(sum(r in hits for r in rows_c) / len(rows_c))
                for name, members in (groups or {}).items():  # the image's rows of the group, if any
                    rows_g = [r for r in range(M) if preds_of[r] in members]
                    if rows_g:
                        group_r[fam, k, name].append(sum(r in hits for r in rows_g) / len(rows_g))
                if zs is not None:
                    zrows = [
                        r
                        for r in range(M)
                        if (int(gt.labels[gt.rels[r][0]]), int(gt.labels[gt.rels[r][1]]), preds_of[r]) in zs
                    ]
                    if zrows:
                        zr[fam][k].append(sum(r in hits for r in zrows) / len(zrows))
        for k in (10, 20, 50):
            for c in set(preds_of):
                rows_c = [r for r in range(M) if preds_of[r] == c]
                imr["IMR"][k][c].append(sum(im.imr_hit(r, k) for r in rows_c) / len(rows_c))
                imr["ng-IMR"][k][c].append(sum(im.ng_imr_hit(r, k) for r in rows_c) / len(rows_c))
        if task != "sgdet":
            gt_pairs = {(int(s), int(o)) for s, o, _ in gt.rels}
            filtered = [(j, c) for j, c in im.gc if im.pairs[j] in gt_pairs]
            for k in (20, 50, 100):
                acc_hit[k] += len(im.hit_rows(filtered, k))
            acc_cnt += M
            for r in range(M):
                rank = im.triplet_rank(r)
                s, o, p = int(gt.labels[gt.rels[r][0]]), int(gt.labels[gt.rels[r][1]]), preds_of[r]
                w = 1.0 / (triplet_counts[s, o, p] + 1.0) if triplet_counts is not None else 0.0
                tr_rows += 1
                tr_w += w
                for k in tr_hit:
                    if rank is not None and rank < k:
                        tr_hit[k] += 1
                        tr_w_hit[k] += w
        for r in range(M):
            rank = im.predicate_rank(r)
            if rank is not None:
                prk[preds_of[r]].append(rank)
        for k in (20, 50, 100):
            h, u = im.pair_hits(k)
            pr[k].append(h / u)
        matched = sum(
            any(obj_ok(gt, g, im.boxes, im.labels, q, im.thr) for q in range(len(im.labels)))
            for g in range(len(gt.labels))
        )
        inst.append(matched / len(gt.labels))
        for x in (1, 2, 10):
            hits = im.hit_rows(im.gc, int(math.floor(x * M + 0.5)))
            rel[x].append(len(hits) / M)
            for c in set(preds_of):
                rows_c = [r for r in range(M) if preds_of[r] == c]
                rel_mr[x][c].append(sum(r in hits for r in rows_c) / len(rows_c))

    def mean(v):  # the exact sum rounded once (docs/definitions.md §3), then divided
        return math.fsum(v) / len(v) if v else 0.0

    out = {}
    for k in (20, 50, 100):
        out[f"R@{k}"] = mean(R["gc"][k])
        out[f"ngR@{k}"] = mean(R["ng"][k])
        out[f"mR@{k}"] = sum(mean(mr["gc"][k][c]) for c in range(1, C + 1)) / C
        out[f"ng-mR@{k}"] = sum(mean(mr["ng"][k][c]) for c in range(1, C + 1)) / C
        for name, members in (groups or {}).items():  # head/body/tail: {group: 1-based predicate ids}
            for fam, prefix in (("gc", "mR"), ("ng", "ng-mR")):
                out[f"{prefix}_{name}@{k}"] = (
                    sum(mean(mr[fam][k][c]) for c in members) / len(members) if members else None
                )
            for fam, prefix in (("gc", "R"), ("ng", "ngR")):
                out[f"{prefix}_{name}@{k}"] = mean(group_r[fam, k, name]) if group_r[fam, k, name] else None
        for r, m, name in (
            (out[f"R@{k}"], out[f"mR@{k}"], f"F1@{k}"),
            (out[f"ngR@{k}"], out[f"ng-mR@{k}"], f"ng-F1@{k}"),
        ):
            out[name] = 0.0 if r + m == 0 else 2 * r * m / (r + m)  # harmonic mean of R and mR (issue 12)
        out[f"zR@{k}"] = mean(zr["gc"][k]) if zr["gc"][k] else None
        out[f"ng-zR@{k}"] = mean(zr["ng"][k]) if zr["ng"][k] else None
        out[f"A@{k}"] = acc_hit[k] / acc_cnt if task != "sgdet" and acc_cnt else None
        out[f"PR@{k}"] = mean(pr[k])
    for k in (10, 20, 50):
        for variant, prefix in (("IMR", ""), ("ng-IMR", "ng-")):
            per_c = [mean(imr[variant][k][c]) for c in range(1, C + 1)]
            out[f"{prefix}IMR@{k}"] = sum(per_c) / C
            if num_pairs is not None:
                w = [float(num_pairs[c]) ** tau for c in range(1, C + 1)]
                out[f"{prefix}wIMR@{k}"] = sum(wi * v for wi, v in zip(w, per_c)) / sum(w)
    for k in (5, 10, 15, 20, 50):
        out[f"R_tr@{k}"] = tr_hit[k] / tr_rows if task != "sgdet" and tr_rows else None
        out[f"wR_tr@{k}"] = tr_w_hit[k] / tr_w if task != "sgdet" and tr_rows and triplet_counts is not None else None
    with_rank = [c for c in range(1, C + 1) if prk[c]]
    out["PRk"] = sum(mean(prk[c]) for c in with_rank) / len(with_rank) if with_rank else None
    out["InstR"] = mean(inst) if task == "sgdet" else None
    for x in (1, 2, 10):
        out[f"R@{x}x"] = mean(rel[x])
        out[f"mR@{x}x"] = sum(mean(rel_mr[x][c]) for c in range(1, C + 1)) / C
    return out, evaluated
