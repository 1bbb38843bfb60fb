"""Whether a whole batch of images passes :meth:`GTImage.validate` and :meth:`PredImage.validate`, checked at
once: a few array operations over the batch's concatenated fields instead of ~20 small ones per image (issue
11: per image, validation cost a third of a PredCls evaluation).

This only answers yes or no. A reader validates a batch that fails image by image, in order, so the error
names the first bad image and field exactly as before; the test suite checks that both agree on every edge
case the per-image checks know (shapes, dtypes, non-finite values, ranges, box corners, probabilities).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sgg_eval.arrays.rowwise import row_reduce_and_whole, row_reduce_and_whole_in_blocks
from sgg_eval.core import tuning
from sgg_eval.data.types import PROBABILITY_SLACK, GTImage, PredImage, Vocabulary


def batch_is_valid(
    gts: list[GTImage],
    preds: list[PredImage],
    vocab: Vocabulary,
    *,
    probabilities: bool,
    keep_row_maxima: bool = False,
    fold: Fold | None = None,
) -> bool:
    """True when every image of the batch would pass its own ``validate`` (``probabilities`` as there).

    ``keep_row_maxima`` (with ``probabilities``): large float32 score matrices (``tuning.MAXIMA_ROWS`` rows or more:
    SGDet's) are checked by the pass that takes each row's maximum over predicates 1.., which is kept on the
    image (:meth:`PredImage.keep_row_maxima`) for ranking; on a batch that passes, that is. That pass goes
    through each matrix a block of rows at a time (``tuning.BLOCK_BYTES``) when ``fold("pred_rel_scores", i)``
    gives a sink for ``preds[i]``'s matrix, and hands the sink each block, in order, right after it was checked,
    while its bytes are still in the CPU's cache. The reader folds its CRC-32 over them: a second pass from
    memory cost ~10% of an SGDet evaluation. Large pair arrays (SGDet's ~100 kB), checked one by one, are handed
    over whole the same way: ``fold("rel_pair_idxs", i)(pairs)``. (Small arrays, PredCls's, are checked in one
    concatenation and read again by the reader: per array, Python's overhead would outweigh what the cache
    saves.)"""
    if not gts:
        return True
    width = vocab.num_predicates + 1
    if not all(_layout_ok(gt, pred, width) for gt, pred in zip(gts, preds)):
        return False
    if not _objects_and_relations_ok(gts, preds, vocab):
        return False
    return _pairs_and_scores_ok(preds, probabilities, keep_row_maxima, fold)


def _pairs_and_scores_ok(preds: list[PredImage], probabilities: bool, keep_row_maxima: bool, fold: Fold | None):
    """The predicted pairs' indices and the score matrices (``batch_is_valid``'s ``keep_row_maxima`` and
    ``fold``)."""
    with_pairs = [p for p in preds if len(p.pairs)]
    if not _pairs_ok(preds, fold):
        return False
    if keep_row_maxima and probabilities:
        large = [(i, p) for i, p in enumerate(preds) if len(p.pairs) >= tuning.MAXIMA_ROWS]
        if not all(_probabilities_keeping_maxima(p, i, fold) for i, p in large):
            return False
        with_pairs = [p for p in with_pairs if len(p.pairs) < tuning.MAXIMA_ROWS]
    if with_pairs and sum(p.rel_scores.size for p in with_pairs) <= tuning.CONCATENATED:
        return _scores_ok([np.concatenate([p.rel_scores.ravel() for p in with_pairs])], probabilities)
    return _scores_ok([p.rel_scores for p in with_pairs], probabilities)


def _pairs_ok(preds: list[PredImage], fold: Fold | None) -> bool:
    """Every pair indexes its image's boxes; ``fold("rel_pair_idxs", i)``'s sink gets large pair arrays."""
    at = [i for i, p in enumerate(preds) if len(p.pairs)]

    def pairs_seen(k: int, pairs: np.ndarray) -> None:  # asked for only when the pairs are checked one by one
        sink = fold("rel_pair_idxs", at[k])
        if sink is not None:
            sink(pairs)

    seen = None if fold is None else pairs_seen
    return _indices_ok([preds[i].pairs for i in at], [len(preds[i].boxes) for i in at], seen)


# The dtype kinds of (GT boxes, labels, rels; predicted boxes, labels, object scores, pairs) that pass: floats
# for boxes and scores, signed or unsigned integers for labels and indices.
_KINDS = {f"f{a}{b}f{c}f{d}" for a in "iu" for b in "iu" for c in "iu" for d in "iu"}


def _layout_ok(gt: GTImage, pred: PredImage, width: int) -> bool:
    """Shapes and dtypes, as the images' ``validate``: attribute reads and two tuple comparisons (per image, in
    the loop over a batch)."""
    n, q, p = len(gt.boxes), len(pred.boxes), len(pred.pairs)
    shapes = (gt.boxes.shape, gt.labels.shape, gt.rels.shape[1:], pred.boxes.shape, pred.labels.shape)
    if shapes != ((n, 4), (n,), (3,), (q, 4), (q,)) or (pred.obj_scores.shape, pred.pairs.shape[1:]) != ((q,), (2,)):
        return False
    arrays = (gt.boxes, gt.labels, gt.rels, pred.boxes, pred.labels, pred.obj_scores, pred.pairs)
    if "".join(a.dtype.kind for a in arrays) not in _KINDS:
        return False
    scores = pred.rel_scores
    if p == 0:
        return scores.ndim == 2 and len(scores) == 0
    return scores.shape == (p, width) and scores.dtype.kind == "f"


def _objects_and_relations_ok(gts: list[GTImage], preds: list[PredImage], vocab: Vocabulary) -> bool:
    """Boxes, labels, object scores, GT relation indices and predicates over the batch's concatenations."""
    if not _boxes_ok(np.concatenate([g.boxes for g in gts] + [p.boxes for p in preds])):
        return False
    if not _in_range(np.concatenate([g.labels for g in gts] + [p.labels for p in preds]), 1, vocab.num_objects):
        return False
    obj_scores = np.concatenate([p.obj_scores for p in preds])
    if not _finite(obj_scores) or (obj_scores.size and obj_scores.min() < 0):
        return False
    if not _indices_ok([g.rels[:, :2] for g in gts], [len(g.labels) for g in gts]):
        return False
    return _in_range(np.concatenate([g.rels[:, 2] for g in gts]), 1, vocab.num_predicates)


def _in_range(values: np.ndarray, low: int, high: int) -> bool:
    return not len(values) or bool(values.min() >= low and values.max() <= high)


# ``fold(field, position)``: where the blocks of ``preds[position]``'s ``field`` go as they are checked, in order
# (``batch_is_valid``), or None when nobody wants them (its bytes are then read in one pass, not in blocks)
Sink = Callable[[np.ndarray], None]
Fold = Callable[[str, int], Sink | None]


def _probabilities_keeping_maxima(pred: PredImage, position: int, fold: Fold | None) -> bool:
    """``pred``'s scores are probabilities (as ``_scores_ok``), checked over their bits by the pass that takes
    each row's maximum over predicates 1.. (``rowwise.row_reduce_and_whole``), kept on ``pred``. Every value is
    in [+0, 1 + slack] exactly when the largest bits are at most those of 1 + slack; the row maxima are then
    the floats' own. Anything else (float64, -0.0) takes ``_scores_ok``'s passes and keeps nothing.
    ``fold("pred_rel_scores", position)``'s sink sees every block of rows in order (``batch_is_valid``)."""
    scores = pred.rel_scores
    if scores.dtype != np.float32 or not scores.flags.c_contiguous or scores.shape[1] < 2:
        return _scores_ok([scores], True)
    bits = scores.view(np.uint32)
    sink = None if fold is None else fold("pred_rel_scores", position)
    if sink is None:  # one reduction over the whole matrix: no per-block overhead
        maxima, largest = row_reduce_and_whole(np.maximum, bits, 1)
    else:
        rows = max(1, tuning.BLOCK_BYTES // scores.strides[0])
        maxima, largest = row_reduce_and_whole_in_blocks(np.maximum, bits, 1, rows, sink)
    maxima = np.ascontiguousarray(maxima)  # every other item of the reduction's output
    if largest > _PROBABILITY_BITS:
        return _scores_ok([scores], True)
    pred.keep_row_maxima(maxima.view(np.float32))
    return True


def _finite(values: np.ndarray) -> bool:
    """No NaN or infinity: the minimum and the maximum both propagate NaN."""
    return not values.size or bool(np.isfinite(values.min()) and np.isfinite(values.max()))


def _boxes_ok(boxes: np.ndarray) -> bool:
    """Finite, with x2 >= x1 and y2 >= y1 (a NaN fails both tests)."""
    return _finite(boxes) and bool((boxes[:, 2:] >= boxes[:, :2]).all())


def _indices_ok(
    indices: list[np.ndarray], counts: list[int], seen: Callable[[int, np.ndarray], None] | None = None
) -> bool:
    """Every index of ``indices[i]`` in ``[0, counts[i] - 1]``: over the concatenation, or array by array when
    they are large (an SGDet image's 6,000 pairs: a concatenation would only copy them), each handed to
    ``seen(i, indices[i])`` once checked (while it is in the cache)."""
    if not indices:
        return True
    if sum(a.size for a in indices) > tuning.CONCATENATED // 8:
        for k, (a, n) in enumerate(zip(indices, counts)):
            if a.size and int(_unsigned(a).max()) >= n:
                return False
            if seen is not None:
                seen(k, a)
        return True
    flat = np.concatenate(indices)
    if not flat.size:
        return True
    limit = np.repeat(np.asarray(counts, dtype=np.uint64), [len(a) for a in indices])
    return bool((_unsigned(flat) < limit[:, None]).all())


def _unsigned(a: np.ndarray) -> np.ndarray:
    """Integer indices viewed as unsigned: a negative one becomes larger than any count, so one comparison
    with the count checks both ends (one pass instead of a minimum and a maximum)."""
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind == "i" else a


def _largest_probability_bits() -> np.uint32:
    """The bits of the largest float32 that is at most ``1 + PROBABILITY_SLACK`` (compared as float64)."""
    top = np.float32(1.0 + PROBABILITY_SLACK)
    if float(top) > 1.0 + PROBABILITY_SLACK:
        top = np.nextafter(top, np.float32(0))
    return top.view(np.uint32)


_PROBABILITY_BITS = _largest_probability_bits()


def _scores_ok(arrays: list[np.ndarray], probabilities: bool) -> bool:
    """Finite (and in [0, 1 + slack] for probabilities).

    float32 probabilities take one pass over their bits: a float32 without its sign bit orders as its bits,
    so every value is in [+0, 1 + slack] exactly when the largest bits are at most those of 1 + slack
    (NaN, infinities and negative values all have larger bits). Anything else (-0.0 too, which is valid)
    takes the two float passes."""
    for scores in arrays:
        if not scores.size:
            continue
        if probabilities and scores.dtype == np.float32 and scores.view(np.uint32).max() <= _PROBABILITY_BITS:
            continue
        lo, hi = float(scores.min()), float(scores.max())
        if not (np.isfinite(lo) and np.isfinite(hi)) or (probabilities and (lo < 0.0 or hi > 1.0 + PROBABILITY_SLACK)):
            return False
    return True
