"""The accumulator's sums of non-integer values (per-image ratios, row weights, predicate ranks) held exactly, so
that a metric does not depend on how its images were grouped into blocks, workers or evaluators, nor on their
order (``reduce.Accumulator``; ``arrays.exact_sum`` says how).

All of an accumulator's such sums are cells of one :class:`~sgg_eval.arrays.exact_sum.ExactSum`, laid out by
:func:`layout`: a block's values are collected (:class:`BlockSums`) and added in one step, and reading any of
them (:class:`Rounded`) rounds them all once. The counts (hits, rows, images) stay float64 arrays: integers,
exact in any order.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from sgg_eval.arrays.exact_sum import ExactSum

Key = tuple[str, str | None]  # (the accumulator's attribute, the family of a dict attribute or None)


@cache  # one per accumulator shape: shared, never changed
def layout(c: int, nk: int, nr: int) -> tuple[dict[Key, tuple[int, tuple[int, ...]]], int]:
    """Where each sum lives in the one exact sum: ``{(attribute, family): (first cell, shape)}`` and the cell
    count, for ``c`` predicate slots (background included), ``nk`` K values and ``nr`` relative ks."""
    shapes: dict[Key, tuple[int, ...]] = {
        **{("recall", f): (nk,) for f in ("gc", "ng", "pair")},  # Σ_i hits_i(K) / M_i ("pair": PR's)
        **{("per_pred", f): (c, nk) for f in ("gc", "ng", "imr", "ng_imr")},  # Σ_i hits_i(c, K) / count_i(c)
        **{("zs_recall", f): (nk,) for f in ("gc", "ng")},  # the zero-shot rows' ratios
        ("image_mean", "gc"): (nk,),  # Σ_i of the per-image mean over P_i (reduce's docstring)
        ("image_mean", "ng"): (nk,),
        ("image_mean", "rel"): (nr,),
        ("inst", None): (),  # Σ_i matched GT boxes / N_i
        ("rel_recall", None): (nr,),  # R@k×'s ratios
        ("rel_per_pred", None): (c, nr),  # mR@k×'s
        ("wtr_hits", None): (nk,),  # wR_tr: hits weighted by 1 / (n_t + 1)
        ("wtr_total", None): (),  # and the weights
        ("prk_sum", None): (c,),  # the predicate ranks of each predicate's rows
    }
    sum_layout, start = {}, 0
    for key, shape in shapes.items():
        sum_layout[key] = (start, shape)
        start += int(np.prod(shape, dtype=np.int64))
    return sum_layout, start


class BlockSums:
    """A block's values for the exact sums, collected and then added in one step (:meth:`add_to`)."""

    def __init__(self, sum_layout: dict[Key, tuple[int, tuple[int, ...]]]):
        self.sum_layout, self.where, self.values = sum_layout, [], []

    def put(self, key: Key, values: np.ndarray) -> None:
        """``values`` of shape ``(n, *shape)``, summed over their first axis (``ExactSum.add_at`` drops zeros)."""
        flat = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
        self.put_at(key, np.tile(np.arange(flat.shape[1]), len(flat)), flat)

    def put_at(self, key: Key, cells: np.ndarray, values: np.ndarray) -> None:
        """``values[i]`` to the sum's flat cell ``cells[i]``."""
        self.where.append(self.sum_layout[key][0] + np.asarray(cells, dtype=np.int64).ravel())
        self.values.append(np.asarray(values, dtype=np.float64).ravel())

    def add_to(self, exact: ExactSum) -> None:
        if self.values:
            exact.add_at(np.concatenate(self.where), np.concatenate(self.values))


class Rounded:
    """An accumulator attribute read from the exact sums: a float array (or float), or a dict of them by family,
    every sum rounded once; cached in the accumulator's ``rounded`` until it next changes."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, acc, owner=None):
        if acc is None:
            return self
        if not acc.rounded:
            acc.rounded.update(read(acc.exact, acc.sum_layout))
        return acc.rounded[self.name]


def read(exact: ExactSum, sum_layout: dict[Key, tuple[int, tuple[int, ...]]]) -> dict:
    """Every sum, rounded: ``{attribute: array, or {family: array}}``."""
    flat, out = exact.value(), {}
    for (name, family), (start, shape) in sum_layout.items():
        value = flat[start : start + int(np.prod(shape, dtype=np.int64))].reshape(shape)
        value = float(value) if shape == () else value
        if family is None:
            out[name] = value
        else:
            out.setdefault(name, {})[family] = value
    return out
