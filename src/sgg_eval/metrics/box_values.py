"""The box families' values (PredCls, SGCls, SGDet) from one run's accumulator, for ``metrics.document``'s table.

Formulas (``metrics.reduce`` defines the accumulated sums; docs/metrics.md each family), over the |I| evaluated
images: ``R@K = Σ_i hits_i(K) / M_i / |I|`` (``ngR`` on the NG list), ``mR@K`` the unweighted mean over all C
predicates of their per-predicate recall (absent predicates 0), ``F1@K`` their harmonic mean, ``zR@K`` over the
images with a zero-shot row, ``A@K`` pooled over GT rows, ``PR@K`` over distinct GT pairs, ``IMR@K`` the mean of
per-predicate IMR and ``wIMR@K`` weighted by ``n_c^τ``, ``R_tr`` / ``wR_tr`` pooled over triplet rows, ``PRk``
the mean over predicates with a matched row, ``InstR`` over GT boxes, ``R@k×`` / ``mR@k×`` with
``K_i = round(k · M_i)``. The null rules: nothing evaluated; a family the input cannot give (ranked triplets
have no per-predicate scores); a family the task does not define; a statistic that was not given.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.data.types import Vocabulary
from sgg_eval.metrics.document import Cell, Document, FamilyValues, Value
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.metrics.reduce import Accumulator, f1_score, weighted_mean, wimr_weights

NO_SCORES = (
    "NG, ng-IMR, ng-wIMR, R_tr and PRk need per-predicate scores, which this input does not have (ranked triplets only)"
)


class BoxValues(FamilyValues):
    """``table()``: each box family's function of a :class:`~sgg_eval.metrics.document.Cell`."""

    def __init__(
        self,
        doc: Document,
        acc: Accumulator,
        vocab: Vocabulary,
        opts: EvalOptions,
        *,
        num_pairs=None,
        has_triplet_counts: bool = False,
        zeroshot_source: str = "",
    ):
        self.doc, self.acc, self.opts = doc, acc, opts
        self.num_pairs, self.has_triplet_counts, self.zeroshot_source = num_pairs, has_triplet_counts, zeroshot_source
        self.n = acc.images
        self.none_eval = "no image was evaluated" if self.n == 0 else None
        self.uniform = np.ones(vocab.num_predicates)

    def _blocked(self, family: str) -> str | None:
        """Why the ranked family ``family`` has no values in this run (None: it has)."""
        if self.n == 0 or family not in self.acc.families:
            return self.none_eval or NO_SCORES
        return None

    def _at(self, cell: Cell) -> int:
        return self.acc.k_index(cell.k)

    def recall(self, cell: Cell) -> Value | None:
        if cell.k == "inf":
            return None
        if cell.relative:
            return Value(self.acc.rel_recall[cell.index] / self.n if self.n else None, self.none_eval)
        family = "ng" if cell.ng else "gc"
        if reason := self._blocked(family):
            return Value(None, reason)
        return Value(self.acc.recall[family][self._at(cell)] / self.n)

    def mean_recall(self, cell: Cell) -> Value | None:
        if cell.k == "inf":
            return None
        if cell.relative:
            if not self.n:
                return Value(None, self.none_eval)
            per_c = self.acc.relative_per_predicate()[:, cell.index]
            return Value(weighted_mean(per_c, self.uniform), per_predicate=per_c)
        family = "ng" if cell.ng else "gc"
        if reason := self._blocked(family):
            return Value(None, reason)
        per_c = self.acc.per_predicate_recall(family)[:, self._at(cell)]
        return Value(weighted_mean(per_c, self.uniform), per_predicate=per_c)

    def f1(self, cell: Cell) -> Value:
        if reason := self._blocked("ng" if cell.ng else "gc"):
            return Value(None, reason)
        return Value(f1_score(self.doc.value_at("R", cell), self.doc.value_at("mR", cell)))

    def zero_shot(self, cell: Cell) -> Value:
        family = "ng" if cell.ng else "gc"
        if reason := self._blocked(family):
            return Value(None, reason)
        if not self.zeroshot_source:
            return Value(None, "zero-shot recall needs a zero-shot set (--zeroshot FILE or --stats STATS)")
        if self.acc.zs_images == 0:
            return Value(None, "no evaluated image has a zero-shot GT triplet")
        return Value(self.acc.zs_recall[family][self._at(cell)] / self.acc.zs_images)

    def accuracy(self, cell: Cell) -> Value:
        if "gt_pair" in self.acc.families and self.acc.acc_rows:
            return Value(self.acc.acc_hits[self._at(cell)] / self.acc.acc_rows)
        return Value(None, self.none_eval or "A@K is defined for PredCls and SGCls only")

    def pair_recall(self, cell: Cell) -> Value:
        return Value(self.acc.recall["pair"][self._at(cell)] / self.n if self.n else None, self.none_eval)

    def _imr(self, cell: Cell) -> tuple[np.ndarray | None, str | None]:
        family = "ng_imr" if cell.ng else "imr"
        if self.n == 0 or family not in self.acc.families:
            return None, self.none_eval or NO_SCORES
        return self.acc.per_predicate_recall(family)[:, self._at(cell)], None

    def imr(self, cell: Cell) -> Value:
        imr_c, reason = self._imr(cell)
        if imr_c is None:
            return Value(None, reason)
        return Value(weighted_mean(imr_c, self.uniform), per_predicate=imr_c)

    def wimr(self, cell: Cell) -> Value:
        imr_c, reason = self._imr(cell)
        if imr_c is None:
            return Value(None, reason)
        if self.num_pairs is None:
            return Value(None, "wIMR needs the training statistics (--stats STATS) for n_c")
        return Value(weighted_mean(imr_c, wimr_weights(self.num_pairs, self.opts.tau)))

    def _no_triplets(self) -> str | None:
        if "triplet" in self.acc.families and self.acc.tr_rows:
            return None
        defined = not self.opts.task_spec.detects
        return self.none_eval or (NO_SCORES if defined else "R_tr is defined for PredCls and SGCls only")

    def triplet_recall(self, cell: Cell) -> Value:
        if reason := self._no_triplets():
            return Value(None, reason)
        return Value(self.acc.tr_hits[self._at(cell)] / self.acc.tr_rows)

    def weighted_triplet_recall(self, cell: Cell) -> Value:
        if reason := self._no_triplets():
            return Value(None, reason)
        if not self.has_triplet_counts:
            return Value(None, "wR_tr needs the training statistics (--stats STATS) for n_t")
        return Value(self.acc.wtr_hits[self._at(cell)] / self.acc.wtr_total)

    def predicate_rank(self, cell: Cell) -> Value:
        acc = self.acc
        if "prk" not in acc.families or acc.prk_rows[1:].sum() == 0:
            return Value(None, self.none_eval or NO_SCORES)
        has = acc.prk_rows[1:] > 0
        prk_c = np.divide(acc.prk_sum[1:], acc.prk_rows[1:], out=np.full(acc.C, np.nan), where=has)
        if not has.all():
            self.doc.note(f"PRk averages the {int(has.sum())} predicates with at least one matched GT pair")
        return Value(float(np.mean(prk_c[has])), per_predicate=prk_c, listed=has)

    def instance_recall(self, cell: Cell) -> Value:
        if self.opts.task_spec.detects:
            return Value(self.acc.inst / self.n if self.n else None, self.none_eval)
        return Value(None, "InstR is defined for SGDet only (GT boxes are given in PredCls and SGCls)")
