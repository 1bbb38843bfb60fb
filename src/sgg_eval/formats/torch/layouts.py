"""The two on-disk layouts of ``torch.save`` files, read into the stand-ins of ``unpickler``.

zip (torch >= 1.6): members ``<root>/data.pkl``, ``<root>/data/<key>`` (stored uncompressed), ``<root>/byteorder``;
the members are found through the central directory (``zipindex``) and every storage is a view of the file
mapped once. legacy (torch < 1.6): consecutive pickles (magic number, protocol 1001, sys info, the object,
the storage keys), then per key in that order an 8-byte little-endian element count and the raw bytes.
"""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
import zlib

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.formats.torch.tensor_table import TensorTable
from sgg_eval.formats.torch.unpickler import LEGACY_MAGIC, LEGACY_PROTOCOL, _RestrictedUnpickler, unpickle
from sgg_eval.formats.unpickling import quiet_excepthook
from sgg_eval.io.archive import Archive, MemberError, map_file


def _member_bytes(archive: Archive, row: int) -> bytes:
    """A small member's bytes (data.pkl, byteorder), refusing more than ``Archive.member_cap``."""
    name = archive.members.name(row)
    try:
        return archive.read(row, archive.member_cap())
    except MemberError as exc:
        raise InputError(f"zip member {name} {exc}", path=archive.path) from None


def load_zip(path: str):
    try:
        return _load_zip_members(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
        raise InputError(f"corrupt zip file ({type(exc).__name__}: {exc})", path=path) from None
    except (OSError, RuntimeError, ValueError, struct.error, zlib.error) as exc:  # zlib, truncated reads
        raise InputError(f"unreadable zip member ({type(exc).__name__}: {exc})", path=path) from None


def _load_zip_members(path: str):
    archive = Archive(path)
    whole, zm = archive.whole, archive.members
    pkl = zm.ending_with("data.pkl")
    if len(pkl) != 1:
        raise InputError("zip file has no single data.pkl: not a torch file", path=path)
    root = zm.name(int(pkl[0]))[: -len("data.pkl")]
    order = int(zm.find(root, ["byteorder"])[0])
    if order >= 0 and _member_bytes(archive, order).strip() not in (b"little",):
        raise InputError("big-endian torch files are not supported", path=path, field="byteorder")
    obj, tensors = _unpickle(_member_bytes(archive, int(pkl[0])), path)
    keys = tensors.keys()
    rows = zm.find(f"{root}data/", keys)
    bad = np.flatnonzero(rows < 0)
    if len(bad):
        raise InputError(f"storage member data/{keys[bad[0]]} missing", path=path)
    bad = np.flatnonzero(zm.method[rows] != zipfile.ZIP_STORED)
    if len(bad):
        raise InputError(f"storage member data/{keys[bad[0]]} is compressed", path=path)
    data_at = zm.data_at(whole, rows)  # every member's local header at once, from the mapping
    if data_at is None:
        raise InputError("corrupt zip local header", path=path)
    sizes = zm.size[rows]
    bad = np.flatnonzero(data_at + sizes > len(whole))
    if len(bad):
        raise InputError(
            f"storage member data/{keys[bad[0]]} declares {sizes[bad[0]]} bytes, past the end of the file", path=path
        )
    bad = np.flatnonzero(tensors.declared_bytes() > sizes)
    if len(bad):
        raise InputError(
            f"storage {keys[bad[0]]} declares {tensors.declared_bytes()[bad[0]]:.0f} bytes but its "
            f"member holds {sizes[bad[0]]} bytes",
            path=path,
        )
    tensors.locate(whole, data_at, sizes // tensors.itemsizes())
    tensors.expect_crc(data_at, sizes, zm.crc[rows])
    return obj


def load_legacy(path: str):
    try:
        return _load_legacy_stream(path)
    except InputError as exc:
        raise _with_path(exc, path) from None
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        struct.error,
        MemoryError,
        RecursionError,
        OverflowError,  # a length past the address space (BINUNICODE8, BINBYTES8)
    ) as exc:
        raise InputError(
            f"corrupt legacy torch file ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})", path=path
        ) from None


def _load_legacy_stream(path: str):
    with open(path, "rb") as fh:
        if not _peek_is_pickle(fh):
            raise InputError("neither a torch zip file nor a legacy torch file", path=path)
        try:
            magic = _plain(fh, path)
        except InputError:
            raise
        except Exception:
            magic = None
        if magic != LEGACY_MAGIC:
            raise InputError("neither a torch zip file nor a legacy torch file (bad magic number)", path=path)
        protocol = _plain(fh, path)
        if protocol != LEGACY_PROTOCOL:
            raise InputError(f"legacy protocol {protocol}, expected {LEGACY_PROTOCOL}", path=path)
        info = _plain(fh, path)
        if isinstance(info, dict) and not info.get("little_endian", True):
            raise InputError("big-endian torch files are not supported", path=path)
        obj, tensors = unpickle(fh, path)
        keys = _plain(fh, path)
        if not isinstance(keys, list):
            raise InputError("legacy storage key list missing", path=path)
        offset = fh.tell()
    whole = map_file(path) if keys else np.zeros(0, dtype=np.uint8)
    keys = [str(k) for k in keys]
    roots = np.array([-1 if (i := tensors.index(k)) is None else i for k in keys], dtype=np.int64)
    if len(roots) and roots.min() < 0:
        raise InputError(f"storage {keys[int(np.argmin(roots))]} is listed but never referenced", path=path)
    at, count = _legacy_storages(whole, offset, keys, tensors.numels()[roots], tensors.itemsizes()[roots], path)
    byte_at = np.full(tensors.count, -1, dtype=np.int64)
    capacity = np.zeros(tensors.count, dtype=np.int64)
    byte_at[roots], capacity[roots] = at, count
    byte_at, capacity = byte_at[tensors.roots()], capacity[tensors.roots()]  # a view reads its root's bytes
    tensors.locate(whole, byte_at, capacity)
    return obj


def _legacy_storages(
    whole: np.ndarray, offset: int, keys: list[str], numel: np.ndarray, itemsize: np.ndarray, path: str
) -> tuple[np.ndarray, np.ndarray]:
    """Byte offsets and element counts of the storages that follow the pickles, in ``keys`` order: each is an
    8-byte little-endian count, then its bytes. Found at once from the counts the pickle declares, then
    checked against the counts in the file; where they differ, walked one by one from the file's counts."""
    step = 8 + numel.astype(np.float64) * itemsize
    at = offset + np.concatenate([[0.0], np.cumsum(step)[:-1]]) if len(keys) else np.zeros(0)
    if len(keys) and at[-1] + step[-1] <= len(whole):
        at = at.astype(np.int64)
        found = whole[at[:, None] + np.arange(8)].copy().view("<i8").ravel()
        if np.array_equal(found, numel):
            return at + 8, numel
    at_list, counts = [], []
    for key, isz in zip(keys, itemsize.tolist()):
        if offset + 8 > len(whole):
            raise InputError(f"file ends before storage {key}", path=path)
        (count,) = struct.unpack("<q", whole[offset : offset + 8].tobytes())
        if count < 0 or offset + 8 + count * isz > len(whole):
            raise InputError(f"storage {key} claims {count} elements past the end of the file", path=path)
        at_list.append(offset + 8)
        counts.append(count)
        offset += 8 + count * isz
    return np.array(at_list, dtype=np.int64), np.array(counts, dtype=np.int64)


def _with_path(exc: InputError, path: str) -> InputError:
    """Errors raised while unpickling (tensor geometry, refused globals) learn the file they came from."""
    return exc if exc.path else InputError(str(exc), path=path)


def _peek_is_pickle(fh) -> bool:
    pos = fh.tell()
    first = fh.read(1)
    fh.seek(pos)
    return first == b"\x80"


def _plain(fh, path: str):
    """A pickle of plain data only (numbers, strings, lists, dicts): any global is refused."""
    with quiet_excepthook():
        return _RestrictedUnpickler(fh, path).load()


def _unpickle(data: bytes, path: str) -> tuple[object, TensorTable]:
    try:
        # a reader with peek(): the C unpickler then prefetches 8 kB at a time instead of calling read() for
        # every opcode of a protocol-2 pickle (no frames): 2.5x faster
        return unpickle(io.BufferedReader(io.BytesIO(data)), path)
    except InputError as exc:
        raise _with_path(exc, path) from None
    except Exception as exc:  # truncated or corrupt pickle
        raise InputError(
            f"corrupt pickle ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})", path=path
        ) from None
