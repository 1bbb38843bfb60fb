"""Checksums on every byte sgg-eval reads from its own kinds of files.

- ``crc32``: the zip CRC-32 (ISO-HDLC polynomial, as ``zlib.crc32``) by Intel ISA-L: ~14 GB/s from memory,
  ~80 GB/s from cache, where zlib's runs at ~2 GB/s. A torch zip member's CRC is checked with it.
- Sealed HDF5 stores: every HDF5 file sgg-eval writes (split and prediction stores, statistics) starts with a
  512-byte user block that libhdf5 skips: ``SEAL_MAGIC``, then the CRC-32 and length of every byte after the
  block. :func:`open_sealed` checks both before libhdf5 parses a byte, so a flipped bit, a truncated file or a
  zeroed region is refused with one line instead of reaching the parser (where a damaged B-tree can make it
  spin, or a damaged chunk can decode to other numbers). A file written by an older sgg-eval has no seal and
  is refused with the command that writes it again.

A whole-file checksum was chosen over HDF5's own ``fletcher32`` filter: the filter covers chunked dataset data
only (not attributes, offsets written contiguously, or the B-trees that make libhdf5 hang), and checking only
happens as each chunk is decoded, after the parser has walked the metadata.
"""

from __future__ import annotations

import mmap
import os
import struct

from isal import isal_zlib

from sgg_eval.core.errors import InputError

SEAL_BYTES = 512  # HDF5 user blocks are a power of two >= 512
SEAL_MAGIC = b"sgg-eval sealed HDF5 v1\n"
_SEAL = struct.Struct("<24sIQ")  # magic, CRC-32 of bytes SEAL_BYTES.., their count
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


# ``crc32(data, value=0)``: CRC-32 of ``data`` (any contiguous buffer), continuing ``value``. ISA-L's own function,
# not a wrapper: it is called once per tensor, up to ~50,000 times a file.
crc32 = isal_zlib.crc32


def hdf5_create_options() -> dict:
    """Keyword arguments for ``h5py.File(..., "w", **)`` that leave room for the seal."""
    return {"userblock_size": SEAL_BYTES}


def seal(path: str | os.PathLike) -> None:
    """Write the seal of the closed HDF5 file ``path`` (created with :func:`hdf5_create_options`)."""
    with open(path, "r+b") as fh:
        crc, count = _crc_after_block(fh)
        fh.seek(0)
        fh.write(_SEAL.pack(SEAL_MAGIC, crc, count).ljust(SEAL_BYTES, b"\0"))


_verified: set[tuple] = set()  # files checked by this process (or its parent, before a fork) and unchanged since


def check_seal(path: str, rewrite_hint: str) -> None:
    """Raise InputError unless ``path`` carries a seal matching its content. A file already checked and not
    changed since (same inode, size, modification time) is not read again: a ``--jobs`` worker opens the store
    its parent checked."""
    st = os.stat(path)
    identity = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if identity in _verified:
        return
    _check_seal(path, rewrite_hint)
    _verified.add(identity)


def _check_seal(path: str, rewrite_hint: str) -> None:
    with open(path, "rb") as fh:
        head = fh.read(SEAL_BYTES)
        if head[: len(_HDF5_SIGNATURE)] == _HDF5_SIGNATURE:
            raise InputError(
                f"an HDF5 file without sgg-eval's checksum (written by another tool or by an older "
                f"sgg-eval): {rewrite_hint}",
                path=path,
            )
        if len(head) < SEAL_BYTES or head[: len(SEAL_MAGIC)] != SEAL_MAGIC:
            raise InputError("not an sgg-eval HDF5 store (no checksum header)", path=path)
        _, want_crc, want_count = _SEAL.unpack_from(head)
        if head[_SEAL.size :].strip(b"\0"):
            raise InputError("corrupt checksum header", path=path)
        crc, count = _crc_after_block(fh)
    # the checksum cannot tell an edit (a dataset added or re-chunked by h5py, the same values) from damage
    # (truncation, a flipped bit): either way the file is not the one sgg-eval wrote, and writing it again is
    # the cure
    if count != want_count:
        why = f"its size changed ({count} bytes after the header, {want_count} when sealed)"
    elif crc != want_crc:
        why = "its content changed (checksum mismatch)"
    else:
        return
    raise InputError(f"the file was changed or damaged after sgg-eval wrote it: {why}; {rewrite_hint}", path=path)


def _crc_after_block(fh) -> tuple[int, int]:
    size = os.fstat(fh.fileno()).st_size
    if size <= SEAL_BYTES:
        return 0, max(0, size - SEAL_BYTES)
    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        view = memoryview(mm)
        try:
            return crc32(view[SEAL_BYTES:]), size - SEAL_BYTES
        finally:
            view.release()


def open_sealed(path: str | os.PathLike, rewrite_hint: str):
    """``h5py.File(path, "r")`` after :func:`check_seal`; libhdf5's own errors become one-line InputErrors."""
    import h5py

    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("file not found", path=path)
    if os.path.isdir(path):
        raise InputError("is a directory, expected an HDF5 file", path=path)
    if not os.path.isfile(path):  # a FIFO or a device, which reading would wait on forever
        raise InputError("not a file, expected an HDF5 file", path=path)
    check_seal(path, rewrite_hint)
    try:
        return h5py.File(path, "r")
    except (OSError, RuntimeError, ValueError, KeyError) as exc:
        raise InputError(f"not a readable HDF5 file ({' '.join(str(exc).split())[:160]})", path=path) from None
