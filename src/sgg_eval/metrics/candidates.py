"""One image's predictions turned into ranked candidates: the task's GT substitution, scores as probabilities
and the graph-constrained (GC) triplet list in the reference's order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.errors import InputError
from sgg_eval.metrics.ranks import Candidates
from sgg_eval.metrics.segments import segment_offsets

if TYPE_CHECKING:
    from sgg_eval.metrics.engine import EvalOptions


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row softmax over all columns (background included), computed in float64, returned as float32."""
    x = logits.astype(np.float64)
    x = np.exp(x - x.max(axis=1, keepdims=True))
    return (x / x.sum(axis=1, keepdims=True)).astype(np.float32)


def prepare(gt: GTImage, pred: PredImage, opts: EvalOptions, source: str) -> Candidates:
    """Apply the task's substitution (PredCls: GT boxes, labels, scores 1) and build the GC candidate list."""
    if opts.task == "predcls":
        if len(pred.pairs) and pred.pairs.max() >= len(gt.labels):
            raise InputError(f"pair index {pred.pairs.max()} but the GT has {len(gt.labels)} objects: PredCls "
                             "pairs index the GT objects, so this looks like an SGDet output (detected boxes) "
                             "evaluated as PredCls; check --task", path=source, image_id=gt.image_id, field="pairs")
        boxes, labels, obj_scores = gt.boxes, gt.labels, np.ones(len(gt.labels), dtype=np.float32)
    else:
        boxes, labels, obj_scores = pred.boxes, pred.labels, pred.obj_scores.astype(np.float32)
    if opts.score_kind == "ranked":
        probs = None
        rel = pred.rel_scores
    else:
        probs = softmax(pred.rel_scores) if opts.score_kind == "logits" else np.asarray(pred.rel_scores, np.float32)
        rel = probs
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
    order = np.arange(n)
    if opts.order == "score":
        triple = best.astype(np.float32) * s_s * s_o  # the reference's GC triplet score
        order = np.argsort(-triple.astype(np.float64), kind="stable")
    return Candidates(boxes, labels, obj_scores, pred.pairs, probs, order, gc_preds[order].astype(np.int64),
                      pair_best)


@dataclass
class CandidateBlock:
    """The candidates of several images, concatenated in image order (``block_ranks``' input): per image,
    ``n_obj`` objects and ``n_pairs`` pairs; per object its box, label and score; per pair its local index
    pair, scores (``probs``, None for ranked-only input) and best NG score; ``gc_pairs``/``gc_preds`` each
    image's GC list (local pair indices and predicates, in GC order), image after image."""

    n_obj: np.ndarray
    n_pairs: np.ndarray
    boxes: np.ndarray
    labels: np.ndarray
    obj_scores: np.ndarray
    pairs: np.ndarray
    probs: np.ndarray | None
    gc_pairs: np.ndarray
    gc_preds: np.ndarray
    pair_best: np.ndarray | None

    @classmethod
    def of(cls, cands: list[Candidates]) -> CandidateBlock:
        """The concatenation of per-image candidates (one image's arrays are used as they are)."""
        with_pairs = [c for c in cands if len(c.pairs)] or cands[:1]
        if len(cands) == 1:  # an SGDet image: its scores (~1 MB) are not copied
            c = cands[0]
            return cls(np.array([len(c.labels)]), np.array([len(c.pairs)]),
                       np.asarray(c.boxes, np.float32).reshape(-1, 4), c.labels.astype(np.int64),
                       np.asarray(c.obj_scores, np.float32), c.pairs.astype(np.int64).reshape(-1, 2), c.probs,
                       c.gc_pairs.astype(np.int64), c.gc_preds.astype(np.int64), c.pair_best)
        return cls(np.array([len(c.labels) for c in cands], dtype=np.int64),
                   np.array([len(c.pairs) for c in cands], dtype=np.int64),
                   np.concatenate([np.asarray(c.boxes, np.float32).reshape(-1, 4) for c in cands]),
                   np.concatenate([c.labels for c in cands]).astype(np.int64),
                   np.concatenate([np.asarray(c.obj_scores, np.float32) for c in cands]),
                   np.concatenate([c.pairs for c in cands]).astype(np.int64).reshape(-1, 2),
                   None if cands[0].probs is None else np.concatenate([c.probs for c in with_pairs]),
                   np.concatenate([c.gc_pairs for c in cands]).astype(np.int64),
                   np.concatenate([c.gc_preds for c in cands]).astype(np.int64),
                   None if cands[0].pair_best is None else np.concatenate([c.pair_best for c in cands]))

    def single(self) -> Candidates:
        """The candidates of a block of one image."""
        return Candidates(self.boxes, self.labels, self.obj_scores, self.pairs, self.probs, self.gc_pairs,
                          self.gc_preds, self.pair_best)


def prepare_block(images: list, opts: EvalOptions, source: str) -> CandidateBlock:
    """:func:`prepare` of every (GT, prediction) of ``images`` at once, concatenated: one argmax and one gather
    over all the scores, and no step per image but the concatenations."""
    if len(images) == 1 or opts.score_kind == "ranked" or not any(len(p.pairs) for _, p in images):
        return CandidateBlock.of([prepare(gt, pred, opts, source) for gt, pred in images])
    gts, preds = [g for g, _ in images], [p for _, p in images]
    n_pairs = np.array([len(p.pairs) for p in preds], dtype=np.int64)
    pairs = np.concatenate([p.pairs for p in preds]).astype(np.int64).reshape(-1, 2)
    pair_img = np.repeat(np.arange(len(images)), n_pairs)
    if opts.task == "predcls":
        n_gt = np.array([len(g.labels) for g in gts], dtype=np.int64)
        bad = np.flatnonzero(pairs.max(axis=1, initial=0) >= n_gt[pair_img])
        if len(bad):  # an SGDet file evaluated as PredCls: raised by prepare, with its message
            prepare(*images[int(pair_img[bad[0]])], opts, source)
        n_obj, boxes, labels = n_gt, np.concatenate([g.boxes for g in gts]), np.concatenate([g.labels for g in gts])
        obj_scores = np.ones(len(labels), dtype=np.float32)
    else:
        n_obj = np.array([len(p.labels) for p in preds], dtype=np.int64)
        boxes, labels = np.concatenate([p.boxes for p in preds]), np.concatenate([p.labels for p in preds])
        obj_scores = np.concatenate([p.obj_scores for p in preds]).astype(np.float32)
    scores = np.concatenate([p.rel_scores for p in preds if len(p.pairs)])
    probs = softmax(scores) if opts.score_kind == "logits" else scores.astype(np.float32, copy=False)
    first_max = probs[:, 1:].argmax(axis=1)  # the first maximum: the lowest predicate id on ties
    best = probs[np.arange(len(probs)), first_max + 1]
    obj_at = segment_offsets(n_obj)[pair_img]
    s_s, s_o = obj_scores[pairs[:, 0] + obj_at], obj_scores[pairs[:, 1] + obj_at]
    gc_pairs = np.arange(len(pairs)) - segment_offsets(n_pairs)[pair_img]  # stored order
    gc_preds = 1 + first_max.astype(np.int64)
    if opts.order == "score":  # by the reference's GC triplet score within each image, stable
        order = np.lexsort((-(best * s_s * s_o).astype(np.float64), pair_img))
        gc_pairs, gc_preds = gc_pairs[order], gc_preds[order]
    return CandidateBlock(n_obj, n_pairs, boxes.astype(np.float32).reshape(-1, 4), labels.astype(np.int64),
                          obj_scores, pairs, probs, gc_pairs, gc_preds, (s_s * s_o) * best)
