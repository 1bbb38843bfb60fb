"""The one ZIP reader: an archive mapped in memory once, its members found through the central directory
(``zipindex``) and read, checked, without extracting anything. torch files (``formats.torch.layouts``, and the
sniff that tells SGG-Benchmark's ``predictions.pth`` from an eval_results file), numpy's ``.npz``
(``formats.numpy_files``) and SGBench submissions (``panoptic.sgbench_submission``) all read their archives here.

A member's bytes (:meth:`Archive.read`) are read from the file (``os.pread``: the mapping's pages would count in
the process's resident memory, ~125 MB for a PSG submission) and checked as ``zipfile`` checks them: a local
header where the directory points, naming the same member; the data inside the file; the inflated size the
directory records; the CRC-32. Deflated members are inflated by ISA-L, for memory, not speed: CPython's zlib
inflates into blocks it joins at the end, so a PSG-sized triplets.json (149 MB) would sit in memory twice (peak
RSS of a mask run 272 → 399 MB), where ISA-L's output is one buffer. Other methods (bzip2, LZMA) and encrypted
members go to ``zipfile``, the general reader. A member never yields more than ``cap`` bytes, whatever its header says.
"""

from __future__ import annotations

import mmap
import os
import struct
import zipfile
import zlib

import numpy as np
from isal import isal_zlib

from sgg_eval.io.integrity import crc32
from sgg_eval.io.zipindex import Members, members

_LOCAL = b"PK\x03\x04"
_NEWEST = zipfile.MAX_EXTRACT_VERSION  # the newest ZIP version zipfile (and so this reader) extracts
# what a member read whole (a torch file's pickle, an .npz's array) may inflate to: 64 MiB, or this many times the
# archive, up to 4 GiB; a bomb's header cannot ask for more
MEMBER_EXPANSION = 100
MEMBER_MAX_BYTES = 4 << 30


class MemberError(ValueError):
    """A member that cannot be read as the directory describes it; the message says why."""


def map_file(path: str) -> np.ndarray:
    """The whole file as a read-only uint8 array backed by one mmap (a plain ndarray: its views are cheap,
    unlike ``np.memmap`` whose every slice runs Python-level hooks). Forked processes share it."""
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return np.zeros(0, dtype=np.uint8)
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(mm, dtype=np.uint8)


class Archive:
    """A ZIP archive: ``whole`` (the file mapped) and ``members`` (its directory, ``zipindex.Members``).
    Raises what ``zipindex.members`` raises on a damaged directory (``zipfile``'s errors, or ``InputError``
    for two members of one name)."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self.whole = map_file(self.path)
        self.members: Members = members(self.path, self.whole)
        self._fd = os.open(self.path, os.O_RDONLY)  # pread: no shared offset, so forked workers may use it too

    def __del__(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)

    def member_cap(self) -> int:
        """The most bytes one member read whole may inflate to (``MEMBER_EXPANSION``, ``MEMBER_MAX_BYTES``)."""
        return min(MEMBER_MAX_BYTES, max(64 << 20, MEMBER_EXPANSION * len(self.whole)))

    def row(self, name: str) -> int:
        """The row of the member called ``name``, -1 if there is none."""
        return int(self.members.find("", [name])[0])

    def read(self, row: int, cap: int) -> bytes:
        """Member ``row``'s bytes, checked (module docstring); :class:`MemberError` if they fail, or if they
        would exceed ``cap``."""
        zm, name = self.members, self.members.name(row)
        if zm.needs[row] > _NEWEST:
            raise MemberError(f"needs ZIP version {zm.needs[row] / 10:.1f} to extract, which zipfile does not support")
        method = int(zm.method[row])
        if method not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or zm.encrypted[row]:
            return _by_zipfile(self.path, name, cap)
        data = self._data(row)
        usize = int(zm.usize[row])
        if usize > cap:
            raise MemberError(f"expands to {usize} bytes, more than the {cap} allowed")
        if method == zipfile.ZIP_DEFLATED:
            data = _inflate(data, usize)
        if len(data) != usize:
            raise MemberError(f"holds {len(data)} bytes where the directory says {usize}")
        if crc32(data) != int(zm.crc[row]):
            raise MemberError("fails its CRC-32 check: the file is corrupt")
        return data

    def head(self, row: int, n: int) -> bytes:
        """The first ``n`` bytes of member ``row`` (fewer if it is shorter), unchecked: enough to tell what a file
        holds (``formats.sgg_benchmark_predictions``), never a substitute for :meth:`read`. A stored member is not
        read past them; any other is read whole, checked."""
        zm = self.members
        if int(zm.method[row]) != zipfile.ZIP_STORED or zm.encrypted[row]:
            return self.read(row, self.member_cap())[:n]
        return os.pread(self._fd, min(n, int(zm.size[row])), self._data_at(row))

    def _data_at(self, row: int) -> int:
        """Where the member's stored bytes start, after a local header that must name it."""
        zm = self.members
        at = int(zm.header_at[row])
        header = os.pread(self._fd, 30, at) if at >= 0 else b""
        if len(header) != 30 or header[:4] != _LOCAL:
            raise MemberError("has no local header where the directory points")
        name_len, extra_len = struct.unpack_from("<HH", header, 26)
        if os.pread(self._fd, name_len, at + 30) != zm.raw_name(row):
            raise MemberError("has a local header that names another member")
        return at + 30 + name_len + extra_len

    def _data(self, row: int) -> bytes:
        """The member's stored bytes."""
        size = int(self.members.size[row])
        data = os.pread(self._fd, size, self._data_at(row))
        if len(data) != size:
            raise MemberError("runs past the end of the file")
        return data


def _inflate(data: bytes, usize: int) -> bytes:
    inflater = isal_zlib.decompressobj(-15)
    try:
        out = inflater.decompress(data, usize + 1)  # never more than the directory says, plus one to notice it
    except isal_zlib.error as exc:
        raise MemberError(f"has bad deflate data ({exc})") from None
    if not inflater.eof and len(out) <= usize:
        raise MemberError("has a deflate stream that does not end where its size says")
    return out


def _by_zipfile(path: str, name: str, cap: int) -> bytes:
    """An encrypted member or one of another method, through ``zipfile`` (which checks its CRC-32)."""
    try:
        with zipfile.ZipFile(path) as zf, zf.open(name) as fh:
            data = fh.read(cap + 1)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, ValueError, zlib.error) as exc:
        raise MemberError(f"is unreadable ({' '.join(str(exc).split())[:100]})") from None
    if len(data) > cap:
        raise MemberError(f"expands to more than the {cap} bytes allowed")
    return data
