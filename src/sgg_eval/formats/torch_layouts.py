"""The two on-disk layouts of ``torch.save`` files, read into this package's stand-ins (``torchfile``).

zip (torch >= 1.6): members ``<root>/data.pkl``, ``<root>/data/<key>`` (stored uncompressed), ``<root>/byteorder``;
the members are found through the central directory (``zipindex``) and every storage is a view of the file
mapped once. legacy (torch < 1.6): consecutive pickles (magic number, protocol 1001, sys info, the object,
the storage keys), then per key in that order an 8-byte little-endian element count and the raw bytes.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile
import zlib

import numpy as np

from sgg_eval.errors import InputError
from sgg_eval.formats.torchfile import (LEGACY_MAGIC, LEGACY_PROTOCOL, StorageRef, _map, _map_file,
                                        _RestrictedUnpickler)
from sgg_eval.formats.zipindex import Members, members


# data.pkl is stored uncompressed by torch.save; a compressed one may expand at most this much (zip bombs).
MAX_PICKLE_EXPANSION = 100
MAX_PICKLE_BYTES = 4 << 30


def _member_bytes(whole: np.ndarray, zm: Members, row: int, path: str) -> bytes:
    """A small member's bytes (data.pkl, byteorder), refusing more than the cap whatever its header declares."""
    cap = min(MAX_PICKLE_BYTES, max(64 << 20, MAX_PICKLE_EXPANSION * len(whole)))
    at = zm.data_at(whole, np.array([row]))
    name, size, method = zm.names[row], int(zm.size[row]), int(zm.method[row])
    if at is None or at[0] + size > len(whole):
        raise InputError(f"corrupt zip member {name}", path=path)
    raw = whole[at[0]: at[0] + size].tobytes()
    if method == zipfile.ZIP_DEFLATED:
        raw = zlib.decompressobj(-zlib.MAX_WBITS).decompress(raw, cap + 1)
    elif method != zipfile.ZIP_STORED:
        raise InputError(f"zip member {name} uses compression method {method}, not supported", path=path)
    if len(raw) > cap:
        raise InputError(f"{name} expands beyond {cap >> 20} MiB (limit for a file of this size)", path=path)
    return raw


def load_zip(path: str):
    storages: dict[str, StorageRef] = {}
    try:
        return _load_zip_members(path, storages)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
        raise InputError(f"corrupt zip file ({type(exc).__name__}: {exc})", path=path) from None
    except (OSError, RuntimeError, ValueError, struct.error, zlib.error) as exc:  # zlib, truncated reads
        raise InputError(f"unreadable zip member ({type(exc).__name__}: {exc})", path=path) from None


def _load_zip_members(path: str, storages: dict[str, StorageRef]):
    whole = _map_file(path)
    zm = members(path, whole)
    row_of = {name: i for i, name in enumerate(zm.names)}
    pkl = [n for n in zm.names if n.endswith("/data.pkl") or n == "data.pkl"]
    if len(pkl) != 1:
        raise InputError("zip file has no single data.pkl: not a torch file", path=path)
    root = pkl[0][: -len("data.pkl")]
    order = row_of.get(f"{root}byteorder")
    if order is not None and _member_bytes(whole, zm, order, path).strip() not in (b"little",):
        raise InputError("big-endian torch files are not supported", path=path, field="byteorder")
    obj = _unpickle(_member_bytes(whole, zm, row_of[pkl[0]], path), path, storages)
    refs = list({id(r): r for r in storages.values()}.values())
    rows = np.array([row_of.get(f"{root}data/{ref.key}", -1) for ref in refs], dtype=np.int64)
    for ref, row in zip(refs, rows.tolist()):
        if row < 0:
            raise InputError(f"storage member data/{ref.key} missing", path=path)
        if zm.method[row] != zipfile.ZIP_STORED:
            raise InputError(f"storage member data/{ref.key} is compressed", path=path)
    data_at = zm.data_at(whole, rows)  # every member's local header at once, from the mapping
    if data_at is None:
        raise InputError("corrupt zip local header", path=path)
    sizes = zm.size[rows]
    past_end = np.flatnonzero(data_at + sizes > len(whole))
    if len(past_end):
        key, size = refs[past_end[0]].key, sizes[past_end[0]]
        raise InputError(f"storage member data/{key} declares {size} bytes, past the end of the file", path=path)
    for ref, offset, size in zip(refs, data_at.tolist(), sizes.tolist()):
        if ref.numel * ref.dtype.itemsize > size:
            raise InputError(f"storage {ref.key} declares {ref.numel} elements but its member holds "
                             f"{size} bytes", path=path)
        ref.array = _map(whole, ref.dtype, offset, size // ref.dtype.itemsize)
    return obj


def load_legacy(path: str):
    try:
        return _load_legacy_stream(path)
    except InputError as exc:
        raise _with_path(exc, path) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError,
            struct.error, MemoryError, RecursionError) as exc:
        raise InputError(f"corrupt legacy torch file ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})",
                         path=path) from None


def _load_legacy_stream(path: str):
    storages: dict[str, StorageRef] = {}
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
        obj = _RestrictedUnpickler(fh, path, storages).load()
        keys = _plain(fh, path)
        if not isinstance(keys, list):
            raise InputError("legacy storage key list missing", path=path)
        offset = fh.tell()
        size = os.fstat(fh.fileno()).st_size
        whole = _map_file(path) if keys else None
        by_key: dict[str, list[StorageRef]] = {}
        for ref in storages.values():  # views share their root storage's key
            by_key.setdefault(ref.key, []).append(ref)
        for key in map(str, keys):
            refs = by_key.get(key)
            if not refs:
                raise InputError(f"storage {key} is listed but never referenced", path=path)
            fh.seek(offset)
            raw = fh.read(8)
            if len(raw) < 8:
                raise InputError(f"file ends before storage {key}", path=path)
            (numel,) = struct.unpack("<q", raw)
            itemsize = refs[0].dtype.itemsize
            if numel < 0 or offset + 8 + numel * itemsize > size:
                raise InputError(f"storage {key} claims {numel} elements past the end of the file", path=path)
            array = _map(whole, refs[0].dtype, offset + 8, numel)
            for ref in refs:
                ref.array = array
            offset += 8 + numel * itemsize
    return obj


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
    return _RestrictedUnpickler(fh, path, {}).load()


def _unpickle(data: bytes, path: str, storages: dict[str, StorageRef]):
    try:
        return _RestrictedUnpickler(io.BytesIO(data), path, storages).load()
    except InputError as exc:
        raise _with_path(exc, path) from None
    except Exception as exc:  # truncated or corrupt pickle
        raise InputError(f"corrupt pickle ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})",
                         path=path) from None
