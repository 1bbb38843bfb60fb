"""The sets protocol's matching (text/sets.py, issue 48): one-to-one and maximum (checked against an
exhaustive search on random small cases), repeats earn nothing, GC counts a pair once, IoU exactly 0.5 matches."""

from __future__ import annotations

import itertools

import numpy as np

from sgg_eval.text.sets import _kuhn, match_image


def _max_matching(candidates: list[list[int]]) -> int:
    """The largest number of rows given distinct candidates, by trying every choice (small cases only)."""
    best = 0
    for choice in itertools.product(*[[None, *c] for c in candidates]):
        taken = [j for j in choice if j is not None]
        if len(taken) == len(set(taken)):
            best = max(best, len(taken))
    return best


def _assignable(rows: list[int], candidates: list[list[int]]) -> bool:
    return any(len(set(pick)) == len(pick) for pick in itertools.product(*[candidates[r] for r in rows]))


def test_kuhn_is_a_maximum_matching():
    rng = np.random.default_rng(0)
    for _ in range(300):
        rows, right = int(rng.integers(0, 6)), int(rng.integers(1, 6))
        candidates = [
            sorted(rng.choice(right, int(rng.integers(0, right + 1)), replace=False).tolist()) for _ in range(rows)
        ]
        hit = _kuhn(candidates, right)
        assert hit.sum() == _max_matching(candidates), candidates
        assert _assignable(np.flatnonzero(hit).tolist(), candidates), candidates


def _gt():
    boxes = np.array([[0, 0, 9, 9], [20, 20, 29, 29], [40, 40, 49, 49]], dtype=np.float32)
    rels = np.array([[0, 1, 1], [0, 1, 2], [0, 1, 1], [1, 2, 3]])  # a duplicate GT row, two predicates on one pair
    return boxes, np.array([1, 2, 3]), rels


def test_repeats_earn_nothing_and_gc_counts_a_pair_once():
    gt_boxes, gt_labels, gt_rels = _gt()
    boxes = np.array([[0, 0, 9, 9], [20, 20, 29, 29], [0, 0, 9, 9]], dtype=np.float32)  # object 2 repeats object 0
    labels = np.array([1, 2, 1])
    subjects, objects, predicates = np.array([0, 2, 0, 0]), np.array([1, 1, 1, 1]), np.array([1, 1, 2, 1])
    m = match_image(gt_boxes, gt_labels, gt_rels, boxes, labels, subjects, objects, predicates)
    assert m.n_triplets == 2 and m.n_pairs == 1  # (0,1,1) three times is one triplet; one pair
    assert m.hit_ng.tolist() == [True, True, False, False]  # the duplicate GT row needs a second triplet
    assert m.hit_gc.sum() == 1  # the pair answered twice counts once


def test_iou_exactly_half_matches_and_classes_must_agree():
    gt_boxes, gt_labels, gt_rels = _gt()
    half = np.array([[0, 0, 4, 9], [20, 20, 29, 29]], dtype=np.float32)  # 5 of 10 pixel columns: IoU 0.5 (+1 px)
    args = (np.array([0]), np.array([1]), np.array([1]))
    assert match_image(gt_boxes, gt_labels, gt_rels, half, np.array([1, 2]), *args).hit_ng.sum() == 1
    below = half.copy()
    below[0, 2] = 3.9
    assert match_image(gt_boxes, gt_labels, gt_rels, below, np.array([1, 2]), *args).hit_ng.sum() == 0
    assert match_image(gt_boxes, gt_labels, gt_rels, half, np.array([1, 3]), *args).hit_ng.sum() == 0


def test_empty_answers_and_empty_gt():
    gt_boxes, gt_labels, gt_rels = _gt()
    none = np.zeros(0, dtype=np.int64)
    m = match_image(gt_boxes, gt_labels, gt_rels, np.zeros((0, 4), np.float32), none, none, none, none)
    assert m.hit_ng.tolist() == [False] * 4 and m.n_triplets == m.n_pairs == 0
    m = match_image(gt_boxes, gt_labels, gt_rels[:0], gt_boxes, gt_labels, np.array([0]), np.array([1]), np.array([1]))
    assert len(m.hit_ng) == 0 and m.n_triplets == 1


def _loop_values(images, num_predicates, variant):
    """The SetTotals formulas written out with loops, from each image's (match, GT predicates)."""
    kept = [(m, g) for m, g in images if len(g)]
    hit_of = {"ng": lambda m: m.hit_ng, "gc": lambda m: m.hit_gc}[variant]
    n_of = {"ng": lambda m: m.n_triplets, "gc": lambda m: m.n_pairs}[variant]
    recalls, precisions, f1s, tp_all, n_all, rows = [], [], [], 0, 0, 0
    per_c = {c: [] for c in range(1, num_predicates + 1)}
    for m, g in kept:
        tp, n = int(sum(hit_of(m))), n_of(m)
        r = tp / len(g)
        recalls.append(r)
        if n:
            precisions.append(tp / n)
        p = tp / n if n else 0.0
        f1s.append(0.0 if tp == 0 else 2 * p * r / (p + r))
        tp_all, n_all, rows = tp_all + tp, n_all + n, rows + len(g)
        for c in set(g.tolist()):
            idx = [i for i in range(len(g)) if g[i] == c]
            per_c[c].append(sum(bool(hit_of(m)[i]) for i in idx) / len(idx))
    rp, pp = tp_all / rows, (tp_all / n_all if n_all else None)
    return {
        "R": sum(recalls) / len(kept), "R_pooled": rp, "P": sum(precisions) / len(precisions) if precisions else None,
        "P_pooled": pp, "F1": sum(f1s) / len(kept),
        "F1_pooled": None if pp is None else (0.0 if pp + rp == 0 else 2 * pp * rp / (pp + rp)),
        "mR": sum(sum(v) / len(v) if v else 0.0 for v in per_c.values()) / num_predicates,
    }  # fmt: skip


def test_totals_equal_the_loop_formulas():
    from sgg_eval.text.sets import SetTotals

    rng = np.random.default_rng(1)
    num_predicates, images = 5, []
    for i in range(200):
        n_gt = int(rng.integers(0, 5))
        corner = rng.uniform(0, 50, (n_gt, 2))
        gt_boxes = np.hstack([corner, corner + 12]).astype(np.float32)
        gt_labels = rng.integers(1, 3, n_gt)
        count = int(rng.integers(0, 6)) if n_gt >= 2 else 0
        rows = [[*rng.choice(n_gt, 2, replace=False), rng.integers(1, num_predicates + 1)] for _ in range(count)]
        rels = np.array(rows, dtype=np.int64).reshape(-1, 3)
        keep = rng.random(n_gt) < 0.8  # the answer: some GT objects, some relations, some repeated or wrong
        boxes, labels = gt_boxes[keep].copy(), gt_labels[keep]
        boxes[rng.random(len(boxes)) < 0.2] += 30  # misplaced: its pairs match nothing
        index = np.cumsum(keep) - 1
        answer = [r for r in rels if keep[r[0]] and keep[r[1]] and rng.random() < 0.7]
        answer += [r for r in answer if rng.random() < 0.3]  # repeats
        answer += [[r[0], r[1], int(rng.integers(1, num_predicates + 1))] for r in answer if rng.random() < 0.3]
        a = np.array(answer, dtype=np.int64).reshape(-1, 3)
        m = match_image(gt_boxes, gt_labels, rels, boxes.reshape(-1, 4), labels, index[a[:, 0]] if len(a) else a[:, 0],
                        index[a[:, 1]] if len(a) else a[:, 1], a[:, 2])  # fmt: skip
        images.append((m, rels[:, 2]))
    totals = SetTotals(num_predicates)
    for m, g in images:
        totals.add(m, g)
    for variant in ("ng", "gc"):
        ours, ref = totals.values(variant), _loop_values(images, num_predicates, variant)
        for name, expected in ref.items():
            assert (ours[name] is None) == (expected is None), name
            if expected is not None:
                assert abs(ours[name] - expected) <= 1e-12, (variant, name, ours[name], expected)
