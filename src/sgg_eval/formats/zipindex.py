"""The members of a zip archive mapped in memory, read from its central directory without a Python object
per member (an eval_results.pytorch holds ~9 tensors per image, so a VG test file has ~240k members).

torch.save writes plain stored members, an end-of-central-directory record and, in files written with the
zip64 flag, a zip64 end record; member sizes and offsets above 4 GiB live in zip64 extra fields. Those are
read here. Anything unusual (several disks, encryption, a directory that does not chain) returns None and
the caller asks ``zipfile``, the general reader, instead.
"""

from __future__ import annotations

import struct
import zipfile
from dataclasses import dataclass

import numpy as np

_END = b"PK\x05\x06"
_END64_LOCATOR = b"PK\x06\x07"
_END64 = b"PK\x06\x06"
_LOCAL = np.frombuffer(b"PK\x03\x04", np.uint8)
_FULL32 = 0xFFFFFFFF


@dataclass
class Members:
    """``names[i]`` and, as int64 arrays, each member's local header offset, stored size and method."""

    names: list[str]
    header_at: np.ndarray
    size: np.ndarray
    method: np.ndarray

    def data_at(self, whole: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """Byte offsets of members ``rows``' data (after their local headers), None if a header is corrupt."""
        at = self.header_at[rows]
        if len(at) == 0:
            return at
        if at.max() + 30 > len(whole):
            return None
        header = whole[at[:, None] + np.arange(30)].astype(np.int64)
        if not (header[:, :4] == _LOCAL).all():
            return None
        return at + 30 + (header[:, 26] | header[:, 27] << 8) + (header[:, 28] | header[:, 29] << 8)


def members(path: str, whole: np.ndarray) -> Members:
    """The archive's members: read vectorised where the archive is a plain one, else by ``zipfile``."""
    fast = _central_directory(whole)
    if fast is not None:
        return fast
    with zipfile.ZipFile(path) as zf:  # raises zipfile's own errors on a corrupt archive
        infos = zf.infolist()
    return Members([i.filename for i in infos], np.array([i.header_offset for i in infos], dtype=np.int64),
                   np.array([i.compress_size for i in infos], dtype=np.int64),
                   np.array([i.compress_type for i in infos], dtype=np.int64))


def _central_directory(whole: np.ndarray) -> Members | None:
    size = len(whole)
    tail = whole[max(0, size - 65557):].tobytes()
    at = len(tail)
    while True:  # the last end record whose comment length reaches exactly the end of the file
        at = tail.rfind(_END, 0, at)
        if at < 0:
            return None
        if len(tail) - at >= 22 and struct.unpack_from("<H", tail, at + 20)[0] == len(tail) - at - 22:
            break
    disk, cd_disk, _, count, cd_size, cd_at = struct.unpack_from("<HHHHII", tail, at + 4)
    if disk or cd_disk:
        return None
    if _FULL32 in (cd_size, cd_at) or count == 0xFFFF:  # the zip64 end record holds the real values
        locator = size - len(tail) + at - 20
        if locator < 0 or whole[locator: locator + 4].tobytes() != _END64_LOCATOR:
            return None
        (record,) = struct.unpack_from("<Q", whole[locator + 8: locator + 16].tobytes())
        head = whole[record: record + 56].tobytes()
        if len(head) < 56 or head[:4] != _END64:
            return None
        count, cd_size, cd_at = struct.unpack_from("<QQQ", head, 32)
    if count == 0 or cd_size < 46 or cd_at + cd_size > size:
        return None
    cd = whole[cd_at: cd_at + cd_size]
    starts = np.flatnonzero((cd[:-3] == 0x50) & (cd[1:-2] == 0x4B) & (cd[2:-1] == 1) & (cd[3:] == 2))
    if len(starts) != count or starts[-1] + 46 > cd_size:
        return None

    def u16(offset: int) -> np.ndarray:
        return cd[starts + offset].astype(np.int64) | cd[starts + offset + 1].astype(np.int64) << 8

    def u32(offset: int) -> np.ndarray:
        return u16(offset) | u16(offset + 2) << 16

    name_len, extra_len, comment_len = u16(28), u16(30), u16(32)
    ends = starts + 46 + name_len + extra_len + comment_len
    if starts[0] != 0 or ends[-1] != cd_size or not np.array_equal(starts[1:], ends[:-1]):
        return None  # not one chain of records (a signature inside a name, say)
    flags = u16(8)
    if (flags & 1).any() or (u16(34) != 0).any():  # encrypted, or on another disk
        return None
    raw = cd.tobytes()
    names = [raw[s: s + n].decode("utf-8" if f & 0x800 else "cp437")
             for s, n, f in zip((starts + 46).tolist(), name_len.tolist(), flags.tolist())]
    out = Members(names, u32(42), u32(20), u16(10))
    usize = u32(24)
    for i in np.flatnonzero((usize == _FULL32) | (out.size == _FULL32) | (out.header_at == _FULL32)).tolist():
        if not _zip64_extra(raw, int(starts[i] + 46 + name_len[i]), int(extra_len[i]), i, usize, out):
            return None
    return out


def _zip64_extra(raw: bytes, at: int, length: int, i: int, usize: np.ndarray, out: Members) -> bool:
    """Read member ``i``'s zip64 extra field (its 8-byte values, in order, for the fields set to 2^32 - 1)."""
    end = at + length
    while at + 4 <= end:
        tag, n = struct.unpack_from("<HH", raw, at)
        if tag == 1:
            values = iter(struct.unpack_from(f"<{n // 8}Q", raw, at + 4))
            try:
                for array in (usize, out.size, out.header_at):
                    if array[i] == _FULL32:
                        array[i] = next(values)
            except StopIteration:
                return False
            return True
        at += 4 + n
    return False
