"""The per-image reference ranker: every family of ``sgg_eval.metrics.ranking.families`` for one image, with
plain per-image array operations (no blocks; NG's pruning is exact).

Production ranks blocks of images (``metrics.ranking.block_ranks``); tests compare it with this, image by image,
bit for bit, on random cases and the edge cases. Kept in the tests: it is the slow, readable reference.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.defaults import IOU_THRESHOLD
from sgg_eval.metrics.iou import sgb_iou_matrix
from sgg_eval.metrics.rank_records import ImageRanks
from sgg_eval.metrics.ranking.families import (
    NO_MATCH,
    PAIR_BITS,
    Candidates,
    first_true,
    pair_key,
    pair_products,
    within_predicate,
)
from sgg_eval.metrics.ranking.ng_top import nth_largest, pair_scores


def object_matches(gt_boxes, gt_labels, pred_boxes, pred_labels, iou_threshold: float = IOU_THRESHOLD) -> np.ndarray:
    """``ok[g, q]``: GT object g and predicted object q have the same label and IoU >= threshold.

    A NaN IoU (degenerate boxes) never matches.
    """
    same = np.asarray(gt_labels)[:, None] == np.asarray(pred_labels)[None, :]
    if not same.any():
        return same
    return same & (sgb_iou_matrix(gt_boxes, pred_boxes) >= np.float32(iou_threshold))


def ng_top(probs: np.ndarray, per_pair: np.ndarray, pair_best: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The global NG top ``n`` of one image: (pair index, predicate) per position, descending, ties by flat
    index. ``probs`` ``[P, C + 1]``, ``per_pair`` the pairs' ``s_s * s_o`` and ``pair_best`` their best NG
    scores (``Candidates.pair_best``).

    Only pairs whose best score reaches the ``n``-th largest per-pair best can hold a top-``n`` entry (those
    ``n`` pair bests are ``n`` distinct entries), so only their rows are scored and sorted. A pair's best is
    its largest entry because ``per_pair`` >= 0: readers refuse negative object scores.
    """
    n_pred = probs.shape[1] - 1
    threshold = None
    if len(pair_best) > n:
        threshold = nth_largest(pair_best, n)
        rows = np.flatnonzero(pair_best >= threshold)
    else:
        rows = np.arange(len(pair_best))
    # flat indices into [len(rows), C], i.e. row-major order; the threshold bounds the n-th largest entry too
    top = stable_top(per_pair[rows][:, None] * probs[rows, 1:], n, at_least=threshold)
    return rows[top // n_pred], top % n_pred + 1


def stable_top(scores: np.ndarray, n: int, at_least=None) -> np.ndarray:
    """Flat indices of the ``n`` largest entries, descending, ties by lower flat index. ``at_least``: a value
    that at least ``n`` entries reach (a lower bound of the ``n``-th largest), so no partition is needed to
    find the candidates unless it leaves many."""
    flat = scores.ravel()
    keep = np.flatnonzero(flat >= at_least) if at_least is not None else np.arange(flat.size)
    if len(keep) > 4 * n:
        values = flat[keep]
        keep = keep[values >= np.partition(values, len(values) - n)[len(values) - n]]
    order = np.lexsort((keep, -flat[keep].astype(np.float64)))
    return keep[order][:n]


def image_ranks(
    gt_boxes,
    gt_labels,
    gt_rels,
    cand: Candidates,
    *,
    ng_limit: int = 100,
    gt_pair_family: bool = True,
    triplet_family: bool = True,
    iou_threshold: float = IOU_THRESHOLD,
) -> ImageRanks:
    """All first-match ranks of one image. ``gt_rels`` ``[M, 3]`` must be non-empty.

    Only *viable* pairs (both predicted objects match some GT object) can match any row, so the
    ``[rows, candidates]`` matrices are built over viable pairs only; positions still count every candidate.
    """
    gs, go, gp = gt_rels[:, 0], gt_rels[:, 1], gt_rels[:, 2]
    ok = object_matches(gt_boxes, gt_labels, cand.boxes, cand.labels, iou_threshold)
    n_pairs = len(cand.pairs)
    q_ok = ok.any(axis=0)
    viable = np.flatnonzero(q_ok[cand.pairs[:, 0]] & q_ok[cand.pairs[:, 1]]) if n_pairs else np.zeros(0, np.int64)
    col_of = np.full(n_pairs, -1, dtype=np.int64)
    col_of[viable] = np.arange(len(viable))
    vs, vo = cand.pairs[viable, 0], cand.pairs[viable, 1]
    pm = ok[gs][:, vs] & ok[go][:, vo]  # [M, V]: objects of viable pair v match row r
    # GC candidates on viable pairs, with their true positions in the full GC list
    t_viable = np.flatnonzero(col_of[cand.gc_pairs] >= 0)
    cols = col_of[cand.gc_pairs[t_viable]]
    gc_match = pm[:, cols] & (cand.gc_preds[t_viable][None, :] == gp[:, None])
    uniq_keys = np.unique(pair_key(gs, go))  # distinct GT index pairs
    uniq = np.column_stack([uniq_keys >> PAIR_BITS, uniq_keys & ((1 << PAIR_BITS) - 1)])
    pm_u = ok[uniq[:, 0]][:, vs] & ok[uniq[:, 1]][:, vo]
    gc = _positions(first_true(gc_match), t_viable)
    out = ImageRanks(
        predicates=gp,
        gc=gc,
        imr=within_predicate(gc, cand.gc_preds),
        pair=_positions(first_true(pm_u[:, cols]), t_viable),
        num_gt_objects=len(gt_labels),
        matched_gt_objects=int(ok.any(axis=1).sum()),
    )
    if gt_pair_family:
        gt_keys = pair_key(gs, go)
        on_gt_pair = np.isin(pair_key(cand.pairs[cand.gc_pairs, 0], cand.pairs[cand.gc_pairs, 1]), gt_keys)
        position = np.cumsum(on_gt_pair) - 1  # position among the GT-pair candidates only
        keep = on_gt_pair[t_viable]
        out.gt_pair = _positions(first_true(gc_match[:, keep]), position[t_viable[keep]])
    if cand.probs is None:
        return out
    top_pairs, top_preds = ng_top(cand.probs, pair_products(cand.obj_scores, cand.pairs), cand.pair_best, ng_limit)
    top_cols = col_of[top_pairs]
    sel = top_cols >= 0
    ng_match = pm[:, top_cols[sel]] & (top_preds[sel][None, :] == gp[:, None])
    out.ng = _positions(first_true(ng_match), np.flatnonzero(sel))
    out.per_predicate = _per_predicate_ranks(pair_scores(cand, cols=gp).T, viable, pm)
    out.predicate_rank, out.top_predicate = _predicate_rank(cand, viable, pm, gp)
    if triplet_family:
        out.triplet = _triplet_ranks(cand, col_of, pm, gs, go, gp)
    return out


def _positions(index: np.ndarray, position_of: np.ndarray) -> np.ndarray:
    """Map first-match indices into a sub-list back to positions in the full list."""
    found = index != NO_MATCH
    out = np.full(len(index), NO_MATCH, dtype=np.int64)
    out[found] = position_of[index[found]]
    return out


def _per_predicate_ranks(col: np.ndarray, viable: np.ndarray, pm: np.ndarray) -> np.ndarray:
    """ng-IMR: rank of the best matching pair when all pairs are ranked by ``s_s * s_o * p_c`` (ties: lower pair);
    ``col[r]`` holds the scores of every pair for row r's predicate."""
    m = col.shape[0]
    masked = np.where(pm, col[:, viable], -np.inf)
    has = pm.any(axis=1)
    best = masked.max(axis=1) if pm.shape[1] else np.full(m, -np.inf)
    first = viable[(pm & (masked == best[:, None])).argmax(axis=1)] if pm.shape[1] else np.zeros(m, np.int64)
    higher = (col > best[:, None]).sum(axis=1)
    tied_before = ((col == best[:, None]) & (np.arange(col.shape[1])[None, :] < first[:, None])).sum(axis=1)
    return np.where(has, higher + tied_before, NO_MATCH).astype(np.int64)


def _predicate_rank(cand: Candidates, viable: np.ndarray, pm: np.ndarray, gp: np.ndarray) -> np.ndarray:
    """PRk: rank of the GT predicate among the scores of the first matching pair in GC order; and the predicate
    that pair scores highest (the lowest id among equals), -1 without a matching pair."""
    pos = np.full(len(cand.pairs), NO_MATCH, dtype=np.int64)
    pos[cand.gc_pairs[::-1]] = np.arange(len(cand.gc_pairs))[::-1]  # first GC position of each pair
    ranked = np.where(pm, pos[viable][None, :], NO_MATCH)
    if ranked.shape[1] == 0:
        return np.full(len(gp), np.nan), np.full(len(gp), -1, dtype=np.int64)
    has = ranked.min(axis=1) < NO_MATCH
    probs = cand.probs[viable[ranked.argmin(axis=1)], 1:]
    own = probs[np.arange(len(gp)), gp - 1]
    ids = np.arange(probs.shape[1])[None, :]
    rank = (probs > own[:, None]).sum(axis=1) + ((probs == own[:, None]) & (ids < (gp - 1)[:, None])).sum(axis=1)
    top = np.array([1 + max(range(probs.shape[1]), key=lambda c: (probs[r, c], -c)) for r in range(len(gp))])
    return np.where(has, rank.astype(np.float64), np.nan), np.where(has, top, -1).astype(np.int64)


def _triplet_ranks(cand, col_of, pm, gs, go, gp) -> np.ndarray:
    """R_tr: candidates are the row's index pair in both directions with every predicate."""
    ps, po = cand.pairs[:, 0], cand.pairs[:, 1]
    same = ((ps[None, :] == gs[:, None]) & (po[None, :] == go[:, None])) | (
        (ps[None, :] == go[:, None]) & (po[None, :] == gs[:, None])
    )
    rows, js = np.nonzero(same)  # candidate pairs per row, in pair order
    ranks = np.full(len(gp), NO_MATCH, dtype=np.int64)
    if len(rows) == 0:
        return ranks
    entry_scores = pair_scores(cand, js)  # [E, C]
    own = entry_scores[np.arange(len(rows)), gp[rows] - 1]
    cj = col_of[js]
    matching = np.zeros(len(rows), dtype=bool)
    matching[cj >= 0] = pm[rows[cj >= 0], cj[cj >= 0]]
    best = np.full(len(gp), -np.inf)
    np.maximum.at(best, rows[matching], own[matching])
    # first matching entry at the best score (entries are in pair order within a row)
    is_best = matching & (own == best[rows])
    first_entry = np.full(len(gp), len(rows), dtype=np.int64)
    np.minimum.at(first_entry, rows[is_best], np.flatnonzero(is_best))
    b = best[rows][:, None]
    higher = (entry_scores > b).sum(axis=1)
    ties = entry_scores == b
    before_entry = np.arange(len(rows)) < first_entry[rows]
    at_entry = np.arange(len(rows)) == first_entry[rows]
    pred_ids = np.arange(entry_scores.shape[1])[None, :]
    tied_before = np.where(before_entry, ties.sum(axis=1), 0) + np.where(
        at_entry, (ties & (pred_ids < (gp[rows] - 1)[:, None])).sum(axis=1), 0
    )
    total = np.bincount(rows, weights=higher + tied_before, minlength=len(gp))
    has = np.isfinite(best)
    ranks[has] = total[has].astype(np.int64)
    return ranks
