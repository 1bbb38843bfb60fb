"""Recall and the two mean recalls of Action Genome's papers, as reductions of one dense array: ``first_hit [R]``,
for each GT relation of the split (in store order), the rank of the first triplet that hits it (``video.sttran``).
A relation counts at K when ``first_hit < K``.

- ``R@K`` (STTran): per frame, ``hits(K) / relations``; their mean over every scored frame.
- ``mR_pooled@K`` (TEMPURA, ``sayaknag/unbiasedSGG`` @ 976babd, ``calc_mrecall``; VCTree's ``sg_eval.py`` rule):
  per predicate ``p``, ``hits_p(K) / (count_p + 1e-10)`` over all frames pooled (the 1e-10 as it is: it moves every
  value in the tenth digit); their sum over the 26 predicates, in order, over 26.
- ``mR_per_frame@K`` (DSG-DETR, ``Shengyu-Feng/DSG-DETR`` @ 1d28dda, ``_mean_recall_collect``; the per-image rule of
  Scene-Graph-Benchmark): per predicate, the mean over the frames where it occurs of ``hits_p / count_p`` in that
  frame (0 where it never occurs); their sum over 26, over 26.

Means over frames are exactly rounded (``math.fsum``), so a split scored in any batching gives the same bits.
"""

from __future__ import annotations

import math

import numpy as np

from sgg_eval.video.ag_names import NUM_PREDICATES
from sgg_eval.video.sttran import K_VALUES

POOLED_EPS = 1e-10  # TEMPURA's


def frame_recalls(first_hit: np.ndarray, rel_offsets: np.ndarray) -> np.ndarray:
    """``[F, len(K_VALUES)]`` float64: each frame's recall at each K."""
    frame = np.repeat(np.arange(len(rel_offsets) - 1), np.diff(rel_offsets))
    counts = np.diff(rel_offsets).astype(np.float64)
    out = np.empty((len(counts), len(K_VALUES)))
    for i, k in enumerate(K_VALUES):
        out[:, i] = np.bincount(frame, weights=first_hit < k, minlength=len(counts)) / counts
    return out


def recalls(first_hit: np.ndarray, rels: np.ndarray, rel_offsets: np.ndarray) -> dict[str, float]:
    """``R@K``, ``mR_pooled@K`` and ``mR_per_frame@K`` for every K (module docstring)."""
    per_frame = frame_recalls(first_hit, rel_offsets)
    num_frames = len(per_frame)
    out: dict[str, float] = {}
    for i, k in enumerate(K_VALUES):
        out[f"R@{k}"] = math.fsum(per_frame[:, i]) / num_frames if num_frames else 0.0
    pooled, per_frame_mr = predicate_recalls(first_hit, rels, rel_offsets)
    for i, k in enumerate(K_VALUES):
        out[f"mR_pooled@{k}"] = _sum_in_order(pooled[i]) / NUM_PREDICATES
        out[f"mR_per_frame@{k}"] = _sum_in_order(per_frame_mr[i]) / NUM_PREDICATES
    return out


def predicate_recalls(first_hit: np.ndarray, rels: np.ndarray, rel_offsets: np.ndarray):
    """``([len(K), 26], [len(K), 26])``: each predicate's pooled recall and per-frame recall at each K."""
    predicate = rels[:, 2].astype(np.int64) - 1
    frame = np.repeat(np.arange(len(rel_offsets) - 1), np.diff(rel_offsets))
    cell = frame * NUM_PREDICATES + predicate  # (frame, predicate)
    cells, inverse = np.unique(cell, return_inverse=True)
    count = np.bincount(inverse).astype(np.float64)
    cell_predicate = cells % NUM_PREDICATES
    total = np.bincount(predicate, minlength=NUM_PREDICATES).astype(np.float64)
    frames_with = np.bincount(cell_predicate, minlength=NUM_PREDICATES)
    pooled = np.zeros((len(K_VALUES), NUM_PREDICATES))
    per_frame = np.zeros((len(K_VALUES), NUM_PREDICATES))
    for i, k in enumerate(K_VALUES):
        hit = first_hit < k
        pooled[i] = np.bincount(predicate, weights=hit, minlength=NUM_PREDICATES) / (total + POOLED_EPS)
        ratio = np.bincount(inverse, weights=hit, minlength=len(cells)) / count if len(cells) else np.zeros(0)
        for p in range(NUM_PREDICATES):
            if frames_with[p]:
                per_frame[i, p] = math.fsum(ratio[cell_predicate == p]) / frames_with[p]
    return pooled, per_frame


def tie_range(hits, rels: np.ndarray, rel_offsets: np.ndarray) -> dict:
    """What STTran's own numbers may be, given that its sort leaves the order of tied scores open: each metric's
    ``[low, high]`` (from the least and the most favourable order, ``video.sttran.FirstHits``) and the GT relations
    the order decided at each K (hit in the one, not in the other). Tie-free inputs give one value."""
    low, high = recalls(hits.worst, rels, rel_offsets), recalls(hits.best, rels, rel_offsets)
    return {
        "range": {name: [low[name], high[name]] for name in low},
        "decided_by_tie_order": {f"@{k}": int(np.sum(hits.best < k) - np.sum(hits.worst < k)) for k in K_VALUES},
    }


def _sum_in_order(values: np.ndarray) -> float:
    """``avg += v`` over the predicates in order, as both tools add them."""
    total = 0.0
    for v in values:
        total += float(v)
    return total
