"""Segments of concatenated arrays: the bookkeeping shared by everything that works on many images (or
groups) at once (``block_ranks``, ``reduce.Accumulator.add_many``, ``box_ap``)."""

from __future__ import annotations

import numpy as np


def segment_offsets(sizes: np.ndarray) -> np.ndarray:
    """Where each segment of ``sizes`` starts in the concatenation (``[0, s0, s0 + s1, ...]``, one per segment)."""
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


def expand_segments(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments of ``sizes``: each element's segment and its index within the segment."""
    seg = np.repeat(np.arange(len(sizes)), sizes)
    return seg, np.arange(len(seg)) - segment_offsets(sizes)[seg]


def segment_min(size: int, segment: np.ndarray, values: np.ndarray, empty: int) -> np.ndarray:
    """Per segment ``0..size-1``, the minimum of its int ``values`` (``empty`` where it has none)."""
    out = np.full(size, empty, dtype=np.int64)
    np.minimum.at(out, segment, values)
    return out
