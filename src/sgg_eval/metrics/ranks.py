"""First-match ranks of one image's GT rows, one integer per row and ranking family (docs/architecture.md).

For GT row ``r = (gs, go, gp)`` and a ranked candidate list, the rank is the 0-based position of the first
candidate that matches the row (``NO_MATCH`` if none does). A candidate (pair j, predicate c) matches when
``c == gp`` and both predicted objects of pair j match the GT objects: same label and IoU >= 0.5
(docs/definitions.md §2; no one-to-one assignment). Then ``hit(r, K) = rank < K`` for every K at once: the
union of the rows hit by the first K candidates is exactly the set of rows whose first-match rank is < K.

Families (all ties broken by the earlier candidate, i.e. stable orders):
- ``gc``: the GC candidates (one predicate per pair, in GC order);
- ``ng``: every (pair, predicate >= 1) by ``s_s * s_o * p_c`` (flat row-major order on ties), top ``ng_limit``;
- ``gt_pair``: GC candidates whose (subject index, object index) is a GT pair (A@K);
- ``imr``: the GC candidates whose predicted predicate is the row's own predicate c, in GC order (IMR, the
  paper's per-predicate ranking: Li et al. 2022 ranks "top-K predictions for each predicate category");
- ``per_predicate``: for the row's own predicate c, all pairs by ``s_s * s_o * p_c`` (ng-IMR);
- ``triplet``: the row's own index pair in both directions, all predicates, by ``s_i * s_j * p_c``
  (ties: pair order, then predicate id) (R_tr);
- ``pair``: GC candidates with the predicate ignored, for each distinct GT index pair (PR@K).
``predicate_rank`` is PRk's 0-based rank of the GT predicate among the predicate scores of the first
(GC order) predicted pair that matches the row's objects, NaN when no pair matches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sgg_eval.arrays.segments import segment_min
from sgg_eval.defaults import IOU_THRESHOLD
from sgg_eval.metrics.boxes import object_matches
from sgg_eval.metrics.ranking.rank_records import ImageRanks

# Object indices fit in 20 bits (an image has far fewer than a million objects), so an ordered index pair
# is one int64: 1-D unique/isin/searchsorted on keys are much cheaper than on rows.
PAIR_BITS = 20


def pair_key(subject: np.ndarray, obj: np.ndarray, image: np.ndarray | None = None) -> np.ndarray:
    """The one encoding of an index pair: ``subject · 2^20 + object`` for arrays of object indices (each below
    2^20), and with ``image`` (many images at once) ``image · 2^40`` more, so keys sort by image, then subject,
    then object. :func:`key_image` reads the image back."""
    key = subject * (1 << PAIR_BITS) + obj
    return key if image is None else key + image * (1 << (2 * PAIR_BITS))


def key_image(key: np.ndarray) -> np.ndarray:
    """The image of keys made by :func:`pair_key` with ``image``."""
    return key >> (2 * PAIR_BITS)


NO_MATCH = np.iinfo(np.int64).max


def first_match(size: int, segment: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per GT row ``0..size-1`` (``segment``), the least of its candidate positions ``values``: its first-match
    rank, ``NO_MATCH`` where none matches."""
    return segment_min(size, segment, values, NO_MATCH)


@dataclass
class Candidates:
    """One image's predictions ready for ranking (after the task's GT substitution).

    ``probs`` ``[P, C + 1]`` float32 probabilities (None for rank-only formats such as SGBench JSON);
    ``gc_pairs``/``gc_preds``: the GC candidate list, pair index and predicate per position, in order;
    ``pair_best``: each pair's best NG score ``(s_s * s_o) * max_c p_c`` (float32), for pruning NG.
    """

    boxes: np.ndarray
    labels: np.ndarray
    obj_scores: np.ndarray
    pairs: np.ndarray
    probs: np.ndarray | None
    gc_pairs: np.ndarray
    gc_preds: np.ndarray
    pair_best: np.ndarray | None = None


def first_true(mask: np.ndarray) -> np.ndarray:
    """Per row, the index of the first True column, ``NO_MATCH`` where there is none."""
    if mask.shape[1] == 0:
        return np.full(mask.shape[0], NO_MATCH, dtype=np.int64)
    idx = mask.argmax(axis=1).astype(np.int64)
    return np.where(mask.any(axis=1), idx, NO_MATCH)


def pair_products(obj_scores: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Each pair's ``s_s * s_o`` (float32): the factor of all its NG scores."""
    s = obj_scores.astype(np.float32)
    return s[pairs[:, 0]] * s[pairs[:, 1]]


def pair_scores(
    cand: Candidates, rows: np.ndarray | slice = slice(None), cols: np.ndarray | slice = slice(1, None)
) -> np.ndarray:
    """``(s_s * s_o) * p_c`` (float32, the reference's order) for pairs ``rows`` and score columns ``cols``
    (default: every pair, predicates 1..C)."""
    return pair_products(cand.obj_scores, cand.pairs[rows])[:, None] * cand.probs[rows][:, cols]


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


def nth_largest(values: np.ndarray, n: int):
    """The ``n``-th largest of ``values`` (more than ``n``; NaN counts as the largest, as in ``np.partition``).

    The maxima of ``n`` disjoint sets of values are ``n`` distinct values, so their minimum bounds the ``n``-th
    largest from below, and only the values reaching it are partitioned: ~3% of an SGDet image's 6,000 pair
    bests, ~1.5x faster than partitioning them all. The sets interleave (every ``n``-th value), so values
    stored in descending order (the reference's pair order) give the exact bound, not the last block's
    maximum. A NaN maximum (a bound of NaN) filters nothing."""
    size = len(values) // n
    if size >= 4:
        bound = values[: size * n].reshape(size, n).max(axis=0).min()
        values = values[~(values < bound)]
    return np.partition(values, len(values) - n)[len(values) - n]


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
    out.predicate_rank = _predicate_rank(cand, viable, pm, gp)
    if triplet_family:
        out.triplet = _triplet_ranks(cand, col_of, pm, gs, go, gp)
    return out


def _positions(index: np.ndarray, position_of: np.ndarray) -> np.ndarray:
    """Map first-match indices into a sub-list back to positions in the full list."""
    found = index != NO_MATCH
    out = np.full(len(index), NO_MATCH, dtype=np.int64)
    out[found] = position_of[index[found]]
    return out


def within_predicate(gc: np.ndarray, gc_preds: np.ndarray) -> np.ndarray:
    """IMR ranks from GC ranks: a GC candidate matches a row only if its predicate is the row's, so the first
    match in the full GC list is also the first in the row predicate's own sub-list; its IMR rank is the number
    of earlier GC candidates with that same predicate."""
    order = np.argsort(gc_preds, kind="stable")
    grouped = gc_preds[order]
    within = np.empty(len(gc_preds), dtype=np.int64)
    within[order] = np.arange(len(gc_preds)) - np.searchsorted(grouped, grouped, side="left")
    found = gc != NO_MATCH
    out = np.full(len(gc), NO_MATCH, dtype=np.int64)
    out[found] = within[gc[found]]
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
    """PRk: rank of the GT predicate among the scores of the first matching pair in GC order."""
    pos = np.full(len(cand.pairs), NO_MATCH, dtype=np.int64)
    pos[cand.gc_pairs[::-1]] = np.arange(len(cand.gc_pairs))[::-1]  # first GC position of each pair
    ranked = np.where(pm, pos[viable][None, :], NO_MATCH)
    if ranked.shape[1] == 0:
        return np.full(len(gp), np.nan)
    has = ranked.min(axis=1) < NO_MATCH
    probs = cand.probs[viable[ranked.argmin(axis=1)], 1:]
    own = probs[np.arange(len(gp)), gp - 1]
    ids = np.arange(probs.shape[1])[None, :]
    rank = (probs > own[:, None]).sum(axis=1) + ((probs == own[:, None]) & (ids < (gp - 1)[:, None])).sum(axis=1)
    return np.where(has, rank.astype(np.float64), np.nan)


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
