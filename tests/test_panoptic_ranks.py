"""``panoptic_ranks.first_hit`` of an assignment (``pred2gt``, ranked by keys in a table) equals the first hit
read off the same assignment as an ``ok [P, G]`` matrix, on random lists with repeats and unmatched ends; the
protocols' end-to-end loop references are in ``test_psg.py``."""

from __future__ import annotations

import numpy as np
import pytest

from sgg_eval.panoptic.ranks import _KEY_SPACE, first_hit, instance_ok, predicate_rank_cells, stood_for

C = 56  # PSG's predicates


@pytest.mark.parametrize("n_gt", [1, 3, 30, 200])
def test_first_hit_of_an_assignment_equals_its_ok_matrix(n_gt):
    assert (200 * 200 * C > _KEY_SPACE) and (30 * 30 * C <= _KEY_SPACE)  # 200: the matrix fallback is tested too
    rng = np.random.default_rng(n_gt)
    for _ in range(60):
        p, r, m = int(rng.integers(1, 40)), int(rng.integers(0, 300)), int(rng.integers(1, 20))
        pred2gt = np.where(rng.random(p) < 0.7, rng.integers(0, n_gt, p), -1)
        rows = np.column_stack([rng.integers(0, p, r), rng.integers(0, p, r), rng.integers(0, 4, r)]).astype(np.int16)
        rows = np.concatenate([rows, rows[: r // 3]])  # repeated rows: the first must win
        gt = np.column_stack([rng.integers(0, n_gt, m), rng.integers(0, n_gt, m), rng.integers(0, 4, m)])
        ok = instance_ok(pred2gt, n_gt)
        for gp in (gt[:, 2], None):
            want = first_hit(ok, rows, gt[:, 0], gt[:, 1], gp)
            assert np.array_equal(first_hit(pred2gt, rows, gt[:, 0], gt[:, 1], gp, n_gt), want)
        assert np.array_equal(stood_for(pred2gt, n_gt), ok.any(axis=0))


def test_first_hit_finds_the_earliest_row():
    pred2gt = np.array([1, 0, -1, 0])
    rows = np.array([[2, 1, 0], [3, 0, 5], [1, 0, 5], [0, 1, 5], [3, 0, 5]], dtype=np.int16)
    gs, go, gp = np.array([0, 1, 1]), np.array([1, 0, 0]), np.array([5, 5, 4])
    # row 0 has an unmatched subject; rows 1, 2 and 4 all stand for (0, 1, 5); row 3 for (1, 0, 5)
    assert first_hit(pred2gt, rows, gs, go, gp, 2).tolist() == [1, 3, np.iinfo(np.int64).max]


def loop_prank_cells(gt_triplets, pred2gt, ng, c):
    """sgbench's PRank of one image, walked row by row from the module docstring's definition."""
    rank_of, seen_in_pair = {}, {}
    for s, o, p in ng.tolist():
        a, b = int(pred2gt[s]), int(pred2gt[o])
        if a < 0 or b < 0 or (a, b, p) in rank_of:
            continue
        rank_of[(a, b, p)] = seen_in_pair.get((a, b), 0)
        seen_in_pair[(a, b)] = rank_of[(a, b, p)] + 1
    cells = []
    for p in range(c):
        got = [rank_of[t] for t in map(tuple, gt_triplets.tolist()) if t[2] == p and t in rank_of]
        cells.append(sum(got) / len(got) if got else np.nan)
    return np.array(cells)


@pytest.mark.parametrize("n_gt", [1, 4, 30, 200])  # 200: beyond the key table, the sorted look-up
def test_predicate_rank_cells_equal_the_loop(n_gt):
    rng = np.random.default_rng(100 + n_gt)
    for _ in range(40):
        p, r = int(rng.integers(1, 30)), int(rng.integers(0, 400))
        pred2gt = np.where(rng.random(p) < 0.7, rng.integers(0, n_gt, p), -1)
        ng = np.column_stack([rng.integers(0, p, r), rng.integers(0, p, r), rng.integers(0, 5, r)]).astype(np.int16)
        mapped = np.column_stack([pred2gt[ng[:, 0]], pred2gt[ng[:, 1]], ng[:, 2]])
        mapped = mapped[(mapped[:, :2] >= 0).all(axis=1)][:8]  # GT triplets the list reaches, and random ones
        random = np.column_stack([rng.integers(0, n_gt, 8), rng.integers(0, n_gt, 8), rng.integers(0, 5, 8)])
        gt = np.unique(np.concatenate([mapped, random]), axis=0)
        got = predicate_rank_cells(gt, n_gt, pred2gt, ng, C)
        np.testing.assert_array_equal(got, loop_prank_cells(gt, pred2gt, ng, C))
