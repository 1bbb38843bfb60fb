"""The pickle of a ``torch.save`` file, read without torch, safely (zip layout, torch >= 1.6, and legacy, < 1.6).

The pickle is read by a restricted unpickler whose ``find_class`` admits only what such files legitimately reference
(tensor rebuild helpers, storage classes, ``collections.OrderedDict``, ``torch.Size`` and the ``BoxList`` of
maskrcnn_benchmark and its forks, ``BOXLIST_PATHS``, mapped onto a stand-in). Anything else (``os.system``,
``builtins.eval``, ...) raises :class:`InputError` before it is ever called. Storages, tensors and BoxLists are recorded
as rows of arrays (``tensor_table``, ``boxlists``), not kept as objects, so the memory a file takes once read is a few
dozen bytes per tensor. Tensor bytes are not copied: a tensor is a view of the file mapped once, so huge files are read
lazily, image by image. The two layouts (zip, legacy) are read by ``layouts``; ``reader.load`` is the way in.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
from dataclasses import dataclass

import numpy as np

from sgg_eval.core import tuning
from sgg_eval.core.errors import InputError
from sgg_eval.formats.torch.boxlists import BoxListStandIn, BoxListTable, stand_in_for
from sgg_eval.formats.torch.bulk_pickle import bulk_unpickle
from sgg_eval.formats.torch.tensor_table import LazyTensor, StorageToken, TensorTable, lazy_tensor_class
from sgg_eval.formats.unpickling import quiet_excepthook

__all__ = ["BoxListStandIn", "LazyTensor", "unpickle"]

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}
# The class paths under which maskrcnn-benchmark's BoxList is pickled, each read as that BoxList (its state is
# checked field by field, ``boxlists``): an allow-list of the codebases known to save it, never a pattern.
BOXLIST_PATHS = (
    ("maskrcnn_benchmark.structures.bounding_box", "BoxList"),  # Scene-Graph-Benchmark.pytorch and its forks
    ("pysgg.structures.bounding_box", "BoxList"),  # PySGG (BGNN), SHTUPLUS/PySGG: VG150 and Open Images V6
    ("sgg_benchmark.structures.bounding_box", "BoxList"),  # SGG-Benchmark (Maelic/SGG-Benchmark)
)


@dataclass(frozen=True)
class StorageType:
    """Stand-in for ``torch.<X>Storage`` classes: only its dtype (a code into ``DTYPES``) matters."""

    name: str
    code: int


STORAGE_TYPES = {name: StorageType(name, code) for code, name in enumerate(STORAGE_DTYPES)}
DTYPES = [np.dtype(d) for d in STORAGE_DTYPES.values()]
_ONLY_INT = frozenset((int,))


# What a torch pickle builds per tensor or per BoxList and, in practice, never refers back to (with the
# BoxList stand-ins and the storage keys).
_DROPPABLE = frozenset((tuple, dict, list, collections.OrderedDict, LazyTensor, StorageToken))


class _RestrictedUnpickler(pickle.Unpickler):
    """Storages and tensors go to ``tensors`` and BoxLists to ``boxlists`` as rows of arrays; the object graph
    holds only small tokens (``LazyTensor``, a BoxList stand-in with its row).

    With ``compact``, every ``tuning.COMPACT_EVERY`` tensors the memo forgets the containers it holds (see
    ``_DROPPABLE``). A pickle memoises every object it builds in case it is referred to again, so for an
    eval_results file the memo alone held ~10 kB per image until the end of the parse. Should the pickle
    refer back to a forgotten object after all, loading fails and :func:`unpickle` reads it again without
    compaction: the result is the same either way."""

    def __init__(self, fh, path: str, *, compact: bool = False):
        super().__init__(fh)
        self.path, self.compact, self.dropped = path, compact, 0
        self.tensors = TensorTable(DTYPES)
        self.boxlists = BoxListTable(self.tensors)
        self._boxlist_class = stand_in_for(self.boxlists)
        self._lazy = lazy_tensor_class(self.tensors)
        self._droppable = _DROPPABLE | {self._boxlist_class, self._lazy}

    def _compact_memo(self) -> None:
        memo, is_key, drop = self.memo.copy(), self.tensors.is_key, self._droppable
        kept = [(i, v) for i, v in memo.items() if type(v) not in drop and not (type(v) is str and is_key(v))]
        self.dropped += len(memo) - len(kept)
        del memo
        self.memo = _memo_holding(kept)

    def find_class(self, module: str, name: str):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return self._rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_tensor":
            return self._rebuild_tensor
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch" and name in STORAGE_TYPES:
            return STORAGE_TYPES[name]
        if module == "torch" and name == "Size":
            return tuple
        if (module, name) in BOXLIST_PATHS:
            return self._boxlist_class
        raise InputError(
            f"refused to load: the pickle references '{module}.{name}', which a torch tensor file "
            "never needs (nothing was executed)",
            path=self.path,
        )

    def persistent_load(self, pid):
        if not (type(pid) is tuple and len(pid) >= 5 and pid[0] == "storage" and type(pid[1]) is StorageType):
            raise InputError(f"unsupported persistent id {pid!r:.80}", path=self.path)
        storage_type, key = pid[1], pid[2] if type(pid[2]) is str else str(pid[2])
        if type(pid[4]) is not int or pid[4] < 0:
            raise InputError(f"storage {key} declares {pid[4]!r:.40} elements", path=self.path)
        root = self.tensors.storage(key, storage_type.code, pid[4])
        view = pid[5] if len(pid) > 5 else None
        if view is not None:  # legacy view: (view_key, offset, size) into the root storage
            try:
                view_key, offset, size = str(view[0]), int(view[1]), int(view[2])
            except (TypeError, ValueError, IndexError):
                raise InputError(f"unsupported storage view {view!r:.80}", path=self.path) from None
            return self.tensors.storage(view_key, storage_type.code, size, root=root, view_offset=offset)
        return root

    def _rebuild_tensor_v2(
        self, storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None
    ):
        # Called once per tensor of the file (hundreds of thousands): the usual case, tuples of non-negative
        # ints, is accepted with a few C-level checks; anything else goes through the converting, explaining path.
        if (
            type(storage) is StorageToken
            and type(size) is tuple
            and type(stride) is tuple
            and type(storage_offset) is int
            and len(size) == len(stride) <= 8
        ):
            dims = size + stride
            if not dims or (_ONLY_INT.issuperset(map(type, dims)) and min(dims) >= 0 and storage_offset >= 0):
                index = self.tensors.tensor(storage, storage_offset, size, stride)
                if self.compact and index % tuning.COMPACT_EVERY == tuning.COMPACT_EVERY - 1:
                    self._compact_memo()
                return self._lazy(index)
        if type(storage) is not StorageToken:
            raise InputError("tensor without a storage")
        try:
            size, stride, offset = tuple(int(s) for s in size), tuple(int(s) for s in stride), int(storage_offset)
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"invalid tensor geometry (size {size!r:.60}, stride {stride!r:.60})") from None
        if len(size) != len(stride) or len(size) > 8 or min((offset, *size, *stride), default=0) < 0:
            raise InputError(f"invalid tensor geometry (size {size}, stride {stride}, offset {offset})")
        return self._lazy(self.tensors.tensor(storage, offset, size, stride))

    def _rebuild_tensor(self, storage, storage_offset, size, stride):
        return self._rebuild_tensor_v2(storage, storage_offset, size, stride)

    def load(self):
        try:
            obj = super().load()
        finally:
            # The memo holds every object of the pickle and, through the bound rebuild methods it memoised, this
            # unpickler: a cycle that only the cyclic collector would free, long after the tables are built.
            self.memo.clear()
        self.boxlists.freeze()
        return obj


class _MemoLoader(pickle.Unpickler):
    def __init__(self, program: bytes, values: list):
        super().__init__(io.BytesIO(program))
        self.values = values

    def persistent_load(self, pid):
        return self.values[pid]


def _memo_holding(entries: list[tuple[int, object]]):
    """A memo with ``entries`` (index, object), to assign to an unpickler's ``memo``. Assigning a dict would
    leave the memo empty (CPython 3.11's setter stores a dict's items into the memo it then discards); a memo
    copied from another unpickler is kept. That unpickler gets the entries by running a tiny pickle that, for
    each, loads the object by persistent id and memoises it at its index."""
    program = bytearray(b"\x80\x02")
    for j, (index, _) in enumerate(entries):
        program += b"J" + struct.pack("<i", j) + b"Qr" + struct.pack("<I", index) + b"0"
    loader = _MemoLoader(bytes(program + b"N."), [v for _, v in entries])
    loader.load()
    return loader.memo


BULK = True  # the fast path first (tests turn it off to exercise the careful reader on usual files)


def unpickle(fh, path: str) -> tuple[object, TensorTable]:
    """The pickle at ``fh``'s position: by ``bulk_pickle`` when the file is a usual one, else by the careful
    reader with memo compaction, and again without it in the rare file that refers back to a forgotten object
    (``_RestrictedUnpickler``); CPython's stray line on a hostile length kept off stderr (``formats.unpickling``)."""
    with quiet_excepthook():
        return _unpickle(fh, path)


def _unpickle(fh, path: str) -> tuple[object, TensorTable]:
    start = fh.tell()
    if BULK:
        tensors = TensorTable(DTYPES)
        obj = bulk_unpickle(fh, STORAGE_TYPES, BOXLIST_PATHS, tensors, BoxListTable(tensors))
        if obj is not None:
            return obj, tensors
        fh.seek(start)
    first = _RestrictedUnpickler(fh, path, compact=True)
    try:
        return first.load(), first.tensors
    except InputError:
        raise
    except Exception:
        if not first.dropped:
            raise
    del first
    fh.seek(start)
    again = _RestrictedUnpickler(fh, path)
    return again.load(), again.tensors
