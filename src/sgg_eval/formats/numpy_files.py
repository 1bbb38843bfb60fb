"""numpy's own files: ``.npy`` (``numpy.save``) and ``.npz`` (``numpy.savez``, ``savez_compressed``: a ZIP archive
of ``.npy`` members), read without pickles and without trusting a header's sizes.

``numpy.load`` allocates the array its header declares before it reads the data (a 100-byte file saying
``shape: (10**12,)`` asks for a terabyte), and reads an ``.npz`` through ``zipfile``, whose errors on a damaged
archive (an unknown compression method, a bad deflate stream) are not the ones it lets callers expect. Here every
header is checked against the bytes that follow it before any array is made, an ``.npz`` is read through the one
ZIP reader (``io.archive``: each member read whole with ``Archive.member_cap``, its CRC-32 checked), and every way
a file can be wrong is one :class:`~sgg_eval.core.errors.InputError` naming the file (and the member).
"""

from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.io.archive import Archive, MemberError

_NPY = ".npy"
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
# what a damaged archive's directory raises (NotImplementedError is a RuntimeError)
_BAD_ZIP = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, RuntimeError, ValueError, struct.error, zlib.error)
_BAD_NPY = (ValueError, TypeError, OverflowError, SyntaxError, EOFError, UnicodeDecodeError, struct.error)


def read_npy(path: str | os.PathLike) -> np.ndarray:
    """The array of the ``.npy`` file at ``path``."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        return _array(fh.read(), path, None)


def read_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` at ``path``, by name (the member's name without ``.npy``, as ``numpy.load``
    gives it)."""
    path = os.fspath(path)
    try:
        archive = Archive(path)
    except _BAD_ZIP as exc:
        raise InputError(f"not a readable .npz ({_short(exc)})", path=path) from None
    cap = archive.member_cap()
    out: dict[str, np.ndarray] = {}
    for row, name in enumerate(archive.members.names):
        if not name.endswith(_NPY):
            raise InputError(f"member {name[:60]!r} is not a .npy array: not a file numpy.savez wrote", path=path)
        try:
            data = archive.read(row, cap)
        except MemberError as exc:
            raise InputError(f"member {name[:60]} {exc}", path=path) from None
        out[name[: -len(_NPY)]] = _array(data, path, name)
    return out


def _array(data: bytes, path: str, member: str | None) -> np.ndarray:
    """One ``.npy``'s array from its bytes: a format version numpy writes for plain arrays (1.0, 2.0), no object
    dtype (a pickle), and exactly the bytes its header's shape and dtype need."""
    what = f"member {member[:60]} is not" if member else "not"
    fh = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(fh)
        if version not in _HEADER_READERS:
            raise ValueError(f"format version {version[0]}.{version[1]}, not 1.0 or 2.0")
        shape, fortran, dtype = _HEADER_READERS[version](fh)
        if dtype.hasobject:
            raise ValueError("an object array, which only a pickle holds")
        need = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if need != len(data) - fh.tell():
            raise ValueError(f"its header asks for {need} bytes of data where the file holds {len(data) - fh.tell()}")
        fh.seek(0)
        return np.lib.format.read_array(fh, allow_pickle=False)
    except _BAD_NPY as exc:
        raise InputError(f"{what} a readable .npy array ({_short(exc)})", path=path) from None


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:100] or type(exc).__name__
