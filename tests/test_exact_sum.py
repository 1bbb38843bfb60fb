"""``arrays.exact_sum.ExactSum`` against the obviously correct sum: every value as a ``Fraction``, added
exactly and rounded once (``float(Fraction)`` rounds to nearest, ties to even; ``math.fsum`` agrees). Random
magnitudes and signs, cancellation, subnormals, zeros, cells of an array, any split merged in any order,
the carry and chunk paths forced small, and what it refuses."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from sgg_eval.arrays import exact_sum
from sgg_eval.arrays.exact_sum import ExactSum


def _exact(values) -> float:
    return float(sum((Fraction(float(v)) for v in values), Fraction(0)))


def _values(rng, kind: int, n: int) -> np.ndarray:
    if kind == 0:  # the engine's: ratios of small counts
        return rng.integers(0, 6, n) / rng.integers(1, 40, n)
    if kind == 1:  # any magnitude, both signs
        return rng.standard_normal(n) * np.exp2(rng.integers(-80, 80, n).astype(float))
    if kind == 2:  # huge values that cancel around tiny ones, subnormals among them
        big = rng.random(n) * 1e300
        return rng.permutation(np.concatenate([big, -big, rng.random(n) * 1e-300, [5e-324, -5e-324, 1.0, 0.0]]))
    return np.full(n, np.nextafter(1.0, 2.0)) * rng.choice([-1.0, 1.0], n)  # every mantissa's last bit set


@pytest.mark.parametrize("kind", range(4))
def test_one_sum_is_the_exact_sum_rounded_once(kind):
    rng = np.random.default_rng(kind)
    for _ in range(60):
        v = _values(rng, kind, int(rng.integers(1, 300)))
        s = ExactSum()
        s.add(v)
        assert s.value() == _exact(v) == math.fsum(v)


@pytest.mark.parametrize("kind", range(4))
def test_any_split_merged_in_any_order_gives_the_same_bits(kind):
    rng = np.random.default_rng(10 + kind)
    v = _values(rng, kind, 400)
    want = _exact(v)
    for _ in range(20):
        cuts = np.sort(rng.choice(np.arange(1, len(v)), size=int(rng.integers(1, 8)), replace=False))
        parts = []
        for piece in np.split(rng.permutation(v), cuts):
            part = ExactSum()
            for chunk in np.array_split(piece, int(rng.integers(1, 4))):  # adds of their own, too
                part.add(chunk)
            parts.append(part)
        total = parts.pop(int(rng.integers(len(parts))))
        for i in rng.permutation(len(parts)):
            total.merge(parts[i])
        assert total.value() == want


def test_cells_of_an_array_and_add_at():
    rng = np.random.default_rng(3)
    v = rng.random((50, 4, 3)) * (rng.random((50, 4, 3)) < 0.4) - 0.25 * (rng.random((50, 4, 3)) < 0.2)
    s = ExactSum((4, 3))
    s.add(v)
    want = np.array([[_exact(v[:, i, j]) for j in range(3)] for i in range(4)])
    assert s.value().shape == (4, 3) and np.array_equal(s.value(), want)
    t = ExactSum((4, 3))
    cells = np.tile(np.arange(12), 50)
    t.add_at(cells, v.reshape(-1))
    assert np.array_equal(t.value(), want)
    assert np.array_equal(ExactSum((2,)).value(), [0.0, 0.0]) and ExactSum().value() == 0.0


def test_reading_changes_nothing_and_more_can_be_added():
    rng = np.random.default_rng(4)
    a, b = rng.random(100), rng.random(100) * 1e-9
    s = ExactSum()
    s.add(a)
    first = s.value()
    assert s.value() == first == _exact(a)
    s.add(b)
    assert s.value() == _exact(np.concatenate([a, b]))


def test_the_carry_and_chunk_paths(monkeypatch):
    """With the limits forced small, carries are pushed up and values are split into chunks on every add: the
    sum is unchanged. The largest mantissa, many times over, reaches every limb's top digits."""
    monkeypatch.setattr(exact_sum, "_MAX_DIGITS", 64)
    monkeypatch.setattr(exact_sum, "_CHUNK", 7)
    rng = np.random.default_rng(5)
    top = np.nextafter(2.0, 0.0)  # 2 - 2^-52: every mantissa bit set
    for v in (np.full(3000, top), np.full(3000, -top), _values(rng, 1, 3000), _values(rng, 2, 500)):
        s, merged = ExactSum(), ExactSum()
        s.add(v)
        for piece in np.array_split(v, 5):
            part = ExactSum()
            part.add(piece)
            merged.merge(part)
        assert s.value() == _exact(v) == merged.value()


def test_a_sum_exactly_between_two_doubles_rounds_to_the_even_one():
    half_ulp = 2.0**-53  # half of 1.0's ulp
    for values, want in (([1.0, half_ulp], 1.0), ([1.0 + 2 * half_ulp, half_ulp], 1.0 + 4 * half_ulp)):
        s = ExactSum()
        s.add(np.array(values))
        assert s.value() == want == _exact(values)


def test_what_it_refuses():
    with pytest.raises(ValueError, match="finite"):
        ExactSum().add(np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="finite"):
        ExactSum().add(np.array([np.nan]))
    with pytest.raises(ValueError, match="shapes"):
        ExactSum((2,)).merge(ExactSum((3,)))
