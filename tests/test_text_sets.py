"""The sets protocol's matching (metrics/text_sets.py, issue 48): one-to-one and maximum (checked against an
exhaustive search on random small cases), repeats earn nothing, GC counts a pair once, IoU exactly 0.5 matches."""

from __future__ import annotations

import itertools

import numpy as np

from sgg_eval.metrics.text_sets import _kuhn, match_image


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
