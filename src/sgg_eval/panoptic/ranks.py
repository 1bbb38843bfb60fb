"""Panoptic SGG: one image's first-match ranks, whatever the protocol: the records ``metrics.reduce`` reduces
into the metric family, as for boxes (``metrics.ranking``).

A protocol (``psg_evaluate``) gives each image two things:

- ``ok [P, G]`` bool, predicted instance q may stand for GT instance g. Protocols ``sgbench`` and
  ``sgbench-paper``: ``pred2gt[q] = g`` (one GT instance per prediction: ``panoptic.matching.assign``,
  ``panoptic.matching.assign_one_to_one``), given as ``pred2gt [P]`` itself (−1: none), which ranks by keys in linear
  time; ``openpsg``: :func:`triplet_ok`, same class and IoU ≥ 0.5, so per triplet a prediction may stand for
  several GT instances.
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

``top_predicates`` gives each GT row the predicate of the first gc row standing for both its ends (the
predicate confusion matrix, as the box tasks' ``top_predicate``).

``predicate_rank_cells`` is sgbench's PRank of one image, for the protocols that map instances: walking the
mapped ``ng`` rows in order, skipping rows with an unmatched end, a triplet first seen gets the number of
distinct triplets of its GT pair seen before it (0 is best); per predicate p, the mean of its GT triplets'
ranks (those present), NaN for none.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.arrays.segments import first_positions, first_seen, position_in_runs
from sgg_eval.metrics.rank_records import ImageRanks
from sgg_eval.metrics.ranking.families import NO_MATCH, first_true, within_predicate
from sgg_eval.panoptic.matching import IOU

_KEY_SPACE = 1 << 20  # (GT subject, GT object, predicate) keys up to this are looked up in a table


def instance_ok(pred2gt: np.ndarray, n_gt: int) -> np.ndarray:
    """``ok [P, G]`` of an instance assignment: prediction q stands for GT instance ``pred2gt[q]`` only."""
    return pred2gt[:, None] == np.arange(n_gt)[None, :]


def stood_for(match: np.ndarray, n_gt: int) -> np.ndarray:
    """``[G]`` bool: the GT instances some prediction stands for, from ``ok [P, G]`` or ``pred2gt [P]``."""
    if match.ndim == 2:
        return match.any(axis=0)
    return np.bincount(match[match >= 0], minlength=n_gt)[:n_gt] > 0


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
    match: np.ndarray, rows: np.ndarray, gs: np.ndarray, go: np.ndarray, gp: np.ndarray | None = None, n_gt: int = 0
) -> np.ndarray:
    """Per GT row ``(gs, go, gp)`` (or pair, when ``gp`` is None), the position of the first list row hitting it.
    ``match``: ``ok [P, G]``, or ``pred2gt [P]`` of ``n_gt`` GT instances."""
    if len(rows) == 0 or len(gs) == 0:
        return np.full(len(gs), NO_MATCH, dtype=np.int64)
    if match.ndim == 1:
        c = 1 if gp is None else int(max(rows[:, 2].max(), gp.max())) + 1
        if n_gt * n_gt * c <= _KEY_SPACE:
            return _first_hit_assigned(match, n_gt, c, rows, gs, go, gp)
    ok = instance_ok(match, n_gt) if match.ndim == 1 else match
    hit = ok[:, gs][rows[:, 0]] & ok[:, go][rows[:, 1]]  # [rows, GT rows], gathered from [P, GT rows]
    if gp is not None:
        hit &= rows[:, 2:3] == gp[None, :]
    return first_true(hit.T)


def _first_hit_assigned(
    pred2gt: np.ndarray, n_gt: int, c: int, rows: np.ndarray, gs: np.ndarray, go: np.ndarray, gp: np.ndarray | None
) -> np.ndarray:
    """:func:`first_hit` of an assignment: a list row hits exactly the GT rows with its key (``pred2gt`` of its
    ends, its predicate), so one table of each key's first row answers every GT row."""
    a, b = pred2gt[rows[:, 0]], pred2gt[rows[:, 1]]
    at = np.flatnonzero((a >= 0) & (b >= 0))  # rows with both ends matched
    key = a[at] * n_gt + b[at]
    gt_key = gs.astype(np.int64) * n_gt + go
    if gp is not None:
        key = key * c + rows[at, 2]
        gt_key = gt_key * c + gp
    return first_positions(key, np.full(n_gt * n_gt * c, NO_MATCH, dtype=np.int64), at)[gt_key]


def image_ranks(
    gt_triplets: np.ndarray, n_gt: int, match: np.ndarray, gc: np.ndarray, ng: np.ndarray | None
) -> tuple[ImageRanks, ImageRanks]:
    """``(ranks, reach)`` of one image of ``n_gt`` GT instances; ``match`` is ``ok [P, G]`` or ``pred2gt [P]``
    (module docstring); ``ng`` is None when the submission has no no-graph-constraint lists. Predicates are
    shifted by one: the reducer's predicate axis keeps index 0 for background."""
    gs, go, gp = gt_triplets[:, 0], gt_triplets[:, 1], gt_triplets[:, 2]
    pairs = np.unique(gt_triplets[:, :2], axis=0)
    standing = stood_for(match, n_gt)
    matched = int(standing.sum())
    gc_rank = first_hit(match, gc, gs, go, gp, n_gt)
    ranks = ImageRanks(
        gp + 1,
        gc_rank,
        first_hit(match, gc, pairs[:, 0], pairs[:, 1], n_gt=n_gt),
        n_gt,
        matched,
        imr=within_predicate(gc_rank, gc[:, 2]),
        ng=None if ng is None else first_hit(match, ng, gs, go, gp, n_gt),
    )
    reach = ImageRanks(
        gp + 1,
        np.where(standing[gs] & standing[go], 0, NO_MATCH),
        np.where(standing[pairs[:, 0]] & standing[pairs[:, 1]], 0, NO_MATCH),
        n_gt,
        matched,
    )
    return ranks, reach


def top_predicates(gt_triplets: np.ndarray, n_gt: int, match: np.ndarray, gc: np.ndarray) -> np.ndarray:
    """Per GT row, the predicate (shifted by one, as the reducer's axis) of the first ``gc`` row standing for both
    its ends, whatever its predicate: what the model ranks first for the row's pair (the confusion matrix);
    -1 where no row stands for both."""
    first = first_hit(match, gc, gt_triplets[:, 0], gt_triplets[:, 1], n_gt=n_gt)
    found = first != NO_MATCH
    top = np.full(len(first), -1, dtype=np.int64)
    top[found] = gc[first[found], 2] + 1
    return top


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
    space = (n_gt + 1) * (n_gt + 1) * c
    keys = _keys(mapped, n_gt, c)
    keys = keys[first_seen(keys, space)]  # distinct triplets in the order first seen
    pair = keys // c
    by_pair = np.argsort(pair, kind="stable")  # within a pair: the order first seen
    rank = np.empty(len(keys), dtype=np.int64)
    rank[by_pair] = position_in_runs(pair[by_pair])
    gt_keys = _keys(gt_triplets, n_gt, c)
    if space <= _KEY_SPACE:
        table = np.full(space, -1, dtype=np.int64)
        table[keys] = rank  # distinct keys: one write each
        found = table[gt_keys]
    else:
        lookup = np.argsort(keys)
        at = np.minimum(np.searchsorted(keys[lookup], gt_keys), len(keys) - 1)
        found = np.where(keys[lookup][at] == gt_keys, rank[lookup][at], -1)
    present = found >= 0
    p = gt_triplets[present, 2]
    total = np.bincount(p, weights=found[present], minlength=c)
    count = np.bincount(p, minlength=c)
    return np.divide(total, count, out=ranks, where=count > 0)
