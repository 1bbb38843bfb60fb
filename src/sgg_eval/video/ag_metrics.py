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


class Relations:
    """A split's GT relations grouped once for every reduction: by frame, and by (frame, predicate) cell."""

    def __init__(self, rels: np.ndarray, rel_offsets: np.ndarray):
        self.counts = np.diff(rel_offsets).astype(np.float64)
        self.frame = np.repeat(np.arange(len(self.counts)), np.diff(rel_offsets))
        self.predicate = rels[:, 2].astype(np.int64) - 1
        cells, self.inverse = np.unique(self.frame * NUM_PREDICATES + self.predicate, return_inverse=True)
        self.cell_count = np.bincount(self.inverse, minlength=len(cells)).astype(np.float64)
        self.total = np.bincount(self.predicate, minlength=NUM_PREDICATES).astype(np.float64)
        cell_predicate = cells % NUM_PREDICATES
        self.by_predicate = np.argsort(cell_predicate, kind="stable")  # the cells of each predicate, frame order
        self.bounds = np.searchsorted(cell_predicate[self.by_predicate], np.arange(NUM_PREDICATES + 1))

    def frame_recalls(self, first_hit: np.ndarray) -> np.ndarray:
        """``[F, len(K_VALUES)]`` float64: each frame's recall at each K."""
        out = np.empty((len(self.counts), len(K_VALUES)))
        for i, k in enumerate(K_VALUES):
            out[:, i] = np.bincount(self.frame, weights=first_hit < k, minlength=len(self.counts)) / self.counts
        return out

    def predicate_recalls(self, first_hit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``([len(K), 26], [len(K), 26])``: each predicate's pooled recall and per-frame recall at each K."""
        pooled = np.zeros((len(K_VALUES), NUM_PREDICATES))
        per_frame = np.zeros((len(K_VALUES), NUM_PREDICATES))
        for i, k in enumerate(K_VALUES):
            hit = first_hit < k
            pooled[i] = np.bincount(self.predicate, weights=hit, minlength=NUM_PREDICATES) / (self.total + POOLED_EPS)
            ratio = np.bincount(self.inverse, weights=hit, minlength=len(self.cell_count)) / self.cell_count
            ratio = ratio[self.by_predicate]
            for p in range(NUM_PREDICATES):
                lo, hi = self.bounds[p], self.bounds[p + 1]
                if hi > lo:
                    per_frame[i, p] = math.fsum(ratio[lo:hi]) / (hi - lo)
        return pooled, per_frame

    def recalls(self, first_hit: np.ndarray) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
        """``R@K``, ``mR_pooled@K`` and ``mR_per_frame@K`` for every K (module docstring), and the predicates'
        recalls they are made of."""
        per_frame = self.frame_recalls(first_hit)
        out: dict[str, float] = {}
        for i, k in enumerate(K_VALUES):
            out[f"R@{k}"] = math.fsum(per_frame[:, i]) / len(per_frame) if len(per_frame) else 0.0
        pooled, per_frame_mr = self.predicate_recalls(first_hit)
        for i, k in enumerate(K_VALUES):
            out[f"mR_pooled@{k}"] = _sum_in_order(pooled[i]) / NUM_PREDICATES
            out[f"mR_per_frame@{k}"] = _sum_in_order(per_frame_mr[i]) / NUM_PREDICATES
        return out, pooled, per_frame_mr


def recalls(first_hit: np.ndarray, rels: np.ndarray, rel_offsets: np.ndarray) -> dict[str, float]:
    """``R@K``, ``mR_pooled@K`` and ``mR_per_frame@K`` for every K (module docstring)."""
    return Relations(rels, rel_offsets).recalls(first_hit)[0]


def tie_range(hits, relations: Relations) -> dict:
    """What STTran's own numbers may be, given that its sort leaves the order of tied scores open: each metric's
    ``[low, high]`` (from the least and the most favourable order, ``video.sttran.FirstHits``) and the GT relations
    the order decided at each K (hit in the one, not in the other). Tie-free inputs give one value."""
    low, high = relations.recalls(hits.worst)[0], relations.recalls(hits.best)[0]
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
