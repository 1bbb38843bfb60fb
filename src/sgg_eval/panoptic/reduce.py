"""Panoptic SGG: the metric family of a run from its accumulated ranks (``panoptic_ranks``), by protocol.

Each protocol is a matching, a ranked list and an averaging (sources: ``docs/metrics.md``, "Panoptic SGG"):

- ``sgbench`` (1.0.0's code): a prediction stands for its best same-class GT instance if IoU ≥ 0.5 (many
  predictions may stand for one); the gc list is ``triplets`` without duplicates; an absent image counts 0;
  the mean over predicates is ``null`` when a predicate occurs in no evaluated image (sgbench prints NaN).
- ``sgbench-paper`` (its Algorithms 2-6 and Eq. 2): the best same-class GT instance if IoU > 0.5, one
  prediction per GT instance (the highest IoU); the gc list under the graph constraint; an absent image
  counts 0; mR is per image over its predicates (Eq. 2), then over images.
- ``openpsg`` (OpenPSG's evaluator): per triplet, same classes and IoU ≥ 0.5 at both ends; the gc list is
  ``triplets`` as given; images without a prediction or a row are skipped; a predicate never seen counts 0.

With ``hit_i(r, K) = rank_i(r) < K`` for GT row r of evaluated image i (M_i rows, predicates P_i), I the
evaluated images and A the test images with relations absent from the predictions (A = 0 under openpsg):

- ``R@K = Σ_i hits_i(K) / M_i / (|I| + A)``; ``ngR@K`` the same on the ng list; ``PR@K`` on distinct GT pairs;
  ``R@k×`` with ``K_i = round(k · M_i)``; ``R@inf`` with the reach ranks; ``InstR = Σ_i matched_i / N_i /
  (|I| + A)``.
- ``mR@K``: ``r_c = mean over images i ∈ I with c ∈ P_i of hits_i(c, K) / count_i(c)``, then
  sgbench: ``mean_c r_c`` over all C predicates, ``null`` when some c is in no P_i (sgbench prints NaN);
  openpsg: the same with such a c counting 0; sgbench-paper (Eq. 2):
  ``Σ_i (1/|P_i|) Σ_{c ∈ P_i} hits_i(c, K) / count_i(c) / (|I| + A)``. ``ng-mR@K``, ``mR@k×`` and ``mR@inf``
  alike.
- ``F1@K = 2 R mR / (R + mR)`` (``reduce.f1_score``), ``ng-F1@K`` from ngR and ng-mR.
- ``IMR@K`` (K = 10, 20, 50): the IMR paper's definition under every protocol: per predicate c the mean over
  images containing it of the share of its rows hit by the first K gc rows predicting c, then the mean over
  all C (absent predicates 0).
- ``zR@K`` (and ``ng-zR@K``), with statistics of PSG's training split: the mean over images with a zero-shot
  GT row (class triplet never in training) of the share of those rows hit, absent images with one counting
  0 (not under openpsg). ``wIMR@K = Σ_c n_c^τ IMR_c@K / Σ_c n_c^τ`` (``reduce.wimr_weights``).
- ``PRk`` (sgbench's PRank) from per-image cells ``prk_i(c)``: sgbench pools every defined (image, predicate)
  cell; sgbench-paper (Algorithm 6 in Algorithm 1) averages each image's cells, then the images with one;
  openpsg has none (``null``).
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.defaults import RECALL_KS, RELATIVE_KS
from sgg_eval.core.protocols import MR_NULL_IF_UNSEEN, MR_PER_IMAGE, PRK_NONE, PRK_POOLED
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.metrics.document import Cell, Document, FamilyValues, Value, fill
from sgg_eval.metrics.names import metric_name
from sgg_eval.metrics.reduce import Accumulator, f1_score, weighted_mean
from sgg_eval.metrics.reductions import registered_metrics

_AT_K = tuple(metric_name(f, k) for f in ("R", "mR") for k in RECALL_KS)
_PAPER = (
    *(metric_name(f, k, ng=ng) for f, ng in (("PR", False), ("R", True), ("mR", True)) for k in RECALL_KS),
    *(metric_name(f, "inf") for f in ("R", "mR")),
    *(metric_name(f, k, relative=True) for f in ("R", "mR") for k in RELATIVE_KS),
)
# The numbers each protocol's source reports (docs/metrics.md), a document's "metrics": OpenPSG's evaluator
# gives R@K and mR@K only (its no-graph-constraint branch is off for masks); the sgbench 1.0.0 command prints
# those, InstR and PRank; the SGBench paper adds pair recall, the ng family, R@inf and the relative k. Every
# other number sgg-eval computes under a protocol's matching and averaging (IMR, wIMR, F1, zR, ...) is
# beyond that protocol and goes to a section of its own (:data:`BEYOND`), never beside the protocol's numbers.
PROTOCOL_METRICS = {
    "openpsg": _AT_K,
    "sgbench": (*_AT_K, metric_name("InstR"), metric_name("PRk")),
    "sgbench-paper": (*_AT_K, *_PAPER, metric_name("InstR"), metric_name("PRk")),
}
SOURCES = {
    "openpsg": "OpenPSG's evaluator",
    "sgbench": "the sgbench 1.0.0 command",
    "sgbench-paper": "the SGBench paper",
}


def split_by_protocol(metrics: dict, per_predicate: dict, protocol: str) -> tuple[dict, dict, dict]:
    """``(metrics, per_predicate, beyond)``: the protocol's own numbers, and the section of the rest (its
    ``about`` says what they are)."""
    own = PROTOCOL_METRICS[protocol]
    beyond = {
        "about": f"computed by sgg-eval with the {protocol} protocol's matching and averaging; not reported by "
        f"{SOURCES[protocol]}",
        "metrics": {k: v for k, v in metrics.items() if k not in own},
        "per_predicate": {k: v for k, v in per_predicate.items() if k not in own},
    }
    return (
        {k: v for k, v in metrics.items() if k in own},
        {k: v for k, v in per_predicate.items() if k in own},
        beyond,
    )


def psg_metrics(
    acc: Accumulator,
    reach: Accumulator,
    prk_cells: np.ndarray,
    absent: int,
    protocol: str,
    predicates: tuple[str, ...],
    has_ng: bool,
    *,
    zs: bool = False,
    absent_zs: int = 0,
    wimr_weights: np.ndarray | None = None,
) -> tuple[dict, dict, list[str]]:
    """``(metrics, per_predicate, notes)`` of a run (module docstring): the table of ``metrics.document`` filled
    with :class:`PanopticValues`, then the registered reductions (``metrics.reductions``) of ``acc``.
    ``prk_cells [images, C]`` (NaN where undefined) for the evaluated images; ``absent``: test images with
    relations and no prediction, of which ``absent_zs`` have a zero-shot row; ``zs``: the rows were flagged
    zero-shot; ``wimr_weights``: n_c^τ."""
    doc = Document(predicates)
    values = PanopticValues(doc, acc, reach, prk_cells, absent, protocol, has_ng, zs, absent_zs, wimr_weights)
    fill(doc, values.table())
    doc.metrics.update(registered_metrics(acc, taken=set(doc.metrics)))
    return doc.metrics, doc.per_predicate, doc.notes


class PanopticValues(FamilyValues):
    """``table()``: each family a panoptic protocol has, as a function of a :class:`~sgg_eval.metrics.document.Cell`
    (``None`` for a family it has not: A@K, R_tr, the NG variants of IMR)."""

    def __init__(self, doc, acc, reach, prk_cells, absent, protocol, has_ng, zs, absent_zs, wimr_weights):
        self.doc, self.acc, self.reach, self.prk_cells = doc, acc, reach, prk_cells
        self.protocol, self.has_ng, self.zs, self.wimr_weights = protocol, has_ng, zs, wimr_weights
        self.n = acc.images
        counts_unpredicted = protocol_record(protocol).counts_unpredicted  # absent images: all-miss, or skipped
        self.over = self.n + (absent if counts_unpredicted else 0)
        self.zs_over = acc.zs_images + (absent_zs if counts_unpredicted else 0)
        self.images_c = acc.pred_images[1:]

    def _recall(self, total: float) -> float | None:
        return float(total / self.over) if self.over else None

    def _no_ng(self, cell: Cell) -> Value | None:
        if cell.ng and not self.has_ng:
            return Value(None, "ngR, ng-mR and ng-F1 need ng_triplets, which no image of the predictions has: null")
        return None

    def recall(self, cell: Cell) -> Value:
        if cell.relative:
            return Value(self._recall(self.acc.rel_recall[cell.index]))
        if cell.k == "inf":
            return Value(self._recall(self.reach.recall["gc"][self.reach.k_index(RECALL_KS[0])]))
        family = "ng" if cell.ng else "gc"
        return self._no_ng(cell) or Value(self._recall(self.acc.recall[family][self.acc.k_index(cell.k)]))

    def mean_recall(self, cell: Cell) -> Value:
        """One m-type value from ``sums [C]`` (Σ over images containing c) and the per-image sum (Eq. 2)."""
        acc = self.acc
        if cell.relative:
            sums, image_sum = acc.rel_per_pred[1:, cell.index], acc.image_mean["rel"][cell.index]
        elif cell.k == "inf":
            i = self.reach.k_index(RECALL_KS[0])
            sums, image_sum = self.reach.per_pred["gc"][1:, i], self.reach.image_mean["gc"][i]
        elif blocked := self._no_ng(cell):
            return blocked
        else:
            family, i = ("ng" if cell.ng else "gc"), acc.k_index(cell.k)
            sums, image_sum = acc.per_pred[family][1:, i], acc.image_mean[family][i]
        if not self.n:
            return Value(None)
        seen = self.images_c > 0
        r_c = np.divide(sums, self.images_c, out=np.zeros(len(sums)), where=seen)
        rule = protocol_record(self.protocol).mean_recall
        if rule == MR_PER_IMAGE:
            return Value(float(image_sum / self.over), per_predicate=r_c, listed=seen)
        if rule == MR_NULL_IF_UNSEEN and not seen.all():
            reason = (
                f"mR-type metrics are undefined (null): {int((~seen).sum())} predicates never occur in the "
                "GT of an evaluated image (sgbench prints NaN)"
            )
            return Value(None, reason, per_predicate=r_c, listed=seen)
        return Value(float(r_c.mean()), per_predicate=r_c, listed=seen)

    def f1(self, cell: Cell) -> Value:
        if blocked := self._no_ng(cell):
            return blocked
        r, m = self.doc.value_at("R", cell), self.doc.value_at("mR", cell)
        return Value(f1_score(r, m) if r is not None and m is not None else None)

    def zero_shot(self, cell: Cell) -> Value:
        """``zR@K``: the mean over images with a zero-shot GT row of the share of those rows hit (``reduce``)."""
        if blocked := self._no_ng(cell):
            return blocked
        if not self.zs:
            return Value(None)
        if not self.zs_over:
            return Value(None, "no evaluated image has a zero-shot GT triplet: zR@K is null")
        return Value(float(self.acc.zs_recall["ng" if cell.ng else "gc"][self.acc.k_index(cell.k)] / self.zs_over))

    def pair_recall(self, cell: Cell) -> Value:
        return Value(self._recall(self.acc.recall["pair"][self.acc.k_index(cell.k)]))

    def imr(self, cell: Cell) -> Value | None:
        if cell.ng:
            return None
        if not self.n:
            return Value(None)
        imr_c = self._imr_at(cell)
        return Value(float(imr_c.mean()), per_predicate=imr_c)

    def wimr(self, cell: Cell) -> Value | None:
        if cell.ng:
            return None
        if self.wimr_weights is None:
            return Value(
                None,
                "zR@K and wIMR@K need statistics of the PSG training split: sgg-eval stats --psg psg.json "
                "-o stats.h5, then --stats stats.h5",
            )
        if not self.n:
            return Value(None)
        return Value(weighted_mean(self._imr_at(cell), self.wimr_weights))

    def _imr_at(self, cell: Cell) -> np.ndarray:
        """IMR_c at ``cell``'s K, per predicate c (``[C]``)."""
        return self.acc.per_predicate_recall("imr")[:, self.acc.k_index(cell.k)]

    def instance_recall(self, cell: Cell) -> Value:
        return Value(self._recall(self.acc.inst))

    def predicate_rank(self, cell: Cell) -> Value:
        """sgbench pools every defined (image, predicate) cell; sgbench-paper averages each image's cells, then
        the images with one; openpsg has none."""
        rule = protocol_record(self.protocol).prk
        if rule == PRK_NONE:
            return Value(None, "PRk needs an instance mapping, which OpenPSG's per-triplet matching has not: null")
        cells = self.prk_cells
        defined = ~np.isnan(cells)
        if not defined.any():
            return Value(None, "PRk needs ng_triplets that hit a GT triplet; none does")
        if rule == PRK_POOLED:
            return Value(float(cells[defined].mean()))
        has = defined.any(axis=1)
        per_image = np.where(defined, cells, 0.0).sum(axis=1)[has] / defined.sum(axis=1)[has]
        return Value(float(per_image.mean()))
