"""Read ``torch.save`` files without torch, safely: zip format (torch >= 1.6) and legacy format (torch < 1.6).

The pickle is read by a restricted unpickler whose ``find_class`` admits only what such files legitimately
reference (tensor rebuild helpers, storage classes, ``collections.OrderedDict``, ``torch.Size`` and the
maskrcnn_benchmark ``BoxList``, mapped onto a stand-in). Anything else (``os.system``, ``builtins.eval``,
...) raises :class:`InputError` before it is ever called. Tensor bytes are not copied: each storage becomes
a view at its offset in the file mapped once, so huge files are read lazily, image by image. The two
layouts (zip, legacy) are read by ``torch_layouts``.
"""

from __future__ import annotations

import collections
import math
import mmap
import os
import pickle
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
    from sgg_eval.formats.torch_layouts import load_legacy, load_zip  # they build on this module's types

    return load_zip(path) if zipfile.is_zipfile(path) else load_legacy(path)


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
