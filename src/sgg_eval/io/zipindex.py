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

from sgg_eval.arrays.segments import segment_offsets
from sgg_eval.core.errors import InputError

_END = b"PK\x05\x06"
_END64_LOCATOR = b"PK\x06\x07"
_END64 = b"PK\x06\x06"
_LOCAL = np.frombuffer(b"PK\x03\x04", np.uint8)
_HEADER_BYTES = np.array([0, 1, 2, 3, 26, 27, 28, 29])  # of a local header: its signature, name and extra lengths
_FULL32 = 0xFFFFFFFF


@dataclass
class Members:
    """Each member's name (``name_len`` bytes at ``name_at`` of ``raw``; UTF-8 where ``utf8``, else cp437) and,
    as int64 arrays, its local header offset, stored size, method, CRC-32 (of its uncompressed bytes) and
    uncompressed size, the ZIP version needed to extract it, and whether it is encrypted.
    ``find`` looks many names up at once;
    ``name`` and ``names`` decode (a list of every name costs ~100 bytes per member)."""

    raw: np.ndarray
    name_at: np.ndarray
    name_len: np.ndarray
    utf8: np.ndarray
    header_at: np.ndarray
    size: np.ndarray
    method: np.ndarray
    crc: np.ndarray
    usize: np.ndarray
    needs: np.ndarray
    encrypted: np.ndarray

    def raw_name(self, i: int) -> bytes:
        at, n = int(self.name_at[i]), int(self.name_len[i])
        return self.raw[at : at + n].tobytes()

    def name(self, i: int) -> str:
        return self.raw_name(i).decode("utf-8" if self.utf8[i] else "cp437", errors="replace")

    @property
    def names(self) -> list[str]:
        return [self.name(i) for i in range(len(self.name_at))]

    def ending_with(self, suffix: str) -> np.ndarray:
        """Rows of the members whose name is ``suffix`` or ends with ``/`` + ``suffix`` (ASCII ``suffix``)."""
        tail = np.frombuffer(("/" + suffix).encode("ascii"), np.uint8)
        long = np.flatnonzero(self.name_len >= len(tail))
        at = self.name_at[long] + self.name_len[long] - len(tail)
        hit = long[(self.raw[at[:, None] + np.arange(len(tail))] == tail).all(axis=1)]
        return np.union1d(hit, self._named(tail[1:]))

    def data_at(self, whole: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """Byte offsets of members ``rows``' data (after their local headers), None if a header is corrupt."""
        at = self.header_at[rows]
        if len(at) == 0:
            return at
        if at.max() + 30 > len(whole) or at.min() < 0:  # zipfile's offsets can go below 0 on a damaged file
            return None
        # only the bytes needed (signature, name and extra lengths): the whole 30-byte headers of ~45,000
        # members as int64 took ~20 MB of fresh memory, and on a VM every new page costs a fault of ~3 µs
        header = whole[at[:, None] + _HEADER_BYTES]
        if not (header[:, :4] == _LOCAL).all():
            return None
        lengths = header[:, 4:].astype(np.int64)
        return at + 30 + (lengths[:, 0] | lengths[:, 1] << 8) + (lengths[:, 2] | lengths[:, 3] << 8)

    def _named(self, want: np.ndarray) -> np.ndarray:
        """Rows of the members whose name is the ASCII bytes ``want`` (bytes >= 0x80 never decode to ASCII, in
        UTF-8 or cp437, so comparing bytes is exact)."""
        cand = np.flatnonzero(self.name_len == len(want))
        return cand[(self.raw[self.name_at[cand, None] + np.arange(len(want))] == want).all(axis=1)]

    def _find_ascii(self, name: str) -> int:
        """The last member called ``name`` (ASCII), -1 if none."""
        hit = self._named(np.frombuffer(name.encode("ascii"), np.uint8))
        return int(hit[-1]) if len(hit) else -1

    def find(self, prefix: str, suffixes: list[str]) -> np.ndarray:
        """The row of the member named ``prefix + s`` for each ``s`` of ``suffixes`` (the last of that name,
        as ``zipfile``), -1 where there is none. Short ASCII suffixes (a torch file's storage keys: "0",
        "1", ...) are compared as integers packed from their bytes, without a Python object per member;
        anything else is looked up by decoded name."""
        rows = _find_short(self, prefix, suffixes)
        if rows is not None:
            return rows
        if len(suffixes) <= _FEW and all((prefix + s).isascii() for s in suffixes):
            return np.array([self._find_ascii(prefix + s) for s in suffixes], dtype=np.int64)
        row_of = {name: i for i, name in enumerate(self.names)}
        return np.array([row_of.get(prefix + s, -1) for s in suffixes], dtype=np.int64)


_FEW = 16  # names looked up one by one (each a pass over the directory) rather than through a dict of them all
_SHORT = 7  # bytes of a suffix packed into one uint64 with its length in the top byte


def _packed(buf: np.ndarray, at: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Each byte string ``buf[at : at + length]`` (length <= _SHORT) as one uint64: its bytes, then its
    length in the top byte, so different strings never pack alike."""
    k = np.arange(_SHORT)
    if len(buf) == 0:
        gathered = np.zeros((len(at), _SHORT), dtype=np.uint8)
    else:
        gathered = np.where(k < length[:, None], buf[np.minimum(at[:, None] + k, len(buf) - 1)], 0)
    shifts = (8 * k).astype(np.uint64)
    return (gathered.astype(np.uint64) << shifts).sum(axis=1, dtype=np.uint64) | (
        length.astype(np.uint64) << np.uint64(56)
    )


def _find_short(members: Members, prefix: str, suffixes: list[str]) -> np.ndarray | None:
    blob = "".join(suffixes).encode("utf-8")
    want_len = np.fromiter(map(len, suffixes), dtype=np.int64, count=len(suffixes))
    pre = np.frombuffer(prefix.encode("utf-8"), np.uint8)
    if len(blob) != want_len.sum() or len(pre) != len(prefix) or want_len.max(initial=0) > _SHORT:
        return None  # non-ASCII or long names: compare decoded names
    cand = np.flatnonzero((members.name_len >= len(pre)) & (members.name_len <= len(pre) + _SHORT))
    cand = cand[(members.raw[members.name_at[cand, None] + np.arange(len(pre))] == pre).all(axis=1)]
    at, length = members.name_at[cand] + len(pre), members.name_len[cand] - len(pre)
    member_key = _packed(members.raw, at, length)
    if (member_key & np.uint64(0x0080808080808080)).any():
        return None  # a non-ASCII member name may decode to one of the wanted names
    want_key = _packed(np.frombuffer(blob, np.uint8), segment_offsets(want_len), want_len)
    if not len(member_key):
        return np.full(len(suffixes), -1, dtype=np.int64)
    order = np.argsort(member_key, kind="stable")
    pos = np.searchsorted(member_key[order], want_key, "right") - 1  # the last member of a name
    found = (pos >= 0) & (member_key[order][np.maximum(pos, 0)] == want_key)
    return np.where(found, cand[order[np.maximum(pos, 0)]], -1).astype(np.int64)


def members(path: str, whole: np.ndarray) -> Members:
    """The archive's members: read vectorised where the archive is a plain one, else by ``zipfile``. Two
    members of one name are refused: readers disagree on which one a name means (``zipfile`` takes the last,
    others the first), so such a file could give one number here and another elsewhere."""
    found = _central_directory(whole)
    if found is None:
        found = _by_zipfile(path)
    duplicate = first_duplicate(found)
    if duplicate is not None:
        raise InputError(
            f"two zip members are named {found.name(duplicate)!r:.120}: the archive is ambiguous", path=path
        )
    return found


def first_duplicate(zm: Members) -> int | None:
    """A row whose name another member also has, or None. Names are hashed as whole arrays (FNV-1a over the
    bytes, column by column), and only rows of equal hash are compared as bytes."""
    n = len(zm.name_at)
    if n < 2:
        return None
    hashed = np.full(n, 0xCBF29CE484222325, dtype=np.uint64)
    prime, last = np.uint64(0x100000001B3), len(zm.raw) - 1
    with np.errstate(over="ignore"):
        for k in range(int(zm.name_len.max())):
            inside = k < zm.name_len
            byte = zm.raw[np.minimum(zm.name_at + k, last)].astype(np.uint64)
            hashed = np.where(inside, (hashed ^ byte) * prime, hashed)
    order = np.argsort(hashed, kind="stable")
    same = np.flatnonzero(hashed[order][1:] == hashed[order][:-1])
    for a, b in zip(order[same].tolist(), order[same + 1].tolist()):
        if zm.raw_name(a) == zm.raw_name(b):
            return b
    return None


def _by_zipfile(path: str) -> Members:
    with zipfile.ZipFile(path) as zf:  # raises zipfile's own errors on a corrupt archive
        infos = zf.infolist()
    utf8 = np.array([bool(i.flag_bits & 0x800) for i in infos], dtype=bool)
    encoded = [i.orig_filename.encode("utf-8" if u else "cp437") for i, u in zip(infos, utf8)]  # the bytes stored
    length = np.array([len(b) for b in encoded], dtype=np.int64)
    return Members(
        np.frombuffer(b"".join(encoded), np.uint8),
        segment_offsets(length),
        length,
        utf8,
        np.array([i.header_offset for i in infos], dtype=np.int64),
        np.array([i.compress_size for i in infos], dtype=np.int64),
        np.array([i.compress_type for i in infos], dtype=np.int64),
        np.array([i.CRC for i in infos], dtype=np.int64),
        np.array([i.file_size for i in infos], dtype=np.int64),
        np.array([i.extract_version for i in infos], dtype=np.int64),
        np.array([bool(i.flag_bits & 1) for i in infos], dtype=bool),
    )


def _central_directory(whole: np.ndarray) -> Members | None:  # noqa: C901 - one check per record field
    size = len(whole)
    tail = whole[max(0, size - 65557) :].tobytes()
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
        if locator < 0 or whole[locator : locator + 4].tobytes() != _END64_LOCATOR:
            return None
        (record,) = struct.unpack_from("<Q", whole[locator + 8 : locator + 16].tobytes())
        head = whole[record : record + 56].tobytes()
        if len(head) < 56 or head[:4] != _END64:
            return None
        count, cd_size, cd_at = struct.unpack_from("<QQQ", head, 32)
    if count == 0 or cd_size < 46 or cd_at + cd_size > size:
        return None
    cd = whole[cd_at : cd_at + cd_size]
    # record signatures "PK\x01\x02": the rare "P" bytes first, then the next three at those only (four
    # full-length masks of the directory cost ~10 MB of fresh memory for a VG test file)
    p = np.flatnonzero(cd[:-3] == 0x50)
    starts = p[(cd[p + 1] == 0x4B) & (cd[p + 2] == 1) & (cd[p + 3] == 2)]
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
    usize = u32(24)
    encrypted = np.zeros(len(starts), dtype=bool)  # (an encrypted member sends the archive to zipfile, above)
    out = Members(
        cd, starts + 46, name_len, (flags & 0x800) != 0, u32(42), u32(20), u16(10), u32(16), usize, u16(6), encrypted
    )
    big = np.flatnonzero((usize == _FULL32) | (out.size == _FULL32) | (out.header_at == _FULL32))
    raw = cd.tobytes() if len(big) else b""
    for i in big.tolist():
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
