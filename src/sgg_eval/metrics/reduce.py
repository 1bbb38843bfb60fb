"""Reductions of first-match ranks into the metric family (SPEC §3). All K values come from one table.

Dense accumulators, updated per image and reduced once at the end (axes: ``[predicate c, k]`` with
``c = 0..C`` and 0 unused; ``k`` indexes ``KS``):

- ``R@K``    = (1/|I|) Σ_i hits_i(K) / M_i                       (GC; ``ngR`` with NG ranks)
- ``mR@K``   = (1/C) Σ_c mean_{i : c in GT_i} hits_i(c, K) / count_i(c); absent predicates count 0
- ``zR@K``   = mean over images with zero-shot rows of (zero-shot rows hit / zero-shot rows)
- ``A@K``    = Σ_i hits_i^{GT-pair}(K) / Σ_i M_i                 (pooled)
- ``IMR@K``  = (1/C) Σ_c IMR(c, K), IMR(c, K) = mean_{i : c in GT_i} hits_i^{imr}(c, K) / count_i(c), where
  hits^{imr}(c, K) are the rows of c hit by the top K GC triplets *predicted as c* (the paper's IMR)
- ``ng-IMR@K`` the same with hits^{ng_imr}(c, K): the top K of all pairs ranked by s_s·s_o·p_c (a variant)
- ``wIMR@K`` = Σ_c n_c^τ IMR(c, K) / Σ_c n_c^τ  (the same weighted mean gives IMR at τ = 0, exactly);
  ``ng-wIMR@K`` weights ng-IMR the same way
- ``R_tr@K`` = Σ_t [rank_t < K] / T;  ``wR_tr@K`` = Σ_t [rank_t < K] / (n_t + 1) / Σ_t 1 / (n_t + 1)
- ``PR@K``   = (1/|I|) Σ_i (distinct GT pairs hit by the first K GC pairs) / (distinct GT pairs)
- ``PRk``    = mean over predicates with ≥1 matched row of the mean predicate rank of their rows
- ``InstR``  = (1/|I|) Σ_i (GT boxes matched by a same-label predicted box, IoU ≥ 0.5) / N_i
- ``R@k×``   = R with K_i = round(k · M_i) per image, k ∈ {1, 2, 10}; ``mR@k×`` likewise.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.metrics.ranks import ImageRanks

RECALL_KS = (20, 50, 100)
IMR_KS = (10, 20, 50)
TRIPLET_KS = (5, 10, 15, 20, 50)
RELATIVE_KS = (1, 2, 10)
KS = tuple(sorted(set(RECALL_KS) | set(IMR_KS) | set(TRIPLET_KS)))


def weighted_mean(values: np.ndarray, weights: np.ndarray) -> float:
    """``Σ w v / Σ w``; the one formula behind mR, IMR and wIMR so τ = 0 reproduces IMR bit for bit."""
    return float(np.sum(values * weights) / np.sum(weights))


def f1_score(recall: float, mean_recall: float) -> float:
    """``F1@K = 2·R@K·mR@K / (R@K + mR@K)``: the harmonic mean of recall and mean recall of one run (0 when
    both are 0), as Maelic/SGG-Benchmark reports it; ``ng-F1@K`` combines ngR@K and ng-mR@K the same way."""
    total = recall + mean_recall
    return 0.0 if total == 0 else 2.0 * recall * mean_recall / total


def wimr_weights(num_pairs: np.ndarray, tau: float) -> np.ndarray:
    """wIMR's predicate weights ``n_c^τ`` (unnormalised; :func:`weighted_mean` normalises) from ``n_c`` indexed
    ``0..C`` (index 0, background, dropped). The one place the weighting rule lives."""
    return np.asarray(num_pairs[1:], dtype=np.float64) ** float(tau)


class Accumulator:
    """Streams :class:`ImageRanks` in, hands the metric family out. ``num_predicates`` = C (no background)."""

    def __init__(self, num_predicates: int, ks: tuple[int, ...] = KS):
        c = num_predicates + 1
        self.C, self.ks = num_predicates, np.asarray(ks, dtype=np.int64)
        nk, nr = len(ks), len(RELATIVE_KS)
        self.images = 0
        self.recall = {f: np.zeros(nk) for f in ("gc", "ng", "pair")}
        self.per_pred = {f: np.zeros((c, nk)) for f in ("gc", "ng", "imr", "ng_imr")}
        self.pred_images = np.zeros(c)
        self.zs_recall = {f: np.zeros(nk) for f in ("gc", "ng")}
        self.zs_images = 0
        self.acc_hits, self.acc_rows = np.zeros(nk), 0
        self.tr_hits, self.tr_rows = np.zeros(nk), 0
        self.wtr_hits, self.wtr_total = np.zeros(nk), 0.0
        self.prk_sum, self.prk_rows = np.zeros(c), np.zeros(c)
        self.inst = 0.0
        self.rel_recall, self.rel_per_pred = np.zeros(nr), np.zeros((c, nr))
        # for the variants published numbers mix (metrics/variants.py): hits and GT rows per predicate pooled
        # over images, and the GT of images skipped for having no predicted pair
        self.pooled_hits = {f: np.zeros((c, nk)) for f in ("gc", "ng")}
        self.rows_c = np.zeros(c)
        self.missed_images, self.missed_pred_images, self.missed_rows_c = 0, np.zeros(c), np.zeros(c)
        self.families: set[str] = set()

    def add(self, r: ImageRanks, zeroshot: np.ndarray | None = None, triplet_counts: np.ndarray | None = None) -> None:
        """Add one evaluated image: ``zeroshot[M]`` flags rows; ``triplet_counts[M]`` are training n_t."""
        self.images += 1
        p, m = r.predicates, len(r.predicates)
        count_c = np.bincount(p, minlength=self.C + 1).astype(np.float64)
        present = count_c > 0
        self.pred_images += present
        self.rows_c += count_c

        def per_row(ranks: np.ndarray) -> np.ndarray:
            return ranks[:, None] < self.ks[None, :]

        def add_recall(family: str, ranks: np.ndarray) -> None:
            hits = per_row(ranks)
            self.recall[family] += hits.sum(axis=0) / m
            hits_c = _per_predicate(hits, p, self.C)
            self.per_pred[family][present] += hits_c[present] / count_c[present, None]
            self.pooled_hits[family] += hits_c
            if zeroshot is not None and zeroshot.any():
                self.zs_recall[family] += hits[zeroshot].sum(axis=0) / zeroshot.sum()

        self.families.add("gc")
        add_recall("gc", r.gc)
        if zeroshot is not None and zeroshot.any():
            self.zs_images += 1
        self.recall["pair"] += per_row(r.pair).sum(axis=0) / len(r.pair)
        self.inst += r.matched_gt_objects / r.num_gt_objects if r.num_gt_objects else 0.0
        rel_k = np.floor(np.asarray(RELATIVE_KS) * m + 0.5)
        rel_hits = r.gc[:, None] < rel_k[None, :]
        self.rel_recall += rel_hits.sum(axis=0) / m
        self.rel_per_pred[present] += _per_predicate(rel_hits, p, self.C)[present] / count_c[present, None]
        if r.ng is not None:
            self.families.add("ng")
            add_recall("ng", r.ng)
        if r.gt_pair is not None:
            self.families.add("gt_pair")
            self.acc_hits += per_row(r.gt_pair).sum(axis=0)
            self.acc_rows += m
        for family, ranks in (("imr", r.imr), ("ng_imr", r.per_predicate)):
            if ranks is not None:
                self.families.add(family)
                hits = per_row(ranks)
                self.per_pred[family][present] += _per_predicate(hits, p, self.C)[present] / count_c[present, None]
        if r.triplet is not None:
            self.families.add("triplet")
            hits = per_row(r.triplet)
            self.tr_hits += hits.sum(axis=0)
            self.tr_rows += m
            if triplet_counts is not None:
                w = 1.0 / (triplet_counts.astype(np.float64) + 1.0)
                self.wtr_hits += (hits * w[:, None]).sum(axis=0)
                self.wtr_total += w.sum()
        if r.predicate_rank is not None:
            self.families.add("prk")
            ok = ~np.isnan(r.predicate_rank)
            self.prk_sum += np.bincount(p[ok], weights=r.predicate_rank[ok], minlength=self.C + 1)
            self.prk_rows += np.bincount(p[ok], minlength=self.C + 1)

    def add_missed(self, predicates: np.ndarray) -> None:
        """An image with GT relations (``predicates[M]``) but no predicted pair, skipped by the reference
        protocol: kept so that the strict variant (a miss on every row) can be reported from the same run."""
        count_c = np.bincount(predicates, minlength=self.C + 1).astype(np.float64)
        self.missed_images += 1
        self.missed_pred_images += count_c > 0
        self.missed_rows_c += count_c

    def merge(self, other: Accumulator) -> None:
        """Add ``other``'s images (a later block): every sum adds, families unite. Blocks merged in the same
        order give the same floats whichever process accumulated them (``metrics.blocks``)."""
        if other.C != self.C or not np.array_equal(other.ks, self.ks):
            raise ValueError("accumulators of different shapes")
        for name, mine in vars(self).items():
            theirs = getattr(other, name)
            if name in ("C", "ks"):
                continue
            if name == "families":
                mine |= theirs
            elif isinstance(mine, dict):
                for key in mine:
                    mine[key] += theirs[key]
            elif isinstance(mine, np.ndarray):
                mine += theirs
            else:
                setattr(self, name, mine + theirs)

    def k_index(self, k: int) -> int:
        return int(np.flatnonzero(self.ks == k)[0])

    def per_predicate_recall(self, family: str) -> np.ndarray:
        """``[C, k]`` mean over images containing c of the per-image ratio; 0 for absent predicates."""
        n = self.pred_images[1:, None]
        return np.divide(self.per_pred[family][1:], n, out=np.zeros_like(self.per_pred[family][1:]), where=n > 0)

    def relative_per_predicate(self) -> np.ndarray:
        n = self.pred_images[1:, None]
        return np.divide(self.rel_per_pred[1:], n, out=np.zeros_like(self.rel_per_pred[1:]), where=n > 0)


def _per_predicate(hits: np.ndarray, predicates: np.ndarray, num_predicates: int) -> np.ndarray:
    """``[C + 1, k]`` hit counts per predicate of one image (one-hot product: cheaper than ``np.add.at``)."""
    onehot = np.arange(num_predicates + 1)[:, None] == predicates[None, :]
    return onehot.astype(np.float64) @ hits.astype(np.float64)
