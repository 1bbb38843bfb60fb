"""A slow, obviously-correct R1-SGG scorer written from docs/text_graphs.md's words with plain loops (tests only): its
loop (metric A) and its SggEvaluator's R@K, ngR@K, mR@K, ng-mR@K, zR@K and ng-zR@K (metric B), on answers already
read and mapped (``text.r1sgg.answers``, ``text.r1sgg.names``; their rules have their own tests). It shares
no code with sgg_eval.metrics: every candidate list is spelled out and every hit found by a scan."""

from __future__ import annotations

import numpy as np
from reference_metrics import iou as iou_plus1


def iou_continuous(a, b) -> float:
    xa, ya, xb, yb = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    inter = max(0, xb - xa) * max(0, yb - ya)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return 0.0 if union == 0 else inter / union


def loop_metrics(rows, answers) -> dict:
    """Metric A over every GT row of ``rows``; ``answers``: image id -> MappedAnswer (None: failure, absent: no
    answer)."""
    hits, by_pred, per_image, per_image_pred = [], {}, [], {}
    for img in rows:
        answer, mine, mine_pred = answers.get(img.image_id), [], {}
        for s, o, p in img.rels.tolist():
            hit = False
            if answer is not None:
                for j in range(len(answer.predicates)):
                    a_s, a_o = answer.subjects[j], answer.objects[j]
                    if answer.predicates[j] != p or answer.labels[a_s] != img.labels[s]:
                        continue
                    if answer.labels[a_o] != img.labels[o]:
                        continue
                    iou_s = iou_continuous(img.boxes[s], answer.boxes[a_s])
                    if iou_s >= 0.5 and iou_continuous(img.boxes[o], answer.boxes[a_o]) >= 0.5:
                        hit = True
                        break
            hits.append(hit)
            mine.append(hit)
            by_pred.setdefault(p, []).append(hit)
            mine_pred.setdefault(p, []).append(hit)
        if mine:
            per_image.append(sum(mine) / len(mine))
        for p, v in mine_pred.items():
            per_image_pred.setdefault(p, []).append(sum(v) / len(v))
    pooled = [round(np.mean(v), 4) for v in by_pred.values()]
    per_pred = [round(np.mean(v), 4) for v in per_image_pred.values()]
    return {
        "ngR_loop": sum(hits) / len(hits),
        "ng-mR_loop": sum(pooled) / len(pooled),
        "ngR_loop_per_image": float(np.mean(per_image)),
        "ng-mR_loop_per_image": sum(per_pred) / len(per_pred),
    }


def ranked_metrics(rows, answers, num_predicates: int, zeroshot: set, ties: str = "numpy") -> dict:
    """Metric B over the answered images; ``zeroshot`` holds (subject, object, predicate) in the rows' ids; ``ties``:
    the order of equal ng cells, numpy's (as R1-SGG), or forced: ``hits_first`` (the cells that hit a GT row of the
    image before the others) or ``hits_last``."""
    recall = {(f, ng, k): [] for f in ("R", "zR") for ng in (False, True) for k in (20, 50, 100)}
    per_pred = {(ng, k): {} for ng in (False, True) for k in (20, 50, 100)}
    for img in rows:
        if img.image_id not in answers or not len(img.rels):
            continue
        answer = answers[img.image_id]
        if answer is not None and len(answer.labels) and not len(answer.predicates):
            continue  # objects but no kept relation: no predicted pair, skipped
        gc, ng = _candidates(answer, num_predicates, ties, img)
        zs_rows = [g for g, (s, o, p) in enumerate(img.rels.tolist()) if (img.labels[s], img.labels[o], p) in zeroshot]
        for is_ng, cands in ((False, gc), (True, ng)):
            for k in (20, 50, 100):
                top = cands[: min(k, 100) if is_ng else k]
                hit = [any(_match(img, g, answer, c) for c in top) for g in range(len(img.rels))]
                recall[("R", is_ng, k)].append(sum(hit) / len(hit))
                if zs_rows:
                    recall[("zR", is_ng, k)].append(sum(hit[g] for g in zs_rows) / len(zs_rows))
                for p in set(img.rels[:, 2].tolist()):
                    mine = [hit[g] for g in range(len(img.rels)) if img.rels[g, 2] == p]
                    per_pred[(is_ng, k)].setdefault(p, []).append(sum(mine) / len(mine))
    out = {}
    for (f, is_ng, k), v in recall.items():
        name = ("ngR" if f == "R" else "ng-zR") if is_ng else f
        out[f"{name}@{k}"] = float(np.mean(v)) if v else None
    for (is_ng, k), lists in per_pred.items():
        total = sum(float(np.mean(lists[p])) for p in range(1, num_predicates + 1) if p in lists)
        out[f"{'ng-' if is_ng else ''}mR@{k}"] = total / num_predicates
    return out


def _candidates(answer, num_predicates: int, ties: str = "numpy", img=None) -> tuple[list, list]:
    """GC: the kept relations in answer order; NG: every (relation, predicate) cell, ordered as R1-SGG's
    ``np.argsort`` of minus (one x one-hot) orders them (or with its ties forced, ``ranked_metrics``), the first 100.
    A failure or placeholder: one pair that matches nothing."""
    if answer is None or not len(answer.labels):
        return [None], [None] * num_predicates
    gc = [(answer.subjects[j], answer.objects[j], answer.predicates[j]) for j in range(len(answer.predicates))]
    cells = np.zeros((len(gc), num_predicates))
    for j, (_, _, p) in enumerate(gc):
        cells[j, p - 1] = 1.0
    every = [(gc[i // num_predicates][0], gc[i // num_predicates][1], i % num_predicates + 1)
             for i in range(cells.size)]  # fmt: skip
    if ties == "numpy":
        order = np.argsort(-cells.ravel()).tolist()
    else:
        hit = [any(_match(img, g, answer, c) for g in range(len(img.rels))) for c in every]
        first = ties == "hits_first"
        order = sorted(range(cells.size), key=lambda i: (-cells.ravel()[i], hit[i] != first, i))
    return gc, [every[i] for i in order[:100]]


def _match(img, g, answer, cand) -> bool:
    if cand is None:
        return False
    s, o, p = img.rels[g]
    a_s, a_o, a_p = cand
    if a_p != p or answer.labels[a_s] != img.labels[s] or answer.labels[a_o] != img.labels[o]:
        return False
    boxes = answer.boxes.astype(np.float32)
    half = np.float32(0.5)
    return iou_plus1(img.boxes[s], boxes[a_s]) >= half and iou_plus1(img.boxes[o], boxes[a_o]) >= half
