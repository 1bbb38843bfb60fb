"""``sgg_eval.Evaluator``: the box tasks' evaluation (PredCls, SGCls, SGDet) as a streaming accumulator, for a
training loop's validation step.

The images added are numbered by position, as an ``eval_results.pytorch`` numbers them, and grouped into the
very blocks ``sgg-eval evaluate`` ranks (``ranking.blocks.block_images``: 256 images, SGDet 32): each block is
ranked and summed into the running totals when it fills, and :meth:`Evaluator.compute` ranks the last, partial
one into a copy. The engine's sums are exact (``arrays.exact_sum``), so any batching of ``add`` and any
``merge`` give the command's numbers to the last bit, and memory holds one block of images at most (plus, in
SGDet, the ~24 bytes per detection COCO's box AP needs, and under ``oiv6`` its per-candidate records, as the
command keeps them).
"""

from __future__ import annotations

import copy
import os
from dataclasses import replace

import numpy as np

from sgg_eval.api.inputs import GT_NAMES, PRED_NAMES, gt_image, is_boxlist, pred_image
from sgg_eval.boxes.evaluate import evaluation_setup
from sgg_eval.boxes.split_gt import FILE_GT, clips_gt
from sgg_eval.core.defaults import IOU_THRESHOLD, LONGTAIL_RULE, PROTOCOL, TAU
from sgg_eval.core.errors import InputError
from sgg_eval.core.tasks import PREDCLS
from sgg_eval.data.stats import TrainingStats, read_stats
from sgg_eval.data.types import SCORE_KINDS, Vocabulary, check_predcls_pairs, triplet_key
from sgg_eval.data.vg150_facts import vg150_vocabulary
from sgg_eval.formats.eval_results import BOXLIST_GT_NAMES, BOXLIST_PRED_NAMES, validate_named
from sgg_eval.metrics.engine import document
from sgg_eval.metrics.longtail import add_group_recalls
from sgg_eval.metrics.options import ORDERS
from sgg_eval.metrics.ranking.blocks import block_images, rank_task
from sgg_eval.metrics.ranking.gt_rows import zeroshot_table
from sgg_eval.metrics.ranking.totals import Totals

SOURCE = "Evaluator.add"  # what an error names in place of a file


class Evaluator:
    """Scene-graph metrics of images added one by one or in batches, equal to ``sgg-eval evaluate`` on the
    same images written as an ``eval_results.pytorch`` (module docstring).

    ``task``: predcls, sgcls or sgdet. ``stats``: the training statistics, a path (``sgg-eval stats``) or a
    ``TrainingStats``; they give the vocabulary, the zero-shot set, wIMR's weights and the head/body/tail
    groups. ``vocab``: the class and predicate names, a ``Vocabulary`` or ``(objects, predicates)``, when there
    are no statistics (default: VG150's). ``protocol``, ``zeroshot`` (a triplet file or ``vg150``), ``tau``,
    ``iou_threshold``, ``setting``, ``split_file`` and ``longtail`` are the command's options of the same names.
    ``order``: ``stored`` ranks each image's relations in the order given (Scene-Graph-Benchmark's
    post-processor sorts them by triplet score, and the reference evaluator takes them so), ``score`` sorts
    them by the triplet score first. ``score_kind``: ``probabilities`` (softmax rows, column 0 background) or
    ``logits``.
    """

    def __init__(
        self,
        task: str,
        *,
        stats: str | os.PathLike | TrainingStats | None = None,
        vocab: Vocabulary | tuple | None = None,
        protocol: str = PROTOCOL,
        zeroshot: str | None = None,
        tau: float = TAU,
        iou_threshold: float = IOU_THRESHOLD,
        setting: str | None = None,
        split_file: str | None = None,
        longtail: str = LONGTAIL_RULE,
        order: str = "stored",
        score_kind: str = "probabilities",
    ):
        if order not in ORDERS:
            raise InputError(f"{order!r} is not one of {', '.join(ORDERS)}", field="order")
        if score_kind not in SCORE_KINDS:
            raise InputError(f"{score_kind!r} is not one of {', '.join(SCORE_KINDS)}", field="score_kind")
        train = stats if isinstance(stats, TrainingStats) or stats is None else read_stats(stats)
        self.vocab = _vocabulary(train, vocab)
        name = os.path.basename(stats) if isinstance(stats, (str, os.PathLike)) else getattr(train, "source", "")
        self._setup = evaluation_setup(
            self.vocab,
            task,
            protocol=protocol,
            train=train,
            stats_name=name or "the training statistics",
            zeroshot=zeroshot,
            tau=tau,
            iou_threshold=iou_threshold,
            setting=setting,
            split_file=split_file,
            longtail=longtail,
            order=order,
            score_kind=score_kind,
            clip_gt=clips_gt(protocol, FILE_GT),  # GT handed in, like a file's own: clipped as the protocol's loader
        )
        opts, zs = self._setup.opts, self._setup.zeroshot
        sizes = (self.vocab.num_objects, self.vocab.num_predicates)
        zs_keys = None if zs is None else triplet_key(zs[:, 0], zs[:, 1], zs[:, 2], *sizes)
        self._collectors = opts.collectors
        zs_table = None if zs_keys is None else zeroshot_table(zs_keys, self.vocab)
        counts = None if train is None else train.triplet_counts
        self._fixed = (self.vocab, opts, SOURCE, zs_table, counts, self._collectors)
        self.block_images = block_images(task)
        self.reset()

    @property
    def options(self):
        """The options the images are evaluated with (``metrics.options.EvalOptions``)."""
        return self._setup.opts

    @property
    def images(self) -> int:
        """How many images were added since the last :meth:`reset`."""
        return self._positions

    def reset(self) -> None:
        """Forget every image added (a new validation epoch)."""
        self._totals = Totals(self.vocab, self._setup.opts, self._collectors)
        self._pending: list = []
        self._positions = 0

    def add(self, gt, pred) -> None:
        """Add one image (``gt`` a dict or a BoxList, ``pred`` likewise: ``api.inputs``) or a batch (two lists
        of the same length). Each image is checked as the command checks a file's; a bad one raises
        :class:`InputError` naming its position and field, and nothing of that call is added."""
        batch = isinstance(gt, (list, tuple))
        gts, preds = (gt, pred) if batch else ([gt], [pred])
        if not isinstance(preds, (list, tuple)) or len(gts) != len(preds):
            raise InputError(f"{len(gts)} ground truths but {_length(preds)} predictions: one per image", path=SOURCE)
        images = [self._image(g, p, self._positions + k) for k, (g, p) in enumerate(zip(gts, preds))]
        start = self._positions
        self._positions += len(images)
        skipped = self._setup.opts.rules.skips_first  # PGSG leaves out the first images of the test split
        images = images[max(0, skipped - start) :]
        for image in images:
            self._pending.append(image)
            if len(self._pending) == self.block_images:
                self._totals.add(rank_task(self._pending, [len(self._pending)], *self._fixed))
                self._pending = []

    def compute(self) -> dict:
        """The metrics of the images added so far: the ``metrics`` of the command's JSON, same keys and values.
        Adding more afterwards continues the same evaluation."""
        return self.document()["metrics"]

    def document(self) -> dict:
        """The whole document the command writes (``metrics``, ``per_predicate``, ``counts``, ``notes``, ...)
        but ``input`` (there is no file)."""
        skipped = self._setup.opts.rules.skips_first
        if skipped and self._positions <= skipped:
            raise InputError(
                f"{self._positions} images: {self._setup.opts.protocol} does not evaluate the first {skipped:,} "
                "images of its test split, so nothing is left to evaluate",
                path=SOURCE,
            )
        totals = copy.deepcopy(self._totals)
        if self._pending:
            totals.add(rank_task(list(self._pending), [len(self._pending)], *self._fixed))
        s = self._setup
        doc = document(
            totals.acc,
            totals.counts,
            totals.collected,
            self.vocab,
            s.opts,
            num_pairs=None if s.train is None else s.train.num_pairs,
            has_triplet_counts=s.train is not None,
            zeroshot=s.zeroshot,
            zeroshot_source=s.zeroshot_source,
        )
        _require_evaluated(doc)
        return add_group_recalls(doc, self.vocab.predicate_classes, s.groups, s.used)

    def merge(self, other: Evaluator) -> None:
        """Add ``other``'s images after these (distributed validation: each rank accumulates, rank 0 merges
        the others in rank order): one pass's numbers over the images in that order, to the last bit, since
        the engine's sums are exact (``arrays.exact_sum``; a last, partial block of this one is ranked first)."""
        if not isinstance(other, Evaluator):
            raise TypeError(f"can merge an Evaluator, not {type(other).__name__}")
        if not _same_setup(self, other):
            raise InputError("the evaluators differ in their options or statistics: nothing merged", path=SOURCE)
        if skipped := self._setup.opts.rules.skips_first:
            raise InputError(
                f"{self._setup.opts.protocol} leaves out the first {skipped:,} images of one stream: evaluate it in "
                "one Evaluator"
            )
        if self._pending:
            self._totals.add(rank_task(self._pending, [len(self._pending)], *self._fixed))
        self._totals.merge(copy.deepcopy(other._totals), shift=self._positions)
        self._pending = [_shifted(image, self._positions) for image in other._pending]
        self._positions += other._positions

    def _image(self, gt, pred, position: int) -> tuple:
        where = {"path": SOURCE, "image_id": position, "position": position}
        g = gt_image(gt, position, where)
        p = pred_image(pred, g, self._setup.opts.task_spec.gt_boxes, position, where)
        names = (
            BOXLIST_GT_NAMES if is_boxlist(gt) else GT_NAMES,
            BOXLIST_PRED_NAMES if is_boxlist(pred) else PRED_NAMES,
        )
        probabilities = self._setup.opts.score_kind == "probabilities"
        validate_named(g, p, self.vocab, (f"{SOURCE} (gt)", f"{SOURCE} (pred)"), position, names, probabilities)
        if self._setup.opts.task == PREDCLS.name:  # now, not when its block is ranked
            check_predcls_pairs(g, p, f"{SOURCE} (pred)")
        return g, p


def _vocabulary(train: TrainingStats | None, vocab) -> Vocabulary:
    if train is not None:
        if vocab is not None and _as_vocabulary(vocab) != train.vocab:
            raise InputError("class or predicate names differ from the training statistics'", field="vocab")
        return train.vocab
    return vg150_vocabulary() if vocab is None else _as_vocabulary(vocab)


def _as_vocabulary(vocab) -> Vocabulary:
    if isinstance(vocab, Vocabulary):
        return vocab
    try:
        objects, predicates = vocab
        return Vocabulary(tuple(map(str, objects)), tuple(map(str, predicates)))
    except (TypeError, ValueError):
        raise InputError("expected a Vocabulary or (object names, predicate names)", field="vocab") from None


def _same_setup(a: Evaluator, b: Evaluator) -> bool:
    """Whether two evaluators evaluate alike: vocabulary, options, zero-shot set and training counts."""
    if a.vocab != b.vocab or a.options != b.options or a._collectors != b._collectors:
        return False
    counts = [None if e._setup.train is None else e._setup.train.triplet_counts for e in (a, b)]
    pairs = [(a._setup.zeroshot, b._setup.zeroshot), tuple(counts)]
    return all(x is y or (x is not None and y is not None and np.array_equal(x, y)) for x, y in pairs)


def _shifted(image: tuple, shift: int) -> tuple:
    """A pending image renumbered past ``shift`` positions (box AP breaks score ties by image position)."""
    gt, pred = image
    return replace(gt, image_id=gt.image_id + shift), replace(pred, image_id=pred.image_id + shift)


def _length(obj) -> int:
    return len(obj) if isinstance(obj, (list, tuple)) else 1


def _require_evaluated(doc: dict) -> None:
    c = doc["counts"]
    if not c["images_evaluated"]:
        what = "no image was added" if not c["images_input"] else "no image added has both a GT relation and a pair"
        raise InputError(f"{what}: nothing to evaluate", path=SOURCE)
