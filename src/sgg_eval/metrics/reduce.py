"""Reductions of first-match ranks into the metric family (docs/definitions.md §3). All K values come from one table.

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
- ``image_mean``: Σ_i (1/|P_i|) Σ_{c ∈ P_i} hits_i(c, K) / count_i(c), P_i the predicates of image i's GT: the
  sum of per-image mean recalls (the SGBench paper's Eq. 2 for mR, ng-mR and mR@k×; panoptic protocol
  ``sgbench-paper`` divides it by the images).
"""

from __future__ import annotations

import numpy as np

from sgg_eval.arrays.exact_sum import ExactSum
from sgg_eval.arrays.segments import segment_offsets
from sgg_eval.core.defaults import IMR_KS, RECALL_KS, RELATIVE_KS, TRIPLET_KS
from sgg_eval.metrics.exact_sums import BlockSums, Rounded, layout
from sgg_eval.metrics.rank_records import BlockRanks, ImageRanks

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
    """Streams ranks in (:class:`BlockRanks`, or :class:`ImageRanks` one image at a time), hands the metric
    family out. ``num_predicates`` = C (no background).

    Every sum of non-integer values (a per-image ratio, a weight, a rank) is exact until it is read
    (``arrays.exact_sum``), so the metrics do not depend on how the images were grouped into blocks, workers or
    evaluators, nor on their order: ``merge`` in any split gives one pass's bits. The counts are integers,
    exact in float64 in any order."""

    # the sums of non-integer values, read from the exact sums (metrics.exact_sums.layout says what each holds)
    recall, per_pred, zs_recall, image_mean, inst = Rounded(), Rounded(), Rounded(), Rounded(), Rounded()
    rel_recall, rel_per_pred, wtr_hits, wtr_total, prk_sum = Rounded(), Rounded(), Rounded(), Rounded(), Rounded()

    def __init__(self, num_predicates: int, ks: tuple[int, ...] = KS):
        c = num_predicates + 1
        self.C, self.ks = num_predicates, np.asarray(ks, dtype=np.int64)
        nk, nr = len(ks), len(RELATIVE_KS)
        self.images = 0
        self.sum_layout, size = layout(c, nk, nr)
        self.exact = ExactSum((size,))
        self.rounded: dict = {}  # what the exact sums read as (exact_sums.Rounded), until the next change
        self.pred_images = np.zeros(c)
        self.zs_images = 0
        self.acc_hits, self.acc_rows = np.zeros(nk), 0
        self.tr_hits, self.tr_rows = np.zeros(nk), 0
        self.prk_rows = np.zeros(c)
        # [GT predicate, the predicate its matched pair ranks first]: GT rows counted (the confusion matrix)
        self.confusion = np.zeros((c, c))
        # for the variants published numbers mix (metrics/variants.py): hits and GT rows per predicate pooled
        # over images, and the GT of images skipped for having no predicted pair
        self.pooled_hits = {f: np.zeros((c, nk)) for f in ("gc", "ng")}
        self.rows_c = np.zeros(c)
        self.missed_images, self.missed_pred_images, self.missed_rows_c = 0, np.zeros(c), np.zeros(c)
        self.families: set[str] = set()
        # open-vocabulary subsets (metrics/openvocab.py) and head/body/tail (metrics/longtail.py): each subset's
        # rows accumulated as a GT of their own
        self.subsets: dict[str, Accumulator] = {}
        self.records: list[dict] = []  # per-image graphs (--per-image: ranking/per_image.py), in image order

    def add_subset(
        self,
        name: str,
        ranks: BlockRanks,
        keep: np.ndarray,
        ks: tuple[int, ...] | None = None,
        zeroshot: np.ndarray | None = None,
        triplet_counts: np.ndarray | None = None,
    ) -> None:
        """Accumulate the rows flagged in ``keep`` of a block as subset ``name`` (at ``ks``, default the
        family's K): its recall is then the mean over the images with a flagged row of the flagged rows hit."""
        sub = self.subsets.setdefault(name, Accumulator(self.C, KS if ks is None else ks))
        flags = np.asarray(keep, dtype=bool)
        sub.add_many(
            ranks.select_rows(flags),
            None if zeroshot is None else zeroshot[flags],
            None if triplet_counts is None else triplet_counts[flags],
        )

    def add(self, r: ImageRanks, zeroshot: np.ndarray | None = None, triplet_counts: np.ndarray | None = None) -> None:
        """Add one evaluated image: ``zeroshot[M]`` flags rows; ``triplet_counts[M]`` are training n_t."""
        self.add_many(BlockRanks.of([r]), zeroshot, triplet_counts)

    def add_many(
        self, ranks: BlockRanks, zeroshot: np.ndarray | None = None, triplet_counts: np.ndarray | None = None
    ) -> None:
        """Add a block of evaluated images at once (``ranks``: their rows concatenated; ``zeroshot`` and
        ``triplet_counts`` per row likewise, or None): every per-image ratio is a segment sum over the block
        (``reduceat`` / ``bincount``; ``img[row]`` says whose row), not a Python step per image."""
        if not len(ranks):
            return
        self.rounded, sums = {}, BlockSums(self.sum_layout)
        b, c, nk = len(ranks), self.C + 1, len(self.ks)
        m = _rows_per_image(ranks)
        starts = segment_offsets(m)
        img = np.repeat(np.arange(b), m)
        p = ranks.predicates
        # the (image, predicate) cells with a row, image by image and predicate by predicate; cell[row] is the row's
        cell_of = np.zeros(b * c, dtype=np.int64)
        cell_of[img * c + p] = 1
        cells = np.flatnonzero(cell_of)
        cell_of[cells] = np.arange(len(cells))
        cell = cell_of[img * c + p]
        cell_pred, cell_rows = cells % c, np.bincount(cell, minlength=len(cells)).astype(np.float64)
        cells_per_image = np.bincount(cells // c, minlength=b)  # |P_i|, each at least 1
        cell_starts = segment_offsets(cells_per_image)
        self.images += b
        self.pred_images += np.bincount(cell_pred, minlength=c)
        self.rows_c += np.bincount(p, minlength=c)

        def hit(family_ranks: np.ndarray) -> np.ndarray:  # [rows, k]: row hit within the first K
            return family_ranks[:, None] < self.ks[None, :]

        def per_image(hits: np.ndarray, at: np.ndarray = starts) -> np.ndarray:  # [b, k]: hit rows per image
            return np.add.reduceat(hits.astype(np.float64), at, axis=0)

        def per_cell(hits: np.ndarray) -> np.ndarray:  # [cells, k]: hit rows of each (image, predicate) cell
            return np.stack([np.bincount(cell, hits[:, j], len(cells)) for j in range(hits.shape[1])], axis=1)

        def add_cells(key: tuple, hits_c: np.ndarray, family: str | None = None) -> None:
            """Σ_i hits_i(c) / count_i(c) into ``key``'s [c, k]; with ``family``, the per-image mean over P_i too."""
            ratio = hits_c / cell_rows[:, None]
            width = ratio.shape[1]
            sums.put_at(key, cell_pred[:, None] * width + np.arange(width), ratio)
            if family is not None:  # each image's cells in predicate order, summed one after another
                per_image_sum = np.add.reduceat(ratio, cell_starts, axis=0)
                sums.put(("image_mean", family), per_image_sum / cells_per_image[:, None])

        zs = None if zeroshot is None else np.asarray(zeroshot, dtype=bool)
        if zs is not None:
            zs_rows = per_image(zs[:, None])[:, 0]
            self.zs_images += int((zs_rows > 0).sum())

        def add_recall(family: str, family_ranks: np.ndarray) -> None:
            hits = hit(family_ranks)
            sums.put(("recall", family), per_image(hits) / m[:, None])
            hits_c = per_cell(hits)
            add_cells(("per_pred", family), hits_c, family)
            self.pooled_hits[family] += np.stack([np.bincount(cell_pred, hits_c[:, j], c) for j in range(nk)], 1)
            if zs is not None:
                zs_hits = per_image(hits & zs[:, None])
                zs_ratio = np.divide(zs_hits, zs_rows[:, None], out=np.zeros_like(zs_hits), where=zs_rows[:, None] > 0)
                sums.put(("zs_recall", family), zs_ratio)

        self.families.add("gc")
        gc = ranks.gc
        add_recall("gc", gc)
        pair_m = ranks.n_pairs
        pair_hits = per_image(hit(ranks.pair), segment_offsets(pair_m))
        sums.put(("recall", "pair"), pair_hits / pair_m[:, None])
        gt_objects = ranks.num_gt_objects.astype(np.float64)
        matched = ranks.matched_gt_objects.astype(np.float64)
        sums.put(("inst", None), np.divide(matched, gt_objects, out=np.zeros(b), where=gt_objects > 0))
        rel_k = np.floor(np.asarray(RELATIVE_KS)[None, :] * m[:, None] + 0.5)  # [b, r]: K_i = round(k · M_i)
        rel_hits = gc[:, None] < rel_k[img]
        sums.put(("rel_recall", None), per_image(rel_hits) / m[:, None])
        add_cells(("rel_per_pred", None), per_cell(rel_hits), "rel")
        ng = ranks.ng
        if ng is not None:
            self.families.add("ng")
            add_recall("ng", ng)
        gt_pair = ranks.gt_pair
        if gt_pair is not None:
            self.families.add("gt_pair")
            self.acc_hits += hit(gt_pair).sum(axis=0)
            self.acc_rows += int(m.sum())
        imr = {f: r for f, r in (("imr", ranks.imr), ("ng_imr", ranks.per_predicate)) if r is not None}
        for family, family_ranks in imr.items():
            self.families.add(family)
            add_cells(("per_pred", family), per_cell(hit(family_ranks)))
        if ranks.triplet is not None:
            self._add_triplets(hit(ranks.triplet), triplet_counts, sums)
        if ranks.predicate_rank is not None:
            self._add_predicate_ranks(p, ranks.predicate_rank, ranks.top_predicate, sums)
        sums.add_to(self.exact)

    def _add_triplets(self, hits: np.ndarray, triplet_counts: np.ndarray | None, sums: BlockSums) -> None:
        """R_tr's hits ``[rows, k]`` pooled, and wR_tr's weighted by ``1 / (n_t + 1)``."""
        self.families.add("triplet")
        self.tr_hits += hits.sum(axis=0)
        self.tr_rows += len(hits)
        if triplet_counts is not None:
            w = 1.0 / (np.asarray(triplet_counts).astype(np.float64) + 1.0)
            sums.put(("wtr_hits", None), hits * w[:, None])
            sums.put(("wtr_total", None), w)

    def _add_predicate_ranks(
        self, predicates: np.ndarray, prk: np.ndarray, top: np.ndarray | None, sums: BlockSums
    ) -> None:
        """PRk's sums per predicate over the rows with a rank (not NaN); the confusion matrix's counts."""
        self.families.add("prk")
        ok = ~np.isnan(prk)
        sums.put_at(("prk_sum", None), predicates[ok], prk[ok])
        self.prk_rows += np.bincount(predicates[ok], minlength=self.C + 1)
        if top is not None:
            c, ok = self.C + 1, top >= 0
            self.confusion += np.bincount(predicates[ok] * c + top[ok], minlength=c * c).reshape(c, c)

    def add_missed(self, predicates: np.ndarray) -> None:
        """An image with GT relations (``predicates[M]``) but no predicted pair, skipped by the reference
        protocol: kept so that the strict variant (a miss on every row) can be reported from the same run."""
        count_c = np.bincount(predicates, minlength=self.C + 1).astype(np.float64)
        self.missed_images += 1
        self.missed_pred_images += count_c > 0
        self.missed_rows_c += count_c

    def merge(self, other: Accumulator) -> None:
        """Add ``other``'s images: every sum adds (the exact ones exactly, so any split and order of the images
        gives the same bits), families unite."""
        if other.C != self.C or not np.array_equal(other.ks, self.ks):
            raise ValueError("accumulators of different shapes")
        self.rounded = {}
        for name, mine in vars(self).items():
            theirs = getattr(other, name)
            if name in ("C", "ks", "rounded", "sum_layout"):
                continue
            if name == "exact":
                mine.merge(theirs)
            elif name == "families":
                mine |= theirs
            elif name == "subsets":
                for key, sub in theirs.items():  # a block without a row of a subset never made its accumulator
                    mine.setdefault(key, Accumulator(sub.C, tuple(sub.ks))).merge(sub)
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


def _rows_per_image(ranks: BlockRanks) -> np.ndarray:
    """``M_i`` of every image of the block, each at least 1 (an image without GT rows is skipped, never ranked)."""
    m = ranks.n_rows
    if m.min() == 0:
        raise ValueError("an image without GT rows is skipped, never ranked")
    return m
