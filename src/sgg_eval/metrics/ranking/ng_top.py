"""NG ranks of a block of images: each image's global top ``ng_limit`` of (pair, predicate) entries by
``s_s·s_o·p_c``, selected for every image at once (``block_ranks``' NG family)."""

from __future__ import annotations

import numpy as np

from sgg_eval.arrays.rowwise import row_max
from sgg_eval.arrays.segments import position_in_runs, segment_offsets
from sgg_eval.core import tuning
from sgg_eval.metrics.ranking.candidates import ImageScores
from sgg_eval.metrics.ranking.families import NO_MATCH, Candidates, first_match, pair_products


def ng_ranks(block, ng_limit, per_pair, pair_img, pair_off, cr, cp, gp, num_rows) -> np.ndarray:
    """NG: the position of the first matching entry of each image's global top ``ng_limit``."""
    width = block.probs.shape[1]
    if isinstance(block.probs, ImageScores):  # large images: only the pairs that can reach a top are gathered
        keys, positions = _ng_top_apart(block, per_pair, pair_img, pair_off, ng_limit)
    else:
        keys, positions = _ng_top_block(
            per_pair, block.probs, block.pair_best, block.predicted.all(), pair_img, block.n_pairs, pair_off, ng_limit
        )
    if len(keys) == 0:
        return np.full(num_rows, NO_MATCH, dtype=np.int64)
    wanted = cp * width + gp[cr]
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    found = keys[at] == wanted
    return first_match(num_rows, cr[found], positions[at[found]])


def _ng_top_apart(block, per_pair, pair_img, pair_off, n) -> tuple[np.ndarray, np.ndarray]:
    """:func:`ranks.ng_top` of each image whose scores are kept apart (:class:`ImageScores`), as
    ``_ng_top_block`` returns them. As in ``ng_top``, only an image's pairs whose best reaches the ``n``-th
    largest of its pair bests (all pairs of an image of ``n`` or fewer) can hold an entry of its top, and
    only entries reaching it: those rows alone are gathered, in block order, their entries above the bound
    kept (where many tie near it, only each image's ``n`` largest: one partition for all images) and ranked
    for every image at once."""
    pair_best, n_images = block.pair_best, len(block.n_pairs)
    bound = np.full(n_images, -np.inf, dtype=np.float32)
    rows, matrices = [np.zeros(0, np.int64)], [np.zeros((0, block.probs.shape[1]), np.float32)]
    for i, (probs, lo) in enumerate(zip(block.probs.probs, pair_off.tolist())):
        if len(probs) > n:
            bound[i] = nth_largest(pair_best[lo : lo + len(probs)], n)
            mine = np.flatnonzero(pair_best[lo : lo + len(probs)] >= bound[i])
        else:
            mine = np.arange(len(probs))
        rows.append(lo + mine)
        matrices.append(probs[mine])
    rows = np.concatenate(rows)
    row_img = pair_img[rows]
    entries = per_pair[rows][:, None] * np.concatenate(matrices)[:, 1:]  # row-major: each image's flat order
    flat = np.flatnonzero(entries >= bound[row_img][:, None])
    value, image = entries.ravel()[flat], row_img[flat // entries.shape[1]]
    counts = np.bincount(image, minlength=n_images)
    if counts.max(initial=0) > tuning.NG_LOOSE * n:
        local = np.arange(len(flat)) - segment_offsets(counts)[image]
        kept = value >= _image_bound([value], image, local, n_images, int(counts.max()), n)[image]
        flat, value, image = flat[kept], value[kept], image[kept]
    keys, positions = _top_entries(flat, value, image, entries.shape[1], n)
    width = entries.shape[1] + 1
    return rows[keys // width] * width + keys % width, positions  # rows ascend: the keys stay sorted


def _ng_top_block(per_pair, probs, pair_best, gc_pred, pair_img, n_pairs, pair_off, n) -> tuple[np.ndarray, np.ndarray]:
    """:func:`ranks.ng_top` of every image of the block at once, as (block pair · width + predicate, position)
    per entry of each image's top ``n``, in key order: entries by descending ``s_s·s_o·p_c`` (float32, as
    ``pair_scores``), ties by the lower flat index (pair, then predicate).

    An image's ``n``-th largest pair best (``pair_best``: its pairs' best entries, distinct entries) bounds
    its ``n``-th largest entry from below, so only entries reaching it are sorted (:func:`_top_entries`): the
    bound of every image comes from one partition of a ``[images, most pairs]`` matrix padded with -inf (an
    image of fewer pairs keeps all)."""
    scores = per_pair[:, None] * probs[:, 1:]  # [pairs, predicates 1..C], row-major = the flat tie order
    pairs = np.arange(len(pair_img))
    local, most = pairs - pair_off[pair_img], int(n_pairs.max(initial=0))
    mask = scores >= _image_bound([pair_best], pair_img, local, len(n_pairs), most, n)[pair_img][:, None]
    if np.count_nonzero(mask) > tuning.NG_LOOSE * n * len(n_pairs) and scores.shape[1] > 1:
        # a loose bound (object scores spread the pair bests): each pair's two best entries are distinct
        # entries too, so the n-th largest of those bounds each image's top more tightly (~2x its size). The
        # second best is the row maximum with the best (at the predicted predicate, gc_pred) held out: set to
        # 0, which no score is below (scores are >= 0), and -inf would send every row to row_max's float path.
        top = gc_pred - 1
        held = scores[pairs, top]
        scores[pairs, top] = 0.0
        second = row_max(scores)
        scores[pairs, top] = held
        mask = scores >= _image_bound([held, second], pair_img, local, len(n_pairs), most, n)[pair_img][:, None]
    flat = np.flatnonzero(mask)  # in flat order within each image
    return _top_entries(flat, scores.ravel()[flat], pair_img[flat // scores.shape[1]], scores.shape[1], n)


def _top_entries(flat, value, image, n_pred: int, n) -> tuple[np.ndarray, np.ndarray]:
    """Each image's top ``n`` of candidate entries (``flat`` indices into a ``[pairs, n_pred]`` score matrix,
    in flat order, with their values and images; all that can reach each image's top), as (pair · width +
    predicate, position in the top) in key order. The sort key is the image, then the score's bits inverted
    (a float32 >= 0 orders as its bits; scores are >= 0, as readers refuse negative object scores), sorted
    stably so that ties keep the flat order."""
    value = value + np.float32(0.0)  # -0.0 -> +0.0, so that equal scores have equal bits
    key = (image.astype(np.uint64) << np.uint64(32)) | (np.uint64(0xFFFFFFFF) - value.view(np.uint32))
    order = np.argsort(key, kind="stable")
    position = position_in_runs(image[order])
    # the top entries back in flat order (which is key order), by a mask instead of a sort
    at = np.empty(len(order), dtype=np.int64)
    at[order] = position
    top = at < n
    keep = flat[top]
    return keep // n_pred * (n_pred + 1) + keep % n_pred + 1, at[top]


def _image_bound(columns: list[np.ndarray], pair_img, local, n_images: int, most: int, n: int) -> np.ndarray:
    """Per image, the ``n``-th largest of its pairs' values in ``columns`` (each ``[pairs]``: distinct entries
    of the image, so a lower bound of its ``n``-th largest entry); -inf for an image with fewer values. One
    partition of an ``[images, len(columns) · most pairs]`` matrix padded with -inf."""
    padded = np.full((n_images, len(columns) * most), -np.inf, dtype=np.float32)
    for k, values in enumerate(columns):
        padded[pair_img, k * most + local] = values
    if padded.shape[1] <= n:
        return np.full(n_images, -np.inf, dtype=np.float32)
    return _nth_largest(padded, n)


def _nth_largest(padded: np.ndarray, n: int) -> np.ndarray:
    """Per row of a matrix padded with -inf, its ``n``-th largest value (-inf for a row of fewer values). As the
    ``n``-th smallest of the negated rows: partitioning near the end of rows full of equal padding is ~10x
    slower in numpy's introselect."""
    return -np.partition(-padded, n - 1, axis=1)[:, n - 1]


def pair_scores(
    cand: Candidates, rows: np.ndarray | slice = slice(None), cols: np.ndarray | slice = slice(1, None)
) -> np.ndarray:
    """``(s_s * s_o) * p_c`` (float32, the reference's order) for pairs ``rows`` and score columns ``cols``
    (default: every pair, predicates 1..C)."""
    return pair_products(cand.obj_scores, cand.pairs[rows])[:, None] * cand.probs[rows][:, cols]


def nth_largest(values: np.ndarray, n: int):
    """The ``n``-th largest of ``values`` (more than ``n``; NaN counts as the largest, as in ``np.partition``)."""
    return np.partition(values, len(values) - n)[len(values) - n]
