"""Panoptic SGG: one image's first-match ranks, whatever the protocol: the records ``metrics.reduce`` reduces
into the metric family, as for boxes (``metrics.ranks``).

A protocol (``psg_evaluate``) gives each image two things:

- ``ok [P, G]`` bool, predicted instance q may stand for GT instance g. Protocols ``sgbench`` and
  ``sgbench-paper``: ``pred2gt[q] = g`` (one GT instance per prediction: ``panoptic.assign``,
  ``panoptic.assign_one_to_one``); ``openpsg``: :func:`triplet_ok`, same class and IoU ≥ 0.5, so per triplet a
  prediction may stand for several GT instances.
- the ranked lists (subject, object, predicate), best first: ``gc`` (sgbench: ``triplets`` de-duplicated;
  sgbench-paper: those under the graph constraint, :func:`graph_constrained`; openpsg: ``triplets`` as given)
  and ``ng`` (``ng_triplets`` de-duplicated: the no-graph-constraint list).

A list row ``(s, o, p)`` hits GT row ``(gs, go, gp)`` when ``ok[s, gs] ∧ ok[o, go] ∧ p = gp``. Per GT row:

- ``gc`` / ``ng``: the 0-based position of the first row of the list that hits it (``NO_MATCH``: none), so
  hit@K is ``rank < K`` for every K at once (R@K, mR@K, F1@K, R@k×; ngR@K, ng-mR@K);
- ``imr``: that first gc hit's position among the gc rows that predict gp (IMR@K);
- ``reach`` (in a second record): 0 when both ends have a prediction standing for them
  (``ok[:, gs].any() ∧ ok[:, go].any()``), else ``NO_MATCH``: what a perfect ranking of the predicted
  instances would recall (R@∞ and mR@∞, the SGBench paper's Algorithm 5).

Per distinct GT (subject, object) pair, ``pair``: the first gc row with ``ok[s, gs] ∧ ok[o, go]`` (PR@K). And
``matched_gt_objects``: the GT instances some prediction stands for (InstR).

``predicate_rank_cells`` is sgbench's PRank of one image, for the protocols that map instances: walking the
mapped ``ng`` rows in order, skipping rows with an unmatched end, a triplet first seen gets the number of
distinct triplets of its GT pair seen before it (0 is best); per predicate p, the mean of its GT triplets'
ranks (those present), NaN for none.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.metrics.panoptic import IOU
from sgg_eval.metrics.ranking.rank_records import ImageRanks
from sgg_eval.metrics.ranks import NO_MATCH, first_true, within_predicate


def instance_ok(pred2gt: np.ndarray, n_gt: int) -> np.ndarray:
    """``ok [P, G]`` of an instance assignment: prediction q stands for GT instance ``pred2gt[q]`` only."""
    return pred2gt[:, None] == np.arange(n_gt)[None, :]


def triplet_ok(iou: np.ndarray, labels: np.ndarray, gt_labels: np.ndarray, threshold: float = IOU) -> np.ndarray:
    """``ok [P, G]`` of OpenPSG's per-triplet matching: same class and IoU ≥ ``threshold`` (0.5)."""
    return (iou >= threshold) & (labels[:, None] == gt_labels[None, :])


def graph_constrained(rows: np.ndarray) -> np.ndarray:
    """The rows under the graph constraint: the first (best) row of each predicted (subject, object) pair."""
    if len(rows) == 0:
        return rows
    _, first = np.unique(rows[:, :2], axis=0, return_index=True)
    return rows[np.sort(first)]


def first_hit(
    ok: np.ndarray, rows: np.ndarray, gs: np.ndarray, go: np.ndarray, gp: np.ndarray | None = None
) -> np.ndarray:
    """Per GT row ``(gs, go, gp)`` (or pair, when ``gp`` is None), the position of the first list row hitting it."""
    if len(rows) == 0 or len(gs) == 0:
        return np.full(len(gs), NO_MATCH, dtype=np.int64)
    hit = ok[:, gs][rows[:, 0]] & ok[:, go][rows[:, 1]]  # [rows, GT rows], gathered from [P, GT rows]
    if gp is not None:
        hit &= rows[:, 2:3] == gp[None, :]
    return first_true(hit.T)


def image_ranks(
    gt_triplets: np.ndarray, ok: np.ndarray, gc: np.ndarray, ng: np.ndarray | None
) -> tuple[ImageRanks, ImageRanks]:
    """``(ranks, reach)`` of one image; ``ng`` is None when the submission has no no-graph-constraint lists.
    Predicates are shifted by one: the reducer's predicate axis keeps index 0 for background."""
    gs, go, gp = gt_triplets[:, 0], gt_triplets[:, 1], gt_triplets[:, 2]
    pairs = np.unique(gt_triplets[:, :2], axis=0)
    n_gt = ok.shape[1]
    stood_for = ok.any(axis=0)
    matched = int(stood_for.sum())
    gc_rank = first_hit(ok, gc, gs, go, gp)
    ranks = ImageRanks(
        gp + 1,
        gc_rank,
        first_hit(ok, gc, pairs[:, 0], pairs[:, 1]),
        n_gt,
        matched,
        imr=within_predicate(gc_rank, gc[:, 2]),
        ng=None if ng is None else first_hit(ok, ng, gs, go, gp),
    )
    reach = ImageRanks(
        gp + 1,
        np.where(stood_for[gs] & stood_for[go], 0, NO_MATCH),
        np.where(stood_for[pairs[:, 0]] & stood_for[pairs[:, 1]], 0, NO_MATCH),
        n_gt,
        matched,
    )
    return ranks, reach


def predicate_rank_cells(gt_triplets: np.ndarray, n_gt: int, pred2gt: np.ndarray, ng: np.ndarray, c: int) -> np.ndarray:
    """``[C]`` sgbench's PRank of one image per predicate (module docstring); NaN where undefined."""
    return _predicate_ranks(gt_triplets, _mapped(pred2gt, ng), n_gt, c)


def _mapped(pred2gt: np.ndarray, triplets: np.ndarray) -> np.ndarray:
    return (
        np.column_stack([pred2gt[triplets[:, 0]], pred2gt[triplets[:, 1]], triplets[:, 2]])
        if len(triplets)
        else np.zeros((0, 3), dtype=np.int64)
    )


def _keys(rows: np.ndarray, n_gt: int, c: int) -> np.ndarray:
    """One integer per (s, o, p) row; −1 ends have their own values."""
    return ((rows[:, 0] + 1) * (n_gt + 1) + rows[:, 1] + 1) * c + rows[:, 2]


def _predicate_ranks(gt_triplets: np.ndarray, mapped: np.ndarray, n_gt: int, c: int) -> np.ndarray:
    ranks = np.full(c, np.nan)
    mapped = mapped[(mapped[:, 0] >= 0) & (mapped[:, 1] >= 0)]
    if len(mapped) == 0:
        return ranks
    keys, first = np.unique(_keys(mapped, n_gt, c), return_index=True)
    order = np.argsort(first, kind="stable")  # distinct triplets in the order first seen
    keys = keys[order]
    pair = keys // c
    by_pair = np.argsort(pair, kind="stable")  # within a pair: the order first seen
    sorted_pair = pair[by_pair]
    starts = np.flatnonzero(np.r_[True, sorted_pair[1:] != sorted_pair[:-1]])
    rank = np.empty(len(keys), dtype=np.int64)
    rank[by_pair] = np.arange(len(keys)) - np.repeat(starts, np.diff(np.r_[starts, len(keys)]))
    gt_keys = _keys(gt_triplets, n_gt, c)
    lookup = np.argsort(keys)
    at = np.minimum(np.searchsorted(keys[lookup], gt_keys), len(keys) - 1)
    present = keys[lookup][at] == gt_keys
    p = gt_triplets[present, 2]
    total = np.bincount(p, weights=rank[lookup][at][present], minlength=c)
    count = np.bincount(p, minlength=c)
    return np.divide(total, count, out=ranks, where=count > 0)
