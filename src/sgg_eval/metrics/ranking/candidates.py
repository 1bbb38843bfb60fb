"""One image's predictions turned into ranked candidates: the task's GT substitution, scores as probabilities
and the graph-constrained (GC) triplet list in the reference's order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sgg_eval.arrays.rowwise import first_max as row_first_max
from sgg_eval.arrays.rowwise import row_max
from sgg_eval.arrays.segments import expand_segments, segment_offsets
from sgg_eval.data.types import GTImage, PredImage, check_predcls_pairs
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.metrics.ranking.families import Candidates, pair_products


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row softmax over all columns (background included), computed in float64, returned as float32."""
    x = logits.astype(np.float64)
    x = np.exp(x - x.max(axis=1, keepdims=True))
    return (x / x.sum(axis=1, keepdims=True)).astype(np.float32)


def _substituted(gt: GTImage, pred: PredImage, opts: EvalOptions, source: str):
    """The task's objects and scores for ranking: (boxes, labels, object scores, probabilities or None,
    scores to rank by). PredCls substitutes the GT boxes and labels, with object scores 1."""
    if opts.task_spec.gt_labels:
        check_predcls_pairs(gt, pred, source)
        boxes, labels, obj_scores = gt.boxes, gt.labels, np.ones(len(gt.labels), dtype=np.float32)
    else:
        boxes, labels, obj_scores = pred.boxes, pred.labels, pred.obj_scores.astype(np.float32)
    if opts.score_kind == "ranked":
        return boxes, labels, obj_scores, None, pred.rel_scores
    probs = _probabilities(pred.rel_scores, opts)
    return boxes, labels, obj_scores, probs, probs


def _gc_order(best: np.ndarray, s_s: np.ndarray, s_o: np.ndarray, opts: EvalOptions) -> np.ndarray:
    """The GC list's pair order: stored, or by the reference's GC triplet score ``p_max·s_s·s_o`` (stable)."""
    if opts.order != "score":
        return np.arange(len(best))
    triple = best.astype(np.float32) * s_s * s_o
    return np.argsort(-triple.astype(np.float64), kind="stable")


def prepare(gt: GTImage, pred: PredImage, opts: EvalOptions, source: str) -> Candidates:
    """Apply the task's substitution (PredCls: GT boxes, labels, scores 1) and build the GC candidate list."""
    boxes, labels, obj_scores, probs, rel = _substituted(gt, pred, opts, source)
    n = len(pred.pairs)
    if not n:
        empty = np.zeros(0, dtype=np.int64)
        return Candidates(boxes, labels, obj_scores, pred.pairs, probs, empty, empty, np.zeros(0, np.float32))
    fg = rel[:, 1:]
    first_max = fg.argmax(axis=1)  # the first maximum: the lowest predicate id on ties (scores are finite)
    best = fg[np.arange(n), first_max]
    gc_preds = 1 + first_max
    s_s, s_o = obj_scores[pred.pairs[:, 0]], obj_scores[pred.pairs[:, 1]]
    # The NG score of (pair, c) is (s_s * s_o) * p_c in float32; rounding is monotone, so the pair's best NG
    # score is exactly (s_s * s_o) * max_c p_c. Ranks use it to prune the NG candidates.
    pair_best = (s_s * s_o) * best.astype(np.float32)
    order = _gc_order(best, s_s, s_o, opts)
    return Candidates(boxes, labels, obj_scores, pred.pairs, probs, order, gc_preds[order].astype(np.int64), pair_best)


class ImageScores:
    """The probabilities of a block's large images kept image by image, each with its rows' maxima over
    columns 1..: an SGDet image's ~6,000 pairs hold ~1.3 MB of scores, which a block-wide concatenation would
    only copy, while everything else about its pairs is small enough to rank a block of such images at once.

    Indexed with block pair indices like the concatenated ``[pairs, C + 1]`` matrix would be, for gathers of
    rows: ``scores[rows]``, ``scores[rows, 1:]`` (a column slice) and ``scores[rows, cols]`` (one element per
    row); ``pair_off[i]`` is the block index of image i's first pair."""

    def __init__(self, probs: list[np.ndarray], row_maxima: list[np.ndarray | None] | None = None):
        """``row_maxima``: each image's row maxima over columns 1.., where known (None: computed here)."""
        self.probs = probs
        known = row_maxima if row_maxima is not None else [None] * len(probs)
        self.row_max = [row_max(p, 1) if m is None else m for p, m in zip(probs, known)]
        self.pair_off = segment_offsets([len(p) for p in probs])
        self.shape = (int(sum(len(p) for p in probs)), probs[0].shape[1])

    def __len__(self) -> int:
        return self.shape[0]

    def rows(self, pairs: np.ndarray) -> np.ndarray:
        """The score rows of block pairs ``pairs``, ``[len(pairs), C + 1]``, in their order."""
        pairs = np.asarray(pairs, dtype=np.int64)
        image = np.searchsorted(self.pair_off, pairs, "right") - 1
        order = np.argsort(image, kind="stable")
        bounds = np.searchsorted(image[order], np.arange(len(self.probs) + 1))
        out = np.empty((len(pairs), self.shape[1]), dtype=np.float32)
        for i in np.flatnonzero(np.diff(bounds)).tolist():
            mine = order[bounds[i] : bounds[i + 1]]
            out[mine] = self.probs[i][pairs[mine] - self.pair_off[i]]
        return out

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            return self.rows(key)
        pairs, cols = key
        rows = self.rows(pairs)
        return rows[:, cols] if isinstance(cols, slice) else rows[np.arange(len(rows)), cols]

    def predicates(self, i: int) -> PairPredicates:
        """Image i's predicates, by its own pair indices."""
        return PairPredicates(probs=self.probs[i], row_max=self.row_max[i])


class PairPredicates:
    """Each predicted pair's GC predicate (by pair index): the first maximum of its scores over columns 1..,
    i.e. the lowest predicate id on ties.

    Either given (``values``), or derived on demand from the probabilities and each row's maximum over columns
    1.. (one image's matrix and ``row_max``, or a block's :class:`ImageScores`, which has both): an SGDet image
    has ~6,000 pairs, whose argmax cost a third of its evaluation, while ranking asks for the predicates of a
    few matching pairs and, per GT predicate c, which pairs predict c. A pair predicts c exactly when ``p_c``
    equals its row maximum and no lower column does."""

    def __init__(
        self,
        values: np.ndarray | None = None,
        probs: np.ndarray | ImageScores | None = None,
        row_max: np.ndarray | None = None,
    ):
        self._values, self._probs, self._row_max = values, probs, row_max

    def __len__(self) -> int:
        return len(self._values) if self._values is not None else len(self._probs)

    def at(self, pairs: np.ndarray) -> np.ndarray:
        """The predicates of ``pairs`` (int64)."""
        if self._values is not None:
            return self._values[pairs]
        return 1 + self._probs[pairs, 1:].argmax(axis=1).astype(np.int64)

    def equal_to(self, c: int) -> np.ndarray:
        """Per pair, whether it predicts ``c`` (bool)."""
        if self._values is not None:
            return self._values == c
        if isinstance(self._probs, ImageScores):
            return np.concatenate([self._probs.predicates(i).equal_to(c) for i in range(len(self._probs.probs))])
        mask = np.zeros(len(self._row_max), dtype=bool)
        reach = np.flatnonzero(self._probs[:, c] == self._row_max)  # p_c is a maximum: c or a lower id ties
        mask[reach[self.at(reach) == c]] = True
        return mask

    def all(self) -> np.ndarray:
        """Every pair's predicate (int64); computed once."""
        if self._values is None:
            self._values = self.at(np.arange(len(self)))
        return self._values


@dataclass
class CandidateBlock:
    """The candidates of several images, concatenated in image order (``block_ranks``' input): per image,
    ``n_obj`` objects and ``n_pairs`` pairs; per object its box, label and score; per pair its local index
    pair, scores (``probs``: concatenated, or :class:`ImageScores` image by image; None for ranked-only
    input), predicted predicate (``predicted``) and best NG score; ``gc_pairs`` each image's GC list (local
    pair indices in GC order), image after image."""

    n_obj: np.ndarray
    n_pairs: np.ndarray
    boxes: np.ndarray
    labels: np.ndarray
    obj_scores: np.ndarray
    pairs: np.ndarray
    probs: np.ndarray | ImageScores | None
    gc_pairs: np.ndarray
    predicted: PairPredicates
    pair_best: np.ndarray | None
    # per pair: its image and index there, and its object scores' product s_s·s_o (float32), where the
    # preparation made them already; else :meth:`pair_images` and :meth:`pair_products` make them
    pair_index: tuple[np.ndarray, np.ndarray] | None = None
    per_pair: np.ndarray | None = None

    def pair_images(self) -> tuple[np.ndarray, np.ndarray]:
        """Each pair's image and its index within that image."""
        if self.pair_index is None:
            self.pair_index = expand_segments(self.n_pairs)
        return self.pair_index

    def pair_products(self) -> np.ndarray:
        """Each pair's ``s_s · s_o`` (float32): the factor of all its NG scores."""
        if self.per_pair is None:  # the pairs' object indices made block-wide
            obj_at = np.repeat(segment_offsets(self.n_obj), self.n_pairs)
            self.per_pair = pair_products(self.obj_scores, self.pairs + obj_at[:, None])
        return self.per_pair

    @classmethod
    def of(cls, cands: list[Candidates]) -> CandidateBlock:
        """The concatenation of per-image candidates (one image's arrays are used as they are)."""
        with_pairs = [c for c in cands if len(c.pairs)] or cands[:1]
        n_pairs = np.array([len(c.pairs) for c in cands], dtype=np.int64)
        gc_pairs = np.concatenate([c.gc_pairs for c in cands]).astype(np.int64)
        predicted = np.zeros(len(gc_pairs), dtype=np.int64)  # each image's GC predicates, back in pair order
        predicted[gc_pairs + np.repeat(segment_offsets(n_pairs), n_pairs)] = np.concatenate([c.gc_preds for c in cands])
        if len(cands) == 1:  # an SGDet image: its scores (~1 MB) are not copied
            c = cands[0]
            return cls(
                np.array([len(c.labels)]),
                np.array([len(c.pairs)]),
                np.asarray(c.boxes, np.float32).reshape(-1, 4),
                c.labels.astype(np.int64),
                np.asarray(c.obj_scores, np.float32),
                c.pairs.astype(np.int64).reshape(-1, 2),
                c.probs,
                c.gc_pairs.astype(np.int64),
                PairPredicates(predicted),
                c.pair_best,
            )
        return cls(
            np.array([len(c.labels) for c in cands], dtype=np.int64),
            n_pairs,
            np.concatenate([np.asarray(c.boxes, np.float32).reshape(-1, 4) for c in cands]),
            np.concatenate([c.labels for c in cands]).astype(np.int64),
            np.concatenate([np.asarray(c.obj_scores, np.float32) for c in cands]),
            np.concatenate([c.pairs for c in cands]).astype(np.int64).reshape(-1, 2),
            None if cands[0].probs is None else np.concatenate([c.probs for c in with_pairs]),
            gc_pairs,
            PairPredicates(predicted),
            None if cands[0].pair_best is None else np.concatenate([c.pair_best for c in cands]),
        )


def prepare_block(images: list, opts: EvalOptions, source: str, *, apart: bool = False) -> CandidateBlock:
    """:func:`prepare` of every (GT, prediction) of ``images`` at once, concatenated, with no step per image
    but the concatenations and (``apart``) the score rows' maxima.

    The scores are concatenated, with every pair's predicate from one first-maximum pass over them
    (``rowwise.first_max``); or, ``apart`` (large images: SGDet), kept image by image (:class:`ImageScores`)
    with only each row's maximum (the reader's, where it kept them: :meth:`PredImage.row_maxima`), the
    predicates being derived on demand (:class:`PairPredicates`)."""
    if opts.score_kind == "ranked" or not any(len(p.pairs) for _, p in images):
        return CandidateBlock.of([prepare(gt, pred, opts, source) for gt, pred in images])
    preds = [p for _, p in images]
    n_pairs = np.array([len(p.pairs) for p in preds], dtype=np.int64)
    pairs = np.concatenate([p.pairs for p in preds]).astype(np.int64).reshape(-1, 2)
    pair_img, local = expand_segments(n_pairs)  # each pair's image, and its index there (the stored order)
    n_obj, boxes, labels, obj_scores = _objects(images, opts, source, pairs, pair_img)
    probs, best, predicted = (_scores_apart if apart else _scores_together)(preds, opts)
    obj_at = np.repeat(segment_offsets(n_obj), n_pairs)
    s_s, s_o = obj_scores[pairs[:, 0] + obj_at], obj_scores[pairs[:, 1] + obj_at]
    gc_pairs = local
    if opts.order == "score":  # by the reference's GC triplet score within each image, stable
        gc_pairs = gc_pairs[np.lexsort((-(best * s_s * s_o).astype(np.float64), pair_img))]
    per_pair = s_s * s_o
    return CandidateBlock(
        n_obj,
        n_pairs,
        boxes.astype(np.float32).reshape(-1, 4),
        labels.astype(np.int64),
        obj_scores,
        pairs,
        probs,
        gc_pairs,
        predicted,
        per_pair * best,
        (pair_img, local),
        per_pair,
    )


def _objects(images: list, opts: EvalOptions, source: str, pairs: np.ndarray, pair_img: np.ndarray) -> tuple:
    """The block's objects the pairs index, ``(count per image, boxes, labels, scores)``: the GT's where the task
    gives the labels (scores 1), else the predicted ones."""
    gts, preds = [g for g, _ in images], [p for _, p in images]
    if not opts.task_spec.gt_labels:
        n_obj = np.array([len(p.labels) for p in preds], dtype=np.int64)
        boxes, labels = np.concatenate([p.boxes for p in preds]), np.concatenate([p.labels for p in preds])
        return n_obj, boxes, labels, np.concatenate([p.obj_scores for p in preds]).astype(np.float32)
    n_gt = np.array([len(g.labels) for g in gts], dtype=np.int64)
    bad = np.flatnonzero(np.maximum(pairs[:, 0], pairs[:, 1]) >= n_gt[pair_img])  # not max(axis=1): 2 columns
    if len(bad):  # an SGDet file evaluated as PredCls: raised by prepare, with its message
        prepare(*images[int(pair_img[bad[0]])], opts, source)
    labels = np.concatenate([g.labels for g in gts])
    return n_gt, np.concatenate([g.boxes for g in gts]), labels, np.ones(len(labels), dtype=np.float32)


def _scores_apart(preds: list, opts: EvalOptions) -> tuple:
    """Large images (SGDet): the scores kept image by image with each row's maximum (the reader's, where it kept
    them and the scores are those it validated), the predicates derived on demand."""
    width = next(p.rel_scores.shape[1] for p in preds if len(p.pairs))
    scores = [_probabilities(p.rel_scores, opts) if len(p.pairs) else np.zeros((0, width), np.float32) for p in preds]
    probs = ImageScores(scores, [p.row_maxima() if s is p.rel_scores else None for s, p in zip(scores, preds)])
    return probs, np.concatenate(probs.row_max), PairPredicates(probs=probs)


def _scores_together(preds: list, opts: EvalOptions) -> tuple:
    """The scores concatenated, every pair's predicate from one first-maximum pass (lowest id on ties)."""
    probs = _probabilities(np.concatenate([p.rel_scores for p in preds if len(p.pairs)]), opts)
    first_max, best = row_first_max(probs, 1)
    return probs, best, PairPredicates(1 + first_max)


def _probabilities(scores: np.ndarray, opts: EvalOptions) -> np.ndarray:
    """Relation scores as float32 probabilities (logits through the softmax)."""
    return softmax(scores) if opts.score_kind == "logits" else scores.astype(np.float32, copy=False)
