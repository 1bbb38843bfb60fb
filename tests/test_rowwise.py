"""Row maxima and first maxima by ``reduceat`` (``arrays/rowwise.py``) against plain loops over each row."""

from __future__ import annotations

import numpy as np
import pytest

from sgg_eval.arrays.rowwise import first_max, row_max, row_reduce, row_reduce_and_whole, row_reduce_and_whole_in_blocks


def _loop_first_max(matrix: np.ndarray, first: int) -> tuple[list[int], list[float]]:
    """Per row: the lowest column index (from ``first``) whose value is the largest, and that value."""
    index, value = [], []
    for row in matrix.tolist():
        best = first
        for c in range(first, len(row)):
            if row[c] > row[best]:
                best = c
        index.append(best - first)
        value.append(row[best])
    return index, value


@pytest.mark.parametrize("first", [0, 1, 2])
@pytest.mark.parametrize("width", [3, 4, 51])
@pytest.mark.parametrize("rows", [0, 1, 2, 97])
def test_row_max_and_first_max_equal_loops(first, width, rows):
    """Coarse values (ties in most rows, also with the skipped columns), zeros and -0.0, and a contiguous as
    well as a sliced (non-contiguous) matrix."""
    rng = np.random.default_rng(first * 100 + width + rows)
    wide = rng.integers(0, 3, size=(rows, width + 1)).astype(np.float32) / 2
    wide[rng.random(wide.shape) < 0.2] = -0.0
    for matrix in (np.ascontiguousarray(wide[:, :width]), wide[:, :width]):
        want_index, want_value = _loop_first_max(matrix, first)
        np.testing.assert_array_equal(row_max(matrix, first), np.array(want_value, dtype=np.float32).reshape(-1))
        index, value = first_max(matrix, first)
        np.testing.assert_array_equal(index, np.array(want_index, dtype=np.int64).reshape(-1))
        np.testing.assert_array_equal(value, np.array(want_value, dtype=np.float32).reshape(-1))
        assert index.dtype == np.int64


def test_first_max_of_a_row_with_nan_is_numpys():
    """Scores are validated finite before ranking; should a NaN reach ``first_max`` anyway, the answer is
    numpy's argmax, not a misaligned index array."""
    matrix = np.array([[0.0, 0.2, 0.5], [0.1, np.nan, 0.3], [0.0, 0.4, 0.4]], dtype=np.float32)
    index, _ = first_max(matrix, 1)
    np.testing.assert_array_equal(index, matrix[:, 1:].argmax(axis=1))


@pytest.mark.parametrize("first", [0, 2])
def test_row_sums_and_minima_equal_numpys_along_rows(first):
    """``row_reduce`` of add (float64 accumulator) and minimum: the same floats as numpy's reductions along
    rows, which the misuse signals used before (a threshold on these sums must not move)."""
    rng = np.random.default_rng(first)
    matrix = rng.random((300, 51)).astype(np.float32)
    np.testing.assert_array_equal(
        row_reduce(np.add, matrix, first, dtype=np.float64), matrix[:, first:].sum(axis=1, dtype=np.float64)
    )
    np.testing.assert_array_equal(row_reduce(np.minimum, matrix, first), matrix[:, first:].min(axis=1))
    assert row_reduce(np.add, matrix[:0], first, dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize("first", [0, 1])
def test_row_max_of_float32_with_negatives_infinities_and_nan_is_maxs(first):
    """float32 maxima are taken over the bits; rows with a sign bit set (negative values, -0.0, negative NaN)
    are taken again as floats: every row as ``max`` gives it, NaN wherever a row holds one."""
    rng = np.random.default_rng(first)
    matrix = rng.normal(size=(400, 7)).astype(np.float32)
    matrix[rng.random(matrix.shape) < 0.05] = -0.0
    matrix[rng.random(matrix.shape) < 0.02] = np.inf
    matrix[rng.random(matrix.shape) < 0.02] = -np.inf
    matrix[rng.random(matrix.shape) < 0.02] = np.nan
    matrix[rng.random(matrix.shape) < 0.02] = -np.float32(np.nan)
    matrix[:50] = np.abs(matrix[:50])  # rows of non-negative values only (the fast rows)
    want = matrix[:, first:].max(axis=1)
    got = row_max(matrix, first)
    np.testing.assert_array_equal(got, want)  # NaN equals NaN here
    assert np.isnan(got).sum() == np.isnan(matrix[:, first:]).any(axis=1).sum()


@pytest.mark.parametrize("first", [1, 2])
@pytest.mark.parametrize("rows", [1, 2, 97])
def test_row_reduce_and_whole_equal_loops(first, rows):
    """Each row's maximum over columns ``first..`` and the whole matrix's, with the largest value planted in
    the first row's skipped columns (the one part the row segments leave out), in another row's, and inside."""
    rng = np.random.default_rng(first * 100 + rows)
    base = rng.integers(0, 1000, size=(rows, 7)).astype(np.uint32)
    for spot in [(0, 0), (0, first - 1), (rows - 1, 0), (rows - 1, 6), (rows // 2, first)]:
        matrix = base.copy()
        matrix[spot] = 5000
        maxima, whole = row_reduce_and_whole(np.maximum, matrix, first)
        np.testing.assert_array_equal(maxima, np.array([max(row[first:]) for row in matrix.tolist()], np.uint32))
        assert whole == max(max(row) for row in matrix.tolist())


@pytest.mark.parametrize("first", [1, 2])
@pytest.mark.parametrize("rows, block", [(1, 1), (2, 1), (97, 1), (97, 10), (97, 96), (97, 97), (97, 500), (100, 25)])
def test_row_reduce_and_whole_in_blocks_equal_loops_and_visit_every_block_in_order(first, rows, block):
    """The block-wise reduction equals the loop, with the largest value planted in each block's first row's
    skipped columns (between two blocks' outputs), in a block's last row, and inside; every block is visited
    once, in order."""
    rng = np.random.default_rng(first * 1000 + rows + block)
    base = rng.integers(0, 1000, size=(rows, 7)).astype(np.uint32)
    starts = list(range(0, rows, block))
    spots = [(s, c) for s in starts for c in range(first)] + [(min(s + block, rows) - 1, 6) for s in starts]
    for spot in spots + [(rows // 2, first)]:
        matrix = base.copy()
        matrix[spot] = 5000
        seen = []
        maxima, whole = row_reduce_and_whole_in_blocks(np.maximum, matrix, first, block, seen.append)
        np.testing.assert_array_equal(maxima, np.array([max(row[first:]) for row in matrix.tolist()], np.uint32))
        assert whole == max(max(row) for row in matrix.tolist()), spot
        assert [len(b) for b in seen] == [min(block, rows - s) for s in starts]
        np.testing.assert_array_equal(np.concatenate(seen), matrix)
