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


