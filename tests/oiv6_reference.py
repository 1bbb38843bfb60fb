"""A slow loop reference for the Open Images V6 protocol, written from its rules (docs/oiv6.md), one image, one
candidate and one GT row at a time, to test ``sgg_eval.metrics.oiv6`` against. Plain Python, except that boxes
and scores are numpy float32 scalars, because the rules compute them in float32 (an IoU of exactly 0.5 is decided
in float32 arithmetic)."""

from __future__ import annotations

import numpy as np

F = np.float32


def box_iou(a, b) -> np.float32:
    """IoU of two xyxy boxes with the +1 pixel convention, every step in float32."""
    area_a = (F(a[2]) - F(a[0]) + F(1)) * (F(a[3]) - F(a[1]) + F(1))
    area_b = (F(b[2]) - F(b[0]) + F(1)) * (F(b[3]) - F(b[1]) + F(1))
    w = max(min(F(a[2]), F(b[2])) - max(F(a[0]), F(b[0])) + F(1), F(0))
    h = max(min(F(a[3]), F(b[3])) - max(F(a[1]), F(b[1])) + F(1), F(0))
    inter = F(w * h)
    return F(inter / (area_a + area_b - inter))


def union(a, b) -> list:
    return [min(F(a[0]), F(b[0])), min(F(a[1]), F(b[1])), max(F(a[2]), F(b[2])), max(F(a[3]), F(b[3]))]


def candidates(pred) -> list[tuple]:
    """(score, subject, object, predicate) of the kept candidates of one prediction, in rank order."""
    out = []
    n_pred = pred.rel_scores.shape[1] - 1
    for index, (s, o) in enumerate(pred.pairs):
        probs = pred.rel_scores[index]
        ranked = sorted(range(1, n_pred + 1), key=lambda c: (-probs[c], c))[:2]
        for rank, c in enumerate(ranked):
            score = pred.obj_scores[s] * pred.obj_scores[o] * probs[c]  # float32 products, left to right
            out.append((score, index, rank, int(s), int(o), c))
    out.sort(key=lambda t: (-t[0], t[1], t[2]))
    out = out[:100]
    return [(t[0], t[3], t[4], t[5]) for t in out if t[0] > np.asarray(1e-5, dtype=np.asarray(t[0]).dtype)]


def evaluate(images: list, num_predicates: int) -> dict:
    """Every number of the protocol for (GT, prediction) ``images``; ``AP_rel`` / ``AP_phr`` lists by predicate."""
    ks = (1, 5, 10, 20, 50, 100)
    hits = {k: 0 for k in ks}
    per_image = {k: [] for k in ks}
    total = 0
    dets = {c: [] for c in range(1, num_predicates + 1)}  # c -> (score, image, order, candidate)
    gts = {}  # (image, c) -> list of GT rows of predicate c
    npos = {c: 0 for c in range(1, num_predicates + 1)}
    for i, (gt, pred) in enumerate(images):
        cands = candidates(pred)
        rows = [tuple(int(v) for v in r) for r in gt.rels]
        total += len(rows)
        first = []
        for s, o, p in rows:
            hit = None
            for rank, (_, cs, co, cp) in enumerate(cands):
                if (
                    cp == p
                    and pred.labels[cs] == gt.labels[s]
                    and pred.labels[co] == gt.labels[o]
                    and box_iou(pred.boxes[cs], gt.boxes[s]) >= 0.5
                    and box_iou(pred.boxes[co], gt.boxes[o]) >= 0.5
                ):
                    hit = rank
                    break
            first.append(hit)
        for k in ks:
            h = sum(1 for f in first if f is not None and f < k)
            hits[k] += h
            per_image[k].append(h / (len(rows) + 1e-12))
        for g, (s, o, p) in enumerate(rows):
            gts.setdefault((i, p), []).append((g, s, o))
            npos[p] += 1
        for order, cand in enumerate(cands):
            dets[cand[3]].append((cand[0], i, order, cand))
    out = {f"R@{k}": hits[k] / (total + 1e-12) for k in ks}
    out.update({f"R_per_image@{k}": float(np.mean(per_image[k])) for k in ks})
    for kind in ("rel", "phr"):
        aps = []
        for c in range(1, num_predicates + 1):
            ranked = sorted(dets[c], key=lambda d: (-d[0], d[1], d[2]))
            taken = set()
            tp, fp = [], []
            for score, i, _, (_, cs, co, _) in ranked:
                gt, pred = images[i]
                best, best_g = None, None
                for g, s, o in gts.get((i, c), []):
                    same = pred.labels[cs] == gt.labels[s] and pred.labels[co] == gt.labels[o]
                    if kind == "rel":
                        ov = min(box_iou(pred.boxes[cs], gt.boxes[s]), box_iou(pred.boxes[co], gt.boxes[o]))
                    else:
                        ov = box_iou(union(pred.boxes[cs], pred.boxes[co]), union(gt.boxes[s], gt.boxes[o]))
                    ov = ov if same else F(0)
                    if best is None or ov > best:
                        best, best_g = ov, g
                ok = best is not None and best > 0.5 and (i, best_g) not in taken
                if ok:
                    taken.add((i, best_g))
                tp.append(1.0 if ok else 0.0)
                fp.append(0.0 if ok else 1.0)
            aps.append(voc_ap(tp, fp, npos[c]))
        out[f"AP_{kind}"] = aps
        out[f"mAP_{kind}"] = sum(aps) / num_predicates
        out[f"wmAP_{kind}"] = sum(ap * npos[c + 1] / total for c, ap in enumerate(aps))
    out["score_wtd"] = 0.2 * out["R@50"] + 0.4 * out["wmAP_rel"] + 0.4 * out["wmAP_phr"]
    out["score"] = 0.2 * out["R@50"] + 0.4 * out["mAP_rel"] + 0.4 * out["mAP_phr"]
    return out


def voc_ap(tp: list, fp: list, npos: int) -> float:
    """VOC's all-points AP: precision made non-increasing from the right, summed over the recall steps."""
    ctp = cfp = 0.0
    rec, prec = [], []
    for t, f in zip(tp, fp):
        ctp, cfp = ctp + t, cfp + f
        rec.append(ctp / (npos + 1e-12))
        prec.append(ctp / max(ctp + cfp, np.finfo(np.float64).eps))
    mrec, mpre = [0.0, *rec, 1.0], [0.0, *prec, 0.0]
    for j in range(len(mpre) - 2, -1, -1):
        mpre[j] = max(mpre[j], mpre[j + 1])
    return sum((mrec[j + 1] - mrec[j]) * mpre[j + 1] for j in range(len(mrec) - 1) if mrec[j + 1] != mrec[j])
