"""Segments of concatenated arrays: the bookkeeping shared by everything that works on many images (or
groups) at once (``block_ranks``, ``reduce.Accumulator.add_many``, ``box_ap``)."""

from __future__ import annotations

import numpy as np


def segment_offsets(sizes: np.ndarray) -> np.ndarray:
    """Where each segment of ``sizes`` starts in the concatenation (``[0, s0, s0 + s1, ...]``, one per segment;
    none for no segment)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.cumsum(sizes) - sizes


def expand_segments(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments of ``sizes``: each element's segment and its index within the segment."""
    seg = np.repeat(np.arange(len(sizes)), sizes)
    return seg, np.arange(len(seg)) - np.repeat(segment_offsets(sizes), sizes)


def position_in_runs(values: np.ndarray) -> np.ndarray:
    """For an array whose equal values are adjacent (a sorted one), each element's position within its run of
    equal values: ``arange(n) - searchsorted(values, values, 'left')``, in linear time (several times faster
    than the binary searches on a block's ~30,000 keys)."""
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(values[1:], values[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    return np.arange(n) - np.repeat(starts, np.diff(starts, append=n))


def segment_min(size: int, segment: np.ndarray, values: np.ndarray, empty: int) -> np.ndarray:
    """Per segment ``0..size-1``, the minimum of its int ``values`` (``empty`` where it has none)."""
    out = np.full(size, empty, dtype=np.int64)
    np.minimum.at(out, segment, values)
    return out


_DENSE_KEYS = 1 << 22  # key spaces up to this are marked in a scratch array; larger ones are sorted


def first_positions(keys: np.ndarray, table: np.ndarray, positions: np.ndarray | None = None) -> np.ndarray:
    """``table`` (indexed by key value) with each of ``keys``' values set to the position of its first
    occurrence (``positions[i]`` for ``keys[i]``; default ``i``): one reversed scatter, in linear time (the last
    write wins: the earliest position). Entries of values not in ``keys`` keep what ``table`` held."""
    if positions is None:
        positions = np.arange(len(keys), dtype=table.dtype)
    table[keys[::-1]] = positions[::-1]
    return table


def first_seen(keys: np.ndarray, space: int) -> np.ndarray:
    """Whether each of ``keys`` (integers in ``[0, space)``) is its value's first occurrence. For a small key
    space a table of first positions marks them (:func:`first_positions`); np.unique would sort."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=bool)
    if space <= _DENSE_KEYS:
        first = first_positions(keys, np.empty(space, dtype=np.int32))
        return first[keys] == np.arange(n, dtype=np.int32)
    seen = np.zeros(n, dtype=bool)
    seen[np.unique(keys, return_index=True)[1]] = True
    return seen
