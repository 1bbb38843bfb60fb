"""Pickles of plain data, read without running anything they name: Action Genome's annotation files
(``person_bbox.pkl``, ``object_bbox_and_relationship.pkl``), which hold dicts, lists, tuples, text, numbers and
NumPy arrays of numbers.

Plain ``pickle.load`` would call whatever a file names (``os.system`` included); here ``find_class`` admits only
the few names a NumPy array or scalar pickles as (its reconstructor, ``ndarray``, ``dtype``, ``scalar``) and maps
each onto a stand-in that builds a read-only array from the bytes, after checking them: a numeric dtype (bool,
integer, float), a shape that holds exactly the bytes given. An object array, a class of any other module, a
persistent id, or a truncated file is an :class:`InputError` naming the file, before anything was called.
"""

from __future__ import annotations

import io
import math
import os
import pickle

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.formats.unpickling import quiet_excepthook

# How NumPy 1.x and 2.x name the helpers an array and a scalar pickle with.
_MULTIARRAY = ("numpy.core.multiarray", "numpy._core.multiarray")
_NUMERIC_KINDS = "biuf"
_MAX_DIMS = 32


class _DType:
    """Stand-in for ``numpy.dtype`` while unpickling: a pickled dtype is ``dtype(code, align, copy)`` followed by
    ``__setstate__`` with its byte order; only numeric codes become a dtype."""

    def __init__(self, code, align=False, copy=True):
        self.code = code

    def __setstate__(self, state):
        order = state[1] if type(state) is tuple and len(state) > 1 else "|"
        self.order = order if order in ("<", ">", "|", "=") else "|"

    def resolve(self, path: str) -> np.dtype:
        if getattr(self, "_resolved", None) is not None:
            return self._resolved
        try:
            dtype = np.dtype(self.code).newbyteorder(getattr(self, "order", "="))
        except (TypeError, ValueError):
            raise InputError(f"holds an array of dtype {self.code!r:.40}, not plain numbers", path=path) from None
        if dtype.kind not in _NUMERIC_KINDS:
            raise InputError(f"holds an array of dtype {dtype}, not plain numbers", path=path)
        self._resolved = dtype
        return dtype


class PlainArray:
    """What a pickled ``ndarray`` becomes: its state is kept as read, and checked and turned into a read-only array
    (``array``) when asked for, so the arrays a reader never uses (Action Genome's keypoints) cost nothing. An array
    of objects is refused at once: its state holds a list, not bytes."""

    path = ""

    def __init__(self, *args):
        self._state = None
        self._array = None

    def __setstate__(self, state):
        if type(state) is not tuple or len(state) != 5 or type(state[2]) is not _DType or type(state[4]) is not bytes:
            raise InputError("holds an array of objects, or one whose state is not NumPy's", path=self.path)
        self._state = state

    @property
    def array(self) -> np.ndarray | None:
        if self._array is None and self._state is not None:
            _version, shape, dtype, fortran, raw = self._state
            if type(shape) is not tuple or len(shape) > _MAX_DIMS or any(type(n) is not int or n < 0 for n in shape):
                raise InputError(f"holds an array of shape {shape!r:.60}", path=self.path)
            dt = dtype.resolve(self.path)
            if math.prod(shape) * dt.itemsize != len(raw):
                raise InputError(f"holds an array of shape {list(shape)} with {len(raw)} bytes", path=self.path)
            values = np.frombuffer(raw, dtype=dt).reshape(shape, order="F" if fortran else "C")
            self._array = values.astype(dt.newbyteorder("="), copy=False)
            self._array.flags.writeable = False
        return self._array


_NDARRAY = ("numpy", "ndarray")  # what the pickle's numpy.ndarray becomes: a token, not the (callable) class


class _Unpickler(pickle.Unpickler):
    def __init__(self, fh, path: str):
        super().__init__(fh)
        self.path = path
        self._array = type("PlainArray", (PlainArray,), {"path": path})

    def find_class(self, module: str, name: str):
        if module in _MULTIARRAY and name == "_reconstruct":
            return self._reconstruct
        if module in _MULTIARRAY and name == "scalar":
            return self._scalar
        if module == "numpy" and name == "ndarray":
            return _NDARRAY  # only ever the class argument of _reconstruct: a call of it fails, nothing is allocated
        if module == "numpy" and name == "dtype":
            return _DType
        raise InputError(
            f"refused to load: the pickle references '{module}.{name}', not plain data (nothing was executed)",
            path=self.path,
        )

    def persistent_load(self, pid):
        raise InputError(f"refused to load: a persistent id {pid!r:.60}, not plain data", path=self.path)

    def _reconstruct(self, cls, shape, code):
        if cls is not _NDARRAY:
            raise InputError("refused to load: an array of a class other than numpy.ndarray", path=self.path)
        return self._array()

    def _scalar(self, dtype, raw=None):
        if type(dtype) is not _DType or type(raw) is not bytes:
            raise InputError("holds a NumPy scalar of objects, not plain numbers", path=self.path)
        dt = dtype.resolve(self.path)
        if len(raw) != dt.itemsize:
            raise InputError(f"holds a {dt} scalar of {len(raw)} bytes", path=self.path)
        return np.frombuffer(raw, dtype=dt)[0].item()


def load_plain(path: str | os.PathLike):
    """The object a plain-data pickle holds; its NumPy arrays as :class:`PlainArray` (``.array``), its NumPy
    scalars as Python numbers."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", path=path) from None
    try:
        with quiet_excepthook():
            return _Unpickler(io.BytesIO(data), path).load()
    except InputError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            UnicodeDecodeError, OverflowError, MemoryError, RecursionError) as exc:  # fmt: skip
        raise InputError(f"not a readable pickle ({type(exc).__name__}: {str(exc)[:80]})", path=path) from None


def plain_array(value, path: str, what: str) -> np.ndarray:
    """``value`` as a read-only array: a pickled NumPy array, or a list or tuple of numbers."""
    if isinstance(value, PlainArray):
        if value.array is None:
            raise InputError("holds an array without its data", path=path, field=what)
        return value.array
    if isinstance(value, (list, tuple)) and _numbers(value):
        return np.asarray(value, dtype=np.float64)
    raise InputError(f"expected an array of numbers, got {type(value).__name__}", path=path, field=what)


def _numbers(value: list | tuple) -> bool:
    """A list of numbers, or of equal-length lists of numbers (a box, a list of boxes); nothing deeper."""
    if all(type(v) in (int, float) for v in value):
        return True
    rows = [v for v in value if isinstance(v, (list, tuple))]
    return (
        len(rows) == len(value)
        and len({len(r) for r in rows}) == 1
        and all(type(v) in (int, float) for r in rows for v in r)
    )
