"""Lookups on the GT rows of a block of images, concatenated in ranking order (image after image, each image's
rows in order): their (subject label, object label, predicate), zero-shot flags and training counts by triplet
key, for ``blocks.rank_block`` (and the open-vocabulary subsets' flags, ``metrics.openvocab.row_subsets``)."""

from __future__ import annotations

import numpy as np

from sgg_eval.arrays.segments import segment_offsets
from sgg_eval.data.types import Vocabulary, triplet_key


def row_lookups(
    kept: list,
    triplets: tuple[np.ndarray, ...] | None,
    sizes: tuple[int, int],
    zs_table: np.ndarray | None,
    flat_counts: np.ndarray | None,
) -> tuple[np.ndarray | None, np.ndarray | None, int]:
    """The GT rows' zero-shot flags and training counts over the block's images, concatenated (``None``
    without the set or the counts), looked up by triplet key in tables from ``triplets`` (:func:`row_triplets`
    of ``kept``); and how many images have a zero-shot row."""
    if not kept or (zs_table is None and flat_counts is None):
        return None, None, 0
    n_rels = np.array([len(gt.rels) for gt, _ in kept], dtype=np.int64)  # > 0: kept images have relations
    keys = triplet_key(*triplets, *sizes)
    tc = flat_counts[keys] if flat_counts is not None else None
    if zs_table is None:
        return None, tc, 0
    zs = zs_table[keys]
    return zs, tc, int(np.count_nonzero(np.logical_or.reduceat(zs, segment_offsets(n_rels))))


def row_triplets(kept: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The subject labels, object labels and predicates of the GT rows of ``kept``, concatenated."""
    n_gt = np.array([len(gt.labels) for gt, _ in kept], dtype=np.int64)
    n_rels = np.array([len(gt.rels) for gt, _ in kept], dtype=np.int64)
    rels = np.concatenate([gt.rels for gt, _ in kept])
    labels = np.concatenate([gt.labels for gt, _ in kept])
    at = np.repeat(segment_offsets(n_gt), n_rels)
    return labels[rels[:, 0] + at], labels[rels[:, 1] + at], rels[:, 2]


def zeroshot_table(zs_keys: np.ndarray, vocab: Vocabulary) -> np.ndarray:
    """A flag per triplet key (``[C_obj + 1, C_obj + 1, C_pred + 1]`` flattened, ~1 MB for VG150): True for the
    zero-shot triplets ``zs_keys``. A row's flag is then one lookup (``np.isin`` sorted the set every call)."""
    table = np.zeros((vocab.num_objects + 1) ** 2 * (vocab.num_predicates + 1), dtype=bool)
    table[zs_keys] = True
    return table
