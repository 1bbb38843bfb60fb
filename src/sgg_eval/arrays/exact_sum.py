"""Sums of float64 values that are exact until they are read, so they do not depend on the order or the
grouping of the values: a run split into blocks, workers or ranks and merged in any order gives the same bits.

Every finite double is ``x = m · 2^e`` with an integer ``|m| < 2^53``. An :class:`ExactSum` keeps, for each cell
of its array, the integer ``X = Σ m · 2^(e + BIAS)`` as int64 *limbs* of 32 bits each (``X = Σ_j limb_j ·
2^(32 (lo + j))``): ``m`` is split into 32-bit digits and each digit is added to its limb, so all the additions
are of integers and exact. A digit is below 2^33, so a limb could take 2^30 of them before it overflowed; the
carries are pushed up after 2^28. Only the window of limbs the values reach is stored (4 to 5 limbs for values
in [1e-3, 1]).

Reading (:meth:`ExactSum.value`) rounds ``X · 2^-BIAS`` to the nearest double (ties to even) once, with Python's
exactly rounded integer division: the value equals ``math.fsum`` of all the values added, whatever the order.
"""

from __future__ import annotations

import numpy as np

LIMB_BITS = 32
_MASK = (1 << LIMB_BITS) - 1
# frexp's exponent q is at least -1073 (the smallest subnormal), so m · 2^(q - 53 + BIAS) is an integer
BIAS = 1126
_MAX_DIGITS = 1 << 28  # values a cell may take (digits < 2^33 each) before the carries are pushed up
_CHUNK = 1 << 20  # values per bincount: 2^20 digits < 2^33 sum to < 2^53, exact in its float64 weights


def _digits(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For nonzero finite ``values``: the limb index of each one's lowest digit and its (up to) three signed
    32-bit digits ``[n, 3]``, so that ``x · 2^BIAS = Σ_d digit_d · 2^(32 (limb + d))``."""
    frac, exp = np.frexp(values)
    m = np.ldexp(frac, 53).astype(np.int64)  # exact: |frac| < 1 has 53 significant bits
    sign, m = np.sign(m), np.abs(m)
    bit = exp.astype(np.int64) - 53 + BIAS
    limb, shift = np.divmod(bit, LIMB_BITS)
    low = (m & _MASK) << shift  # < 2^63: spans limbs limb and limb + 1
    high = (m >> LIMB_BITS) << shift  # < 2^52: spans limbs limb + 1 and limb + 2
    digits = np.stack([low & _MASK, (low >> LIMB_BITS) + (high & _MASK), high >> LIMB_BITS], axis=1)
    return limb, digits * sign[:, None]


class ExactSum:
    """An array of exact running sums of doubles (module docstring): :meth:`add` values, :meth:`merge` another
    one, read :meth:`value`. ``shape`` is the array's shape (``()`` for one sum)."""

    def __init__(self, shape: tuple[int, ...] = ()):
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.lo = 0  # the window's lowest limb
        self.limbs = np.zeros((self.size, 0), dtype=np.int64)
        self.digits_added = 0  # per cell at most, since the carries were last pushed up

    def add(self, values: np.ndarray) -> None:
        """Add ``values`` of shape ``(n, *shape)`` over their first axis (``sum(axis=0)``, exactly)."""
        values = np.asarray(values, dtype=np.float64).reshape(-1, self.size)
        self.add_at(np.tile(np.arange(self.size), len(values)), values)

    def add_at(self, cells: np.ndarray, values: np.ndarray) -> None:
        """Add ``values[i]`` to flat cell ``cells[i]`` (``np.add.at``, exactly)."""
        values = np.asarray(values, dtype=np.float64).ravel()
        cells = np.asarray(cells, dtype=np.int64).ravel()
        nonzero = values != 0
        values, cells = values[nonzero], cells[nonzero]
        if not len(values):
            return
        if not np.isfinite(values).all():
            raise ValueError("an exact sum takes finite values only")
        for start in range(0, len(values), _CHUNK):
            self._add_chunk(cells[start : start + _CHUNK], values[start : start + _CHUNK])

    def _add_chunk(self, cells: np.ndarray, values: np.ndarray) -> None:
        limb, digits = _digits(values)
        lo, hi = int(limb.min()), int(limb.max()) + 3
        if self.digits_added + len(values) > _MAX_DIGITS:
            self._carry()
        self._cover(lo, hi + 1)  # one limb above the digits for the carries
        width = hi - lo
        key = cells[:, None] * width + (limb - lo)[:, None] + np.arange(3)
        sums = np.bincount(key.ravel(), weights=digits.ravel(), minlength=self.size * width)
        start = lo - self.lo
        self.limbs[:, start : start + width] += sums.reshape(self.size, width).astype(np.int64)
        self.digits_added += len(values)

    def merge(self, other: ExactSum) -> None:
        """Add ``other``'s sums, cell by cell."""
        if other.shape != self.shape:
            raise ValueError(f"exact sums of shapes {self.shape} and {other.shape}")
        if not other.limbs.shape[1]:
            return
        if self.digits_added + other.digits_added > _MAX_DIGITS:
            self._carry()
        other = other.copy()
        other._carry()
        self._cover(other.lo, other.lo + other.limbs.shape[1])
        start = other.lo - self.lo
        self.limbs[:, start : start + other.limbs.shape[1]] += other.limbs
        self.digits_added += 1

    def copy(self) -> ExactSum:
        out = ExactSum(self.shape)
        out.lo, out.limbs, out.digits_added = self.lo, self.limbs.copy(), self.digits_added
        return out

    def value(self) -> np.ndarray | float:
        """The sums, each rounded once to the nearest double: an array of ``shape`` (a float for ``()``)."""
        out = np.zeros(self.size)
        summed = self.copy()
        summed._carry()
        width = summed.limbs.shape[1]
        scale = LIMB_BITS * summed.lo - BIAS
        for cell in np.flatnonzero(summed.limbs.any(axis=1)):
            digits = summed.limbs[cell]
            x = int.from_bytes(digits[:-1].astype("<u4").tobytes(), "little") + (
                int(digits[-1]) << LIMB_BITS * (width - 1)
            )
            out[cell] = x / (1 << -scale) if scale < 0 else float(x << scale)
        return float(out[0]) if self.shape == () else out.reshape(self.shape)

    def _cover(self, lo: int, hi: int) -> None:
        """Widen the window to hold limbs ``lo .. hi - 1``."""
        width = self.limbs.shape[1]
        if width and lo >= self.lo and hi <= self.lo + width:
            return
        new_lo = min(lo, self.lo) if width else lo
        new_hi = max(hi, self.lo + width) if width else hi
        limbs = np.zeros((self.size, new_hi - new_lo), dtype=np.int64)
        limbs[:, self.lo - new_lo : self.lo - new_lo + width] = self.limbs
        self.lo, self.limbs = new_lo, limbs

    def _carry(self) -> None:
        """Push every limb's carry up, so all but the top one lie in ``[0, 2^32)`` (the top one keeps the sign);
        widens the window first when the top limb is not small."""
        if not self.limbs.shape[1]:
            return
        if np.abs(self.limbs[:, -1]).max() >= 1 << 30:
            self._cover(self.lo, self.lo + self.limbs.shape[1] + 2)
        limbs = self.limbs
        for j in range(limbs.shape[1] - 1):
            limbs[:, j + 1] += limbs[:, j] >> LIMB_BITS  # arithmetic shift: floors, keeps the remainder >= 0
            limbs[:, j] &= _MASK
        self.digits_added = 0
