"""Read ``torch.save`` files without torch, safely: zip format (torch >= 1.6) and legacy format (torch < 1.6).

The pickle is read by a restricted unpickler whose ``find_class`` admits only what such files legitimately
reference (tensor rebuild helpers, storage classes, ``collections.OrderedDict``, ``torch.Size`` and the
maskrcnn_benchmark ``BoxList``, mapped onto a stand-in). Anything else (``os.system``, ``builtins.eval``,
...) raises :class:`InputError` before it is ever called. Tensor bytes are not copied: each storage becomes
a ``numpy.memmap`` view at its offset in the file, so huge files are read lazily, image by image.

zip: members ``<root>/data.pkl``, ``<root>/data/<key>`` (stored uncompressed), ``<root>/byteorder``.
legacy: consecutive pickles (magic number, protocol 1001, sys info, the object, the storage keys), then per
key in that order an 8-byte little-endian element count followed by the raw bytes.
"""

from __future__ import annotations

import collections
import io
import math
import mmap
import os
import pickle
import struct
import zipfile
from dataclasses import dataclass, field

import numpy as np

from sgg_eval.errors import InputError

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}
BOXLIST_PATH = ("maskrcnn_benchmark.structures.bounding_box", "BoxList")


@dataclass(frozen=True)
class StorageType:
    """Stand-in for ``torch.<X>Storage`` classes: only its dtype matters."""

    name: str
    dtype: np.dtype


STORAGE_TYPES = {name: StorageType(name, np.dtype(dtype)) for name, dtype in STORAGE_DTYPES.items()}


@dataclass(slots=True)
class StorageRef:
    """A storage known by key; its bytes are located after the pickle has been read."""

    key: str
    dtype: np.dtype
    numel: int
    view_offset: int = 0  # legacy storage views: element offset into the root storage
    array: np.ndarray | None = None


@dataclass(slots=True)
class LazyTensor:
    """A tensor as (storage, offset, size, stride); ``numpy()`` returns a view, reading only what is used."""

    storage: StorageRef
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.size

    def numpy(self) -> np.ndarray:
        base = self.storage.array
        if base is None:
            raise InputError(f"storage {self.storage.key} was never located in the file")
        start = self.storage.view_offset + self.offset
        if len(self.size) == 0:
            return np.asarray(base[start])
        if self.size == _contiguous_shape_strides(self.size, self.stride):
            count = math.prod(self.size)
            if start + count > len(base):
                raise InputError(f"tensor of shape {self.size} reads past the end of storage {self.storage.key}")
            return base[start : start + count].reshape(self.size)
        item = base.itemsize
        n_needed = 1 + sum((s - 1) * st for s, st in zip(self.size, self.stride)) if all(self.size) else 0
        if start + n_needed > len(base):
            raise InputError(f"tensor of shape {self.size} reads past the end of storage {self.storage.key}")
        window = base[start : start + max(n_needed, 0)]
        return np.lib.stride_tricks.as_strided(window, shape=self.size, strides=[s * item for s in self.stride],
                                               writeable=False)


def _contiguous_shape_strides(size: tuple[int, ...], stride: tuple[int, ...]) -> tuple[int, ...] | None:
    """``size`` if ``stride`` is the C-contiguous stride of ``size`` (then a reshape is enough), else None."""
    expected, acc = [], 1
    for s in reversed(size):
        expected.append(acc)
        acc *= max(s, 1)
    return size if tuple(reversed(expected)) == tuple(stride) or 0 in size else None


@dataclass
class BoxListStandIn:
    """What a pickled maskrcnn_benchmark ``BoxList`` becomes: its ``__dict__`` (bbox, size, mode, extra_fields)."""

    bbox: object = None
    size: tuple = ()
    mode: str = "xyxy"
    extra_fields: dict = field(default_factory=dict)

    def __setstate__(self, state: dict) -> None:
        if not isinstance(state, dict):
            raise InputError("BoxList state is not a dict")
        self.__dict__.update(state)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    # Called once per tensor of the file (hundreds of thousands): the usual case, tuples of non-negative ints,
    # is accepted with a few C-level checks; anything else goes through the converting, explaining path.
    if (type(storage) is StorageRef and type(size) is tuple and type(stride) is tuple
            and type(storage_offset) is int and len(size) == len(stride) <= 8):
        dims = size + stride
        if not dims or (_ONLY_INT.issuperset(map(type, dims)) and min(dims) >= 0 and storage_offset >= 0):
            return LazyTensor(storage, storage_offset, size, stride)
    return _checked_tensor(storage, storage_offset, size, stride)


_ONLY_INT = frozenset((int,))


def _checked_tensor(storage, storage_offset, size, stride) -> LazyTensor:
    if not isinstance(storage, StorageRef):
        raise InputError("tensor without a storage")
    size, stride, offset = tuple(int(s) for s in size), tuple(int(s) for s in stride), int(storage_offset)
    if len(size) != len(stride) or len(size) > 8 or min((offset, *size, *stride), default=0) < 0:
        raise InputError(f"invalid tensor geometry (size {size}, stride {stride}, offset {offset})")
    return LazyTensor(storage, offset, size, stride)


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, fh, path: str, storages: dict[str, StorageRef]):
        super().__init__(fh)
        self.path, self.storages = path, storages

    def find_class(self, module: str, name: str):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_tensor":
            return _rebuild_tensor
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch" and name in STORAGE_TYPES:
            return STORAGE_TYPES[name]
        if module == "torch" and name == "Size":
            return tuple
        if (module, name) == BOXLIST_PATH:
            return BoxListStandIn
        raise InputError(f"refused to load: the pickle references '{module}.{name}', which a torch tensor file "
                         "never needs (nothing was executed)", path=self.path)

    def persistent_load(self, pid):
        if not (type(pid) is tuple and len(pid) >= 5 and pid[0] == "storage" and type(pid[1]) is StorageType):
            raise InputError(f"unsupported persistent id {pid!r:.80}", path=self.path)
        storage_type, key = pid[1], pid[2] if type(pid[2]) is str else str(pid[2])
        ref = self.storages.get(key)
        if ref is None:
            ref = self.storages[key] = StorageRef(key, storage_type.dtype, int(pid[4]))
        view = pid[5] if len(pid) > 5 else None
        if view is not None:  # legacy view: (view_key, offset, size) into the root storage
            view_key, offset, size = view
            return self.storages.setdefault(str(view_key), StorageRef(key, storage_type.dtype, int(size), int(offset)))
        return ref


def load(path: str | os.PathLike):
    """Load a ``torch.save`` file into plain Python objects, LazyTensors and BoxList stand-ins."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("file not found", path=path)
    if zipfile.is_zipfile(path):
        return _load_zip(path)
    return _load_legacy(path)


# data.pkl is stored uncompressed by torch.save; a compressed one may expand at most this much (zip bombs).
MAX_PICKLE_EXPANSION = 100
MAX_PICKLE_BYTES = 4 << 30


def _read_capped(zf: zipfile.ZipFile, name: str, path: str) -> bytes:
    """A member's bytes, refusing more than the cap whatever its header declares."""
    cap = min(MAX_PICKLE_BYTES, max(64 << 20, MAX_PICKLE_EXPANSION * os.path.getsize(path)))
    with zf.open(name) as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise InputError(f"{name} expands beyond {cap >> 20} MiB (limit for a file of this size)", path=path)
    return data


def _load_zip(path: str):
    storages: dict[str, StorageRef] = {}
    try:
        return _load_zip_members(path, storages)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
        raise InputError(f"corrupt zip file ({type(exc).__name__}: {exc})", path=path) from None
    except (OSError, RuntimeError, ValueError, struct.error) as exc:  # zlib, CRC, truncated reads
        raise InputError(f"unreadable zip member ({type(exc).__name__}: {exc})", path=path) from None


def _load_zip_members(path: str, storages: dict[str, StorageRef]):
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        pkl = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pkl) != 1:
            raise InputError("zip file has no single data.pkl: not a torch file", path=path)
        root = pkl[0][: -len("data.pkl")]
        if f"{root}byteorder" in names and zf.read(f"{root}byteorder").strip() not in (b"little",):
            raise InputError("big-endian torch files are not supported", path=path, field="byteorder")
        obj = _unpickle(_read_capped(zf, pkl[0], path), path, storages)
        infos = {i.filename: i for i in zf.infolist()}
    whole = _map_file(path)
    refs = list({id(r): r for r in storages.values()}.values())
    members = [infos.get(f"{root}data/{ref.key}") for ref in refs]
    for ref, info in zip(refs, members):
        if info is None:
            raise InputError(f"storage member data/{ref.key} missing", path=path)
        if info.compress_type != zipfile.ZIP_STORED:
            raise InputError(f"storage member data/{ref.key} is compressed", path=path)
    if not refs:
        return obj
    # every member's local header at once, from the mapping (a seek + read per tensor is a syscall each)
    header_at = np.array([info.header_offset for info in members], dtype=np.int64)
    sizes = np.array([info.file_size for info in members], dtype=np.int64)
    if header_at.max() + 30 > len(whole):
        raise InputError("corrupt zip local header", path=path)
    header = whole[header_at[:, None] + np.arange(30)].astype(np.int64)
    if not (header[:, :4] == np.frombuffer(b"PK\x03\x04", np.uint8)).all():
        raise InputError("corrupt zip local header", path=path)
    data_at = header_at + 30 + (header[:, 26] | header[:, 27] << 8) + (header[:, 28] | header[:, 29] << 8)
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


def _load_legacy(path: str):
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


def _map_file(path: str) -> np.ndarray:
    """The whole file as a read-only uint8 array backed by one mmap (a plain ndarray: its views are cheap,
    unlike ``np.memmap`` whose every slice runs Python-level hooks)."""
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return np.zeros(0, dtype=np.uint8)
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(mm, dtype=np.uint8)


def _map(whole: np.ndarray, dtype: np.dtype, offset: int, count: int) -> np.ndarray:
    """A read-only view of ``count`` elements at byte ``offset`` of the file mapped once as ``whole``
    (an eval_results file holds thousands of tensors; one mapping each would exhaust file descriptors)."""
    if count == 0:
        return np.zeros(0, dtype=dtype)
    return whole[offset : offset + count * dtype.itemsize].view(dtype.newbyteorder("<"))
