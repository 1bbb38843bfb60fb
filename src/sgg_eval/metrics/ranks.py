"""First-match ranks of one image's GT rows, one integer per row and ranking family (ARCHITECTURE.md).

For GT row ``r = (gs, go, gp)`` and a ranked candidate list, the rank is the 0-based position of the first
candidate that matches the row (``NO_MATCH`` if none does). A candidate (pair j, predicate c) matches when
``c == gp`` and both predicted objects of pair j match the GT objects: same label and IoU >= 0.5 (SPEC §2;
no one-to-one assignment). Then ``hit(r, K) = rank < K`` for every K at once: the union of the rows hit by
the first K candidates is exactly the set of rows whose first-match rank is < K.

Families (all ties broken by the earlier candidate, i.e. stable orders):
- ``gc``: the GC candidates (one predicate per pair, in GC order);
- ``ng``: every (pair, predicate >= 1) by ``s_s * s_o * p_c`` (flat row-major order on ties), top ``ng_limit``;
- ``gt_pair``: GC candidates whose (subject index, object index) is a GT pair (A@K);
- ``per_predicate``: for the row's own predicate c, all pairs by ``s_s * s_o * p_c`` (IMR);
- ``triplet``: the row's own index pair in both directions, all predicates, by ``s_i * s_j * p_c``
  (ties: pair order, then predicate id) (R_tr);
- ``pair``: GC candidates with the predicate ignored, for each distinct GT index pair (PR@K).
``predicate_rank`` is PRk's 0-based rank of the GT predicate among the predicate scores of the first
(GC order) predicted pair that matches the row's objects, NaN when no pair matches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sgg_eval.metrics.boxes import object_matches

NO_MATCH = np.iinfo(np.int64).max


@dataclass
class Candidates:
    """One image's predictions ready for ranking (after the task's GT substitution).

    ``probs`` ``[P, C + 1]`` float32 probabilities (None for rank-only formats such as SGBench JSON);
    ``gc_pairs``/``gc_preds``: the GC candidate list, pair index and predicate per position, in order.
    """

    boxes: np.ndarray
    labels: np.ndarray
    obj_scores: np.ndarray
    pairs: np.ndarray
    probs: np.ndarray | None
    gc_pairs: np.ndarray
    gc_preds: np.ndarray


@dataclass
class ImageRanks:
    """Per-row ranks of one image; ``None`` where the family does not apply."""

    predicates: np.ndarray
    gc: np.ndarray
    pair: np.ndarray
    num_gt_objects: int
    matched_gt_objects: int
    ng: np.ndarray | None = None
    gt_pair: np.ndarray | None = None
    per_predicate: np.ndarray | None = None
    triplet: np.ndarray | None = None
    predicate_rank: np.ndarray | None = None


def first_true(mask: np.ndarray) -> np.ndarray:
    """Per row, the index of the first True column, ``NO_MATCH`` where there is none."""
    if mask.shape[1] == 0:
        return np.full(mask.shape[0], NO_MATCH, dtype=np.int64)
    idx = mask.argmax(axis=1).astype(np.int64)
    return np.where(mask.any(axis=1), idx, NO_MATCH)


def pair_scores(cand: Candidates) -> np.ndarray:
    """``s_s * s_o * p_c`` for every pair and predicate ``c >= 1``, ``[P, C]`` float32 (reference order)."""
    s = cand.obj_scores.astype(np.float32)
    per_pair = s[cand.pairs[:, 0]] * s[cand.pairs[:, 1]]
    return per_pair[:, None] * cand.probs[:, 1:]


def stable_top(scores: np.ndarray, n: int) -> np.ndarray:
    """Flat indices of the ``n`` largest entries, descending, ties by lower flat index."""
    flat = scores.ravel()
    if flat.size > n:
        threshold = np.partition(flat, flat.size - n)[flat.size - n]
        keep = np.flatnonzero(flat >= threshold)
    else:
        keep = np.arange(flat.size)
    order = np.lexsort((keep, -flat[keep].astype(np.float64)))
    return keep[order][:n]


def _rank_in_column(col: np.ndarray, match: np.ndarray) -> np.ndarray:
    """Rows of ``col [M, P]`` ranked descending (ties: lower column first); rank of the best matching column."""
    masked = np.where(match, col, -np.inf)
    best = masked.max(axis=1) if col.shape[1] else np.full(col.shape[0], -np.inf)
    at_best = match & (col == best[:, None])
    first = at_best.argmax(axis=1) if col.shape[1] else np.zeros(col.shape[0], dtype=np.int64)
    higher = (col > best[:, None]).sum(axis=1)
    tied_before = ((col == best[:, None]) & (np.arange(col.shape[1])[None, :] < first[:, None])).sum(axis=1)
    return np.where(match.any(axis=1), higher + tied_before, NO_MATCH).astype(np.int64)


def image_ranks(gt_boxes, gt_labels, gt_rels, cand: Candidates, *, ng_limit: int = 100,
                gt_pair_family: bool = True, triplet_family: bool = True) -> ImageRanks:
    """All first-match ranks of one image. ``gt_rels`` ``[M, 3]`` must be non-empty."""
    gs, go, gp = gt_rels[:, 0], gt_rels[:, 1], gt_rels[:, 2]
    ok = object_matches(gt_boxes, gt_labels, cand.boxes, cand.labels)
    pm = ok[gs][:, cand.pairs[:, 0]] & ok[go][:, cand.pairs[:, 1]]  # [M, P] objects of pair j match row r
    gc_match = pm[:, cand.gc_pairs] & (cand.gc_preds[None, :] == gp[:, None])
    uniq = np.unique(gt_rels[:, :2], axis=0)
    pm_u = ok[uniq[:, 0]][:, cand.pairs[:, 0]] & ok[uniq[:, 1]][:, cand.pairs[:, 1]]
    out = ImageRanks(predicates=gp, gc=first_true(gc_match), pair=first_true(pm_u[:, cand.gc_pairs]),
                     num_gt_objects=len(gt_labels), matched_gt_objects=int(ok.any(axis=1).sum()))
    if gt_pair_family:
        gt_keys = gs * (1 << 20) + go
        cand_keys = cand.pairs[cand.gc_pairs, 0] * (1 << 20) + cand.pairs[cand.gc_pairs, 1]
        out.gt_pair = first_true(gc_match[:, np.isin(cand_keys, gt_keys)])
    if cand.probs is None:
        return out
    scores = pair_scores(cand)  # [P, C]
    n_pred = scores.shape[1]
    top = stable_top(scores, ng_limit)
    out.ng = first_true(pm[:, top // n_pred] & ((top % n_pred + 1)[None, :] == gp[:, None]))
    out.per_predicate = _rank_in_column(scores[:, gp - 1].T, pm)
    out.predicate_rank = _predicate_rank(cand, pm, gp)
    if triplet_family:
        out.triplet = _triplet_ranks(cand, pm, scores, gs, go, gp)
    return out


def _predicate_rank(cand: Candidates, pm: np.ndarray, gp: np.ndarray) -> np.ndarray:
    """PRk: rank of the GT predicate among the scores of the first matching pair in GC order."""
    pos = np.full(len(cand.pairs), NO_MATCH, dtype=np.int64)
    pos[cand.gc_pairs[::-1]] = np.arange(len(cand.gc_pairs))[::-1]  # first GC position of each pair
    ranked = np.where(pm, pos[None, :], NO_MATCH)
    has = ranked.min(axis=1) < NO_MATCH if pm.shape[1] else np.zeros(len(gp), dtype=bool)
    j = ranked.argmin(axis=1) if pm.shape[1] else np.zeros(len(gp), dtype=np.int64)
    probs = cand.probs[j, 1:] if pm.shape[1] else np.zeros((len(gp), 0))
    own = probs[np.arange(len(gp)), gp - 1] if pm.shape[1] else np.zeros(len(gp))
    ids = np.arange(probs.shape[1])[None, :]
    rank = (probs > own[:, None]).sum(axis=1) + ((probs == own[:, None]) & (ids < (gp - 1)[:, None])).sum(axis=1)
    return np.where(has, rank.astype(np.float64), np.nan)


def _triplet_ranks(cand, pm, scores, gs, go, gp) -> np.ndarray:
    """R_tr: candidates are the row's index pair in both directions with every predicate."""
    ps, po = cand.pairs[:, 0], cand.pairs[:, 1]
    same = ((ps[None, :] == gs[:, None]) & (po[None, :] == go[:, None])) | (
        (ps[None, :] == go[:, None]) & (po[None, :] == gs[:, None]))
    rows, js = np.nonzero(same)  # candidate pairs per row, in pair order
    ranks = np.full(len(gp), NO_MATCH, dtype=np.int64)
    if len(rows) == 0:
        return ranks
    entry_scores = scores[js]  # [E, C]
    own = entry_scores[np.arange(len(rows)), gp[rows] - 1]
    matching = pm[rows, js]
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
        at_entry, (ties & (pred_ids < (gp[rows] - 1)[:, None])).sum(axis=1), 0)
    total = np.bincount(rows, weights=higher + tied_before, minlength=len(gp))
    has = np.isfinite(best)
    ranks[has] = total[has].astype(np.int64)
    return ranks
