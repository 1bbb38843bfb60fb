"""``sgg_eval.PsgEvaluator``: panoptic SGG's evaluation (``sgg-eval evaluate --psg``) as a streaming
accumulator, the sibling of :class:`~sgg_eval.api.evaluator.Evaluator` with the same methods.

The ground truth is PSG's own files (``psg.json`` and the folder its PNGs are relative to), read once. Each
image added is matched at once, its masks against its GT PNG, and only its first-hit ranks are kept (a few
hundred bytes; the masks go). :meth:`PsgEvaluator.compute` reduces them in the test split's order, in the
command's chunks (``tuning.PSG_CHUNK``), so the numbers are ``sgg-eval evaluate --psg``'s on the same
predictions written as an SGBench submission, to the last bit, whatever the order and batching of ``add``;
``merge`` of evaluators is exact too.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass

import numpy as np

from sgg_eval.api.inputs import as_array
from sgg_eval.core import tuning
from sgg_eval.core.defaults import IOU_THRESHOLD, LONGTAIL_RULE, PSG_PNG_READERS, PSG_PROTOCOL, PSG_PROTOCOLS, TAU
from sgg_eval.core.errors import InputError
from sgg_eval.data.stats import TrainingStats, read_stats
from sgg_eval.data.types import check_xyxy
from sgg_eval.metrics.iou import sgbench_box_iou
from sgg_eval.metrics.options import check_option
from sgg_eval.panoptic.documents import Run, documents
from sgg_eval.panoptic.evaluate import check_id_type
from sgg_eval.panoptic.matching import mask_ious
from sgg_eval.panoptic.panoptic_png import segment_index
from sgg_eval.panoptic.psg_json import read_psg
from sgg_eval.panoptic.sgbench_submission import check_categories, checked_rows
from sgg_eval.panoptic.stats import psg_vocabulary
from sgg_eval.panoptic.types import SubmissionImage
from sgg_eval.panoptic.work import ZeroShot, empty_segments, merged, rank_image, reduce_ranked

SOURCE = "PsgEvaluator.add"
PRED_KEYS = ("labels", "masks", "boxes", "triplets", "ng_triplets")


@dataclass(frozen=True)
class _Ranked:
    """One image's kept state: its ranks with and without the ng family (the run has ng_triplets if any image
    has), and what the document counts of it."""

    with_ng: dict
    without_ng: dict
    rows: range
    duplicates: int
    has_ng: bool


class PsgEvaluator:
    """Panoptic SGG metrics of predictions added image by image (module docstring).

    ``psg``: OpenPSG's ``psg.json``; ``root``: the folder its ``pan_seg_file_name`` is relative to (not
    needed with ``boxes``). ``protocol``: sgbench, sgbench-paper or openpsg. ``boxes``: the predictions are
    boxes, not masks (sgbench's box mode). ``stats`` (a path from ``sgg-eval stats --psg``, or a
    ``TrainingStats``), ``tau``, ``iou_threshold`` and ``longtail`` are the command's options.
    """

    def __init__(
        self,
        psg: str | os.PathLike,
        root: str | os.PathLike = "",
        *,
        protocol: str = PSG_PROTOCOL,
        boxes: bool = False,
        stats: str | os.PathLike | TrainingStats | None = None,
        tau: float = TAU,
        iou_threshold: float = IOU_THRESHOLD,
        longtail: str = LONGTAIL_RULE,
    ):
        if protocol not in PSG_PROTOCOLS:
            listed = ", ".join(PSG_PROTOCOLS)
            raise InputError(f"{protocol!r} is not one of {listed} for panoptic SGG", field="protocol")
        self.tau, self.iou_threshold = check_option("tau", tau), check_option("iou_threshold", iou_threshold)
        self.protocol, self.boxes, self.longtail = protocol, boxes, longtail
        self.gt = read_psg(psg, root, boxes=boxes)
        if not self.gt.images:
            raise InputError("no test image with relations: nothing to evaluate", path=self.gt.path)
        train = stats if isinstance(stats, TrainingStats) or stats is None else read_stats(stats)
        if train is not None and train.vocab != psg_vocabulary(self.gt):
            raise InputError("class or predicate names differ from psg.json's: not statistics of this PSG file")
        self.train = train
        self._stats_name = os.path.basename(stats) if isinstance(stats, (str, os.PathLike)) else None
        self._zeroshot = None if train is None else ZeroShot.of(train)
        self._position = {(type(im.image_id), im.image_id): k for k, im in enumerate(self.gt.images)}
        self._as_text = {str(im.image_id) for im in self.gt.images}
        self.reset()

    @property
    def images(self) -> int:
        """How many images were added since the last :meth:`reset` (test images with relations or not)."""
        return len(self._ranked) + self._extra

    def reset(self) -> None:
        """Forget every image added."""
        self._ranked: dict[int, _Ranked] = {}
        self._extra = 0
        self._has_ng = False

    def add(self, image_id, pred) -> None:
        """Add one image's predictions (``image_id`` as ``psg.json`` has it, ``pred`` a dict: ``labels``
        ``[N]`` 0-based classes; ``masks`` ``[N, H, W]`` (non-zero: in the instance), or ``boxes`` ``[N, 4]``
        in box mode; ``triplets`` ``[T, 3]`` (subject, object, 0-based predicate), best first; optionally
        ``ng_triplets``), or lists of both. A bad image raises :class:`InputError` and nothing of the call is
        added."""
        ids, preds = (image_id, pred) if isinstance(image_id, (list, tuple)) else ([image_id], [pred])
        if not isinstance(preds, (list, tuple)) or len(ids) != len(preds):
            raise InputError(f"{len(ids)} image ids but a different number of predictions", path=SOURCE)
        ranked, extra, seen, has_ng = {}, 0, set(), False
        for k, (i, p) in enumerate(zip(ids, preds)):
            position = self._test_position(i, k)
            if position is None:  # not a test image with relations: checked and counted, not evaluated
                extra += 1
                has_ng |= bool(len(self._checked(p, {"path": SOURCE, "image_id": i, "position": k})[3]))
            elif position in self._ranked or position in seen:
                raise InputError("image added twice", path=SOURCE, image_id=i, position=k, field="image_id")
            else:
                seen.add(position)
                ranked[position] = self._rank(position, p, k)
        self._ranked.update(ranked)
        self._extra += extra
        self._has_ng |= has_ng or any(r.has_ng for r in ranked.values())

    def compute(self) -> dict:
        """The ``metrics`` of the command's JSON for the images added so far."""
        return self.document()["metrics"]

    def document(self) -> dict:
        """The whole document the command writes, but ``input``."""
        gt, protocols = self.gt, (self.protocol,)
        present = sorted(self._ranked)
        ranks = [getattr(self._ranked[k], "with_ng" if self._has_ng else "without_ng") for k in present]
        chunks = range(0, len(ranks), tuning.PSG_CHUNK)  # the command's chunks, in test-split order
        parts = (reduce_ranked(gt, ranks[lo : lo + tuning.PSG_CHUNK], protocols, self._zeroshot) for lo in chunks)
        total = merged(gt, parts, protocols)
        work = [(image, self._ranked.get(k)) for k, image in enumerate(gt.images)]
        run = Run.of(
            work,
            extra=self._extra,
            has_ng=self._has_ng,
            train=self.train,
            zeroshot=self._zeroshot,
            stats_name=self._stats_name or "the training statistics",
            tau=self.tau,
            iou_threshold=self.iou_threshold,
        )
        doc = documents(run, total, gt, "boxes" if self.boxes else "masks", None, self.longtail)[self.protocol]
        doc.pop("input")
        return doc

    def merge(self, other: PsgEvaluator) -> None:
        """Add ``other``'s images (another rank's): exactly one evaluator's numbers over both sets."""
        if not isinstance(other, PsgEvaluator):
            raise TypeError(f"can merge a PsgEvaluator, not {type(other).__name__}")
        same = (self.gt.path, self.protocol, self.boxes, self.tau, self.iou_threshold, self.longtail)
        if same != (other.gt.path, other.protocol, other.boxes, other.tau, other.iou_threshold, other.longtail):
            raise InputError("the evaluators differ in their psg.json or options: nothing merged", path=SOURCE)
        twice = sorted(set(self._ranked) & set(other._ranked))
        if twice:
            raise InputError("image added to both evaluators", path=SOURCE, image_id=self.gt.images[twice[0]].image_id)
        self._ranked.update(copy.deepcopy(other._ranked))
        self._extra += other._extra
        self._has_ng |= other._has_ng

    def _test_position(self, image_id, k: int) -> int | None:
        """The test-split position of ``image_id`` (None: not a test image with relations); an id that matches
        one only as text is refused, as the command refuses it (PSG's ids are strings)."""
        if type(image_id) not in (int, str):
            raise InputError(f"id {image_id!r:.40} is neither an integer nor a string", path=SOURCE, position=k)
        position = self._position.get((type(image_id), image_id))
        if position is None:
            check_id_type(self.gt, image_id, self._as_text, {"path": SOURCE, "position": k, "field": "image_id"})
        return position

    def _checked(self, pred, where: dict) -> tuple:
        """``(labels, rows, graph-constrained rows, ng rows, duplicates dropped)`` of a prediction dict, checked
        as the command checks an SGBench image entry."""
        if not isinstance(pred, dict):
            raise InputError(f"expected a dict with {', '.join(PRED_KEYS)}, got {type(pred).__name__}", **where)
        unknown = sorted(set(pred) - set(PRED_KEYS))
        if unknown:
            raise InputError(f"unknown key {unknown[0]!r} in the prediction (keys: {', '.join(PRED_KEYS)})", **where)
        for key in ("labels", "boxes" if self.boxes else "masks", "triplets"):
            if key not in pred:
                raise InputError("missing from the prediction", field=key, **where)
        labels = _ints(as_array(pred["labels"], "labels", where), 1, "labels", where)
        check_categories(labels, len(self.gt.object_classes), "labels", where)
        n, c = len(labels), self.gt.num_predicates
        rows = _ints(as_array(pred["triplets"], "triplets", where), 2, "triplets", where, width=3)
        gc, dropped = checked_rows(rows, n, c, "triplets", where)
        given = pred.get("ng_triplets")
        ng_rows = np.zeros((0, 3), np.int64) if given is None else as_array(given, "ng_triplets", where)
        ng, _ = checked_rows(_ints(ng_rows, 2, "ng_triplets", where, width=3), n, c, "ng_triplets", where)
        return labels, rows, gc, ng, dropped

    def _rank(self, position: int, pred, k: int) -> _Ranked:
        """Image ``position``'s ranks from its prediction (the ``k``-th of the call)."""
        image = self.gt.images[position]
        where = {"path": SOURCE, "image_id": image.image_id, "position": k}
        labels, rows, gc, ng, dropped = self._checked(pred, where)
        n, empty = len(labels), 0
        if self.boxes:
            boxes = as_array(pred["boxes"], "boxes", where)
            check_xyxy(boxes, "boxes", where)
            if len(boxes) != n:
                raise InputError(f"{len(boxes)} boxes for {n} labels", field="boxes", **where)
            boxes = boxes.astype(np.float64, copy=False)
            iou = sgbench_box_iou(image.boxes, boxes)
        else:
            boxes = np.zeros((n, 4))
            seg, gt_area = segment_index(self.gt, image, PSG_PNG_READERS[self.protocol])
            masks = _masks(as_array(pred["masks"], "masks", where), n, seg.shape, where)
            iou = mask_ious(seg, len(image.labels), masks, labels, image.labels, gt_area)
            empty = empty_segments(seg, gt_area, len(image.labels))
        sub = SubmissionImage(image.image_id, k, labels, boxes, gc, ng, dropped, None, rows)
        args = (self.gt, image, sub, iou, (self.protocol,))
        with_ng = rank_image(*args, True, self._zeroshot, self.iou_threshold, empty)
        # an image without ng_triplets is ranked both ways: whether the run has them is known at the end
        without_ng = with_ng if len(ng) else rank_image(*args, False, self._zeroshot, self.iou_threshold, empty)
        return _Ranked(with_ng, without_ng, range(len(rows)), dropped, bool(len(ng)))


def _ints(a: np.ndarray, ndim: int, field: str, where: dict, width: int | None = None) -> np.ndarray:
    if a.size == 0:
        return np.zeros((0, width) if width else (0,), dtype=np.int64)
    if a.dtype.kind not in "iu" or a.ndim != ndim or (width is not None and a.shape[1] != width):
        shape = f"[n, {width}]" if width else "[n]"
        raise InputError(f"shape {list(a.shape)} dtype {a.dtype}, expected {shape} integers", field=field, **where)
    return a.astype(np.int64, copy=False)


def _masks(a: np.ndarray, n: int, shape: tuple[int, int], where: dict) -> np.ndarray:
    """``[N, H, W]`` masks as uint8 (non-zero: in the instance), of the GT PNG's size."""
    if a.shape != (n, *shape) and not (n == 0 and a.size == 0):
        raise InputError(f"shape {list(a.shape)}, expected [{n}, {shape[0]}, {shape[1]}]", field="masks", **where)
    if a.dtype.kind not in "biuf":
        raise InputError(f"dtype {a.dtype}: expected booleans or numbers", field="masks", **where)
    out = a.astype(np.uint8, copy=False) if a.dtype in (np.bool_, np.uint8) else (a != 0).astype(np.uint8)
    return out.reshape(n, *shape)
