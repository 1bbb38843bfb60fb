"""The segment bookkeeping of batched evaluation (``arrays/segments.py``) against plain loops."""

from __future__ import annotations

import numpy as np
import pytest

from sgg_eval.arrays.segments import expand_segments, position_in_runs, segment_min, segment_offsets


@pytest.mark.parametrize("seed", range(5))
def test_offsets_and_expansion_equal_loops(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 4, size=int(rng.integers(0, 12)))
    starts, total = [], 0
    seg_want, within_want = [], []
    for s, size in enumerate(sizes.tolist()):
        starts.append(total)
        seg_want += [s] * size
        within_want += list(range(size))
        total += size
    np.testing.assert_array_equal(segment_offsets(sizes), np.array(starts, dtype=np.int64))
    seg, within = expand_segments(sizes)
    np.testing.assert_array_equal(seg, seg_want)
    np.testing.assert_array_equal(within, within_want)


def test_no_segment_has_no_offset():
    """One offset per segment: none for none (a single 0 here once misaligned every array built from it)."""
    assert segment_offsets(np.zeros(0, dtype=np.int64)).tolist() == []
    seg, within = expand_segments(np.zeros(0, dtype=np.int64))
    assert len(seg) == len(within) == 0


@pytest.mark.parametrize("seed", range(5))
def test_position_in_runs_equals_a_loop(seed):
    """Runs of equal values (any length, one element, the whole array), also of negative and float values."""
    rng = np.random.default_rng(seed)
    for values in (
        np.sort(rng.integers(-3, 4, size=int(rng.integers(0, 30)))),
        np.sort(rng.integers(0, 2, size=7)).astype(np.float64),
        np.zeros(5),
        np.arange(4),
        np.zeros(0),
    ):
        want = []
        for i, v in enumerate(values.tolist()):
            want.append(want[-1] + 1 if i and values[i - 1] == v else 0)
        np.testing.assert_array_equal(position_in_runs(values), np.array(want, dtype=np.int64))


def test_segment_min_equals_a_loop():
    rng = np.random.default_rng(3)
    segment, values = rng.integers(0, 6, size=40), rng.integers(0, 100, size=40)
    want = [min([v for s, v in zip(segment, values) if s == k], default=1000) for k in range(8)]
    np.testing.assert_array_equal(segment_min(8, segment, values, 1000), want)  # empty: above every value


def test_first_seen_marks_each_values_earliest_position_in_both_key_spaces():
    from sgg_eval.arrays import segments
    from sgg_eval.arrays.segments import first_seen

    rng = np.random.default_rng(5)
    for space in (1, 7, 1000, segments._DENSE_KEYS + 1):  # the scatter, and the sort past the dense bound
        for n in (0, 1, 50, 400):
            keys = rng.integers(0, space, n)
            want = np.zeros(n, dtype=bool)
            want[[list(keys).index(v) for v in set(keys.tolist())]] = True
            assert first_seen(keys, space).tolist() == want.tolist()


def test_first_positions_write_each_values_earliest_position():
    from sgg_eval.arrays.segments import first_positions

    rng = np.random.default_rng(6)
    for space, n in ((1, 5), (7, 0), (7, 30), (1000, 400)):
        keys = rng.integers(0, space, n)
        positions = rng.permutation(10 * n)[:n]  # e.g. row numbers of the kept rows
        got = first_positions(keys, np.full(space, -1), positions)
        want = [positions[list(keys).index(v)] if v in keys else -1 for v in range(space)]
        assert got.tolist() == want
        assert first_positions(keys, np.full(space, -1)).tolist() == [
            list(keys).index(v) if v in keys else -1 for v in range(space)
        ]
