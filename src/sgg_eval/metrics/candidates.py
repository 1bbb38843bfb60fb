"""One image's predictions turned into ranked candidates: the task's GT substitution, scores as probabilities
and the graph-constrained (GC) triplet list in the reference's order."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.errors import InputError
from sgg_eval.metrics.ranks import Candidates

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




def prepare_block(images: list, opts: EvalOptions, source: str) -> tuple[list[Candidates], np.ndarray | None]:
    """:func:`prepare` of every (GT, prediction) of ``images`` at once (one argmax and one gather over the
    concatenated scores instead of a dozen small operations per image), and the concatenation of the
    candidates' float32 ``probs`` for ``block_ranks`` (None for ranked-only input)."""
    if len(images) == 1 or opts.score_kind == "ranked" or not any(len(p.pairs) for _, p in images):
        cands = [prepare(gt, pred, opts, source) for gt, pred in images]
        if opts.score_kind == "ranked":
            return cands, None
        return cands, cands[0].probs if len(cands) == 1 else np.concatenate([c.probs for c in cands
                                                                               if len(c.pairs)] or [cands[0].probs])
    if opts.task == "predcls":
        for gt, pred in images:  # an SGDet file evaluated as PredCls: the first image it shows in
            if len(pred.pairs) and pred.pairs.max() >= len(gt.labels):
                prepare(gt, pred, opts, source)  # raises, with the per-image message
    n_pairs = np.array([len(p.pairs) for _, p in images], dtype=np.int64)
    scores = np.concatenate([p.rel_scores for _, p in images if len(p.pairs)])
    probs = softmax(scores) if opts.score_kind == "logits" else scores.astype(np.float32, copy=False)
    first_max = probs[:, 1:].argmax(axis=1)  # the first maximum: the lowest predicate id on ties
    best = probs[np.arange(len(probs)), first_max + 1]
    at = np.cumsum(n_pairs)[:-1]
    cands = []
    for (gt, pred), p, gc_preds, bst in zip(images, np.split(probs, at), np.split(1 + first_max.astype(np.int64), at),
                                            np.split(best, at)):
        if opts.task == "predcls":
            boxes, labels, obj_scores = gt.boxes, gt.labels, np.ones(len(gt.labels), dtype=np.float32)
        else:
            boxes, labels, obj_scores = pred.boxes, pred.labels, pred.obj_scores.astype(np.float32)
        if not len(pred.pairs):
            empty = np.zeros(0, dtype=np.int64)
            cands.append(Candidates(boxes, labels, obj_scores, pred.pairs, p, empty, empty, np.zeros(0, np.float32)))
            continue
        s_s, s_o = obj_scores[pred.pairs[:, 0]], obj_scores[pred.pairs[:, 1]]
        order = np.arange(len(p))
        if opts.order == "score":  # the reference's GC triplet score, as in prepare
            order = np.argsort(-(bst * s_s * s_o).astype(np.float64), kind="stable")
            gc_preds = gc_preds[order]
        cands.append(Candidates(boxes, labels, obj_scores, pred.pairs, p, order, gc_preds, (s_s * s_o) * bst))
    return cands, probs
