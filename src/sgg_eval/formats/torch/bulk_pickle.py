"""The fast way through a torch pickle: the C unpickler builds the object graph running almost no Python code,
and the storages, tensors and BoxLists become the reader's tables in bulk afterwards (issue 11).

The careful reader (``unpickler._RestrictedUnpickler``) checks and records each tensor and BoxList in a Python
callback as the pickle is read: ~9 µs per tensor, most of the time of reading an eval_results file. Here a
tensor costs one tiny call (its arguments are kept as they are, its result is an int: a ``LazyTensor``), a
persistent id is kept as its tuple (``tuple`` is the persistent loader), and a BoxList is built by the
unpickler itself (a plain object whose ``__dict__`` receives the state). The columns are then checked all at
once: every tensor's storage id ('storage', a storage class, a string key, a location, an element count),
offset, sizes and strides are plain non-negative ints, and so on.

Only the usual file takes this path. Anything else (a global the careful reader converts, a legacy storage
view, a bad geometry, an odd BoxList, a pickle that does not load) makes :func:`bulk_unpickle` return None,
and the careful reader reads the file again and says what is wrong. The globals admitted are the careful
reader's; nothing else is ever called.
"""

from __future__ import annotations

import collections
import itertools
import operator
import pickle
from itertools import chain

import numpy as np

from sgg_eval.formats.torch.boxlists import BoxListTable
from sgg_eval.formats.torch.tensor_table import TensorTable, lazy_tensor_class

_MAX_DIMS = 8


class _NotUsual(Exception):
    """The pickle needs the careful reader."""


class BulkBoxList:
    """A BoxList as the unpickler builds it here: a plain object holding its state in ``__dict__``. Its
    ``row`` in the table is looked up by identity on the per-file subclass (``table``, ``rows``)."""

    table: BoxListTable
    rows: dict[int, int]
    created: list

    def __new__(cls):
        obj = super().__new__(cls)
        cls.created.append(obj)
        return obj

    @property
    def row(self) -> int:
        return type(self).rows[id(self)]


class _BulkUnpickler(pickle.Unpickler):
    def __init__(self, fh, globals_: dict):
        super().__init__(fh)
        self.globals = globals_
        self.persistent_load = tuple  # the persistent id itself, checked with all the others afterwards

    def find_class(self, module: str, name: str):
        found = self.globals.get((module, name))
        if found is None:
            raise _NotUsual  # refused or converted by the careful reader, which says which
        return found


def bulk_unpickle(
    fh, storage_types: dict, boxlist_paths: tuple[tuple[str, str], ...], tensors: TensorTable, boxlists: BoxListTable
):
    """The object at ``fh``'s position, its storages and tensors filled into the empty ``tensors`` and its
    BoxLists into ``boxlists``; None when the file needs the careful reader (which starts on new tables).
    ``storage_types`` maps torch's storage class names to the careful reader's stand-ins (``code``: dtype)."""
    records: list[tuple] = []
    append, count = records.append, itertools.count()
    lazy = lazy_tensor_class(tensors)

    def rebuild(*args):  # torch._utils._rebuild_tensor_v2: once per tensor, so as little as possible
        append(args)
        return lazy(next(count))

    boxlist_class = type("BoxList", (BulkBoxList,), {"table": boxlists, "rows": {}, "created": []})
    globals_ = {
        ("torch._utils", "_rebuild_tensor_v2"): rebuild,
        ("collections", "OrderedDict"): collections.OrderedDict,
        **dict.fromkeys(boxlist_paths, boxlist_class),
        **{("torch", name): t for name, t in storage_types.items()},
    }
    try:
        obj = _BulkUnpickler(fh, globals_).load()
        _fill_tensors(tensors, records, storage_types)
    except Exception:  # noqa: BLE001 - whatever is unusual (or broken), the careful reader explains
        return None
    del records
    created = boxlist_class.created
    if not boxlists.fill([b.__dict__ for b in created]):
        return None
    boxlists.freeze()
    boxlist_class.rows = {id(b): row for row, b in enumerate(created)}
    boxlist_class.created = None  # the BoxLists live as long as the object graph, not as long as their class
    return obj


def _fill_tensors(tensors: TensorTable, records: list[tuple], storage_types: dict) -> None:
    """Every tensor's rebuild arguments (storage id, offset, size, stride, ...), checked and stored at once:
    a few passes at C speed over each column (~45,000 tensors per 5,000 PredCls images)."""
    if not records:
        return
    if max(map(len, records)) > 7:  # torch's (storage, offset, size, stride, requires_grad, hooks[, meta])
        raise _NotUsual
    pids, offsets, sizes, strides = list(zip(*records))[:4]  # ValueError (caught) if any has fewer than 4
    lengths = set(map(len, pids))
    if set(map(type, pids)) != {tuple} or not lengths <= {5, 6}:
        raise _NotUsual
    columns = list(zip(*pids))
    tags, types, keys, numels = columns[0], columns[1], columns[2], columns[4]
    if 6 in lengths and set(map(operator.itemgetter(-1), pids)) != {None} | ({5} if 5 in lengths else set()):
        raise _NotUsual  # a legacy storage view (its sixth item): read by the careful reader
    if (
        set(tags) != {"storage"}
        or set(map(type, keys)) != {str}
        or not set(map(id, types)) <= set(map(id, storage_types.values()))
    ):  # the careful reader's classes
        raise _NotUsual
    ndim = list(map(len, sizes))
    if ndim != list(map(len, strides)) or max(ndim) > _MAX_DIMS:
        raise _NotUsual
    # per tensor, its sizes then its strides (TypeError, caught by the caller, for anything but sequences)
    dims = _non_negative(list(chain.from_iterable(map(operator.add, sizes, strides))))
    numels, offsets = _non_negative(numels), _non_negative(offsets)
    codes = np.fromiter(map(operator.attrgetter("code"), types), dtype=np.int8, count=len(types))
    index = dict(zip(keys, range(len(keys))))
    if len(index) == len(keys):  # a storage per tensor (torch's own files): in order
        storage, first = np.arange(len(keys)), slice(None)
    else:  # shared storages: numbered by first appearance, the first declaration wins
        index = {}
        storage = np.fromiter(map(lambda k: index.setdefault(k, len(index)), keys), dtype=np.int64, count=len(keys))
        first = np.unique(storage, return_index=True)[1]
    tensors.fill(index, codes[first], numels[first], storage, offsets, np.array(ndim, dtype=np.int8), dims)


def _non_negative(values) -> np.ndarray:
    """``values`` as int64, each a plain int (not a bool, float, ...) in [0, 2^63), else ``_NotUsual``
    (OverflowError from numpy past 2^63 - 1)."""
    if not set(map(type, values)) <= {int}:
        raise _NotUsual
    out = np.array(values, dtype=np.int64)
    if len(out) and out.min() < 0:
        raise _NotUsual
    return out
