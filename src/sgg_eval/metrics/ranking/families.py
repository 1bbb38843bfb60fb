"""The ranking families: what a first-match rank is, per family, and the primitives every ranker shares.

This is the definition. ``block_ranks`` computes these ranks for a block of images at once (production, boxes);
``panoptic.ranks`` computes the gc, ng, imr and pair families under a panoptic protocol's matching; the
test suite's ``reference_ranks.image_ranks`` is the per-image reference both are tested against.

One image's GT rows get one integer per row and family.

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
