"""maskrcnn_benchmark ``BoxList`` objects of a pickle, recorded as rows of a table instead of kept as objects.

A pickled BoxList is a class reference plus its ``__dict__`` (``bbox``, ``size``, ``mode``, ``extra_fields``).
The unpickler builds each one as a :class:`BoxListStandIn` whose ``__setstate__`` records that state here:
the tensor of each field (an index into the file's ``TensorTable``), the image size and the box mode. The
stand-in itself keeps only its row, so once a reader has the rows, the object graph can go. Anything odd (a
missing field, a field that is not a tensor, a bad size or mode) is recorded, not raised: the reader reports
it with the image it belongs to.
"""

from __future__ import annotations

import operator
from array import array
from itertools import chain

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.formats.torch.tensor_table import LazyTensor, TensorTable

MISSING, NOT_A_TENSOR = -1, -2
MODES = ("xyxy", "xywh")  # mode codes; anything else is code len(MODES), with its value kept for the message


class BoxListTable:
    """Rows of BoxLists: ``bbox`` and ``fields[row, column]`` hold tensor indices (or MISSING / NOT_A_TENSOR),
    ``columns`` maps extra-field names to columns; ``width``/``height`` the image size (NaN where it is not
    a valid (width, height)), ``mode`` a code into ``MODES``. ``odd`` keeps, for messages, what is behind an
    odd code: the repr of a bad size or mode, the type of a field that is not a tensor (text only, so the
    table is plain data)."""

    def __init__(self, tensors: TensorTable):
        self.tensors = tensors
        self.columns: dict[str, int] = {}
        self._layouts: dict[tuple, list[int]] = {}  # the field names of a BoxList -> their columns
        self._bbox, self._mode, self._width, self._height = array("q"), array("b"), array("d"), array("d")
        self._at, self._col, self._value = array("q"), array("q"), array("q")
        self.odd: dict[tuple[int, str], str] = {}  # (row, what) -> repr or type name, for messages

    @classmethod
    def empty(cls) -> BoxListTable:
        table = cls(TensorTable([]))
        table.freeze()
        return table

    def record(self, state: dict) -> int:
        """Record one BoxList's state; returns its row."""
        row = len(self._bbox)
        self._bbox.append(self._tensor(row, "bbox", state.get("bbox")))
        mode = state.get("mode", "xyxy")
        code = MODES.index(mode) if mode in MODES else len(MODES)
        if code == len(MODES):
            self.odd[row, "mode"] = repr(mode)[:60]
        self._mode.append(code)
        width, height = _size(state.get("size", ()))
        if width != width:
            self.odd[row, "size"] = repr(state.get("size"))[:60]
        self._width.append(width)
        self._height.append(height)
        fields = state.get("extra_fields")
        self._at.append(len(self._col))
        if isinstance(fields, dict) and fields:
            names = tuple(fields)
            cols = self._layouts.get(names)
            if cols is None:
                cols = self._layouts[names] = [self.columns.setdefault(str(n), len(self.columns)) for n in names]
            self._col.extend(cols)
            self._value.extend([int(v) if _is_tensor(v) else self._tensor(row, str(n), v) for n, v in fields.items()])
        return row

    def fill(self, states: list) -> bool:
        """Record every BoxList at once (``bulk_pickle``), as ``record`` called on each would, when every state
        is the usual one: a dict with a tensor ``bbox``, a ``size`` of two ints >= 0, a known ``mode`` and
        ``extra_fields``, a dict of tensors named by strings. False (nothing recorded) for anything else:
        the caller then reads the file with ``record``, which keeps what is odd for the messages."""
        if len(self._bbox) or not all(map(dict.__instancecheck__, states)):
            return False
        get = [operator.itemgetter(name) for name in ("bbox", "size", "mode", "extra_fields")]
        try:
            bbox, size, mode, fields = (list(map(g, states)) for g in get)
        except KeyError:
            return False
        sizes = list(chain.from_iterable(size))
        if not (
            all(map(_is_tensor, bbox))
            and set(map(type, size)) <= {tuple}
            and set(map(len, size)) <= {2}
            and set(map(type, sizes)) <= {int}
            and min(sizes, default=0) >= 0
            and set(map(type, mode)) <= {str}
            and set(mode) <= set(MODES)
            and set(map(type, fields)) <= {dict}
        ):
            return False
        layouts = list(map(tuple, fields))
        distinct = list(dict.fromkeys(layouts))
        values = list(chain.from_iterable(map(dict.values, fields)))
        if not (set(map(type, chain.from_iterable(distinct))) <= {str} and all(map(_is_tensor, values))):
            return False
        for names in distinct:  # columns numbered as ``record`` numbers them: by first appearance
            self._layouts[names] = [self.columns.setdefault(n, len(self.columns)) for n in names]
        counts = np.fromiter(map(len, layouts), dtype=np.int64, count=len(layouts))
        self._bbox = array("q", bbox)
        self._mode = array("b", [MODES.index(m) for m in mode])
        wh = np.array(sizes, dtype=np.float64).reshape(-1, 2)
        self._width, self._height = array("d", wh[:, 0].tobytes()), array("d", wh[:, 1].tobytes())
        self._at = array("q", (np.cumsum(counts) - counts).tobytes())
        self._col = array("q", chain.from_iterable(map(self._layouts.__getitem__, layouts)))
        self._value = array("q", values)
        return True

    def _tensor(self, row: int, name: str, value) -> int:
        if _is_tensor(value):
            return int(value)
        if value is None and name == "bbox":
            return MISSING
        self.odd[row, name] = type(value).__name__
        return NOT_A_TENSOR

    def freeze(self) -> None:
        """The recorded rows as numpy columns (called once the pickle is read)."""
        rows = len(self._bbox)
        self.bbox = np.frombuffer(self._bbox, dtype=np.int64).copy()
        self.mode = np.frombuffer(self._mode, dtype=np.int8).copy()
        self.width = np.frombuffer(self._width, dtype=np.float64).copy()
        self.height = np.frombuffer(self._height, dtype=np.float64).copy()
        at = np.frombuffer(self._at, dtype=np.int64)
        counts = np.diff(np.append(at, len(self._col)))
        self.fields = np.full((rows, max(len(self.columns), 1)), MISSING, dtype=np.int64)
        self.fields[np.repeat(np.arange(rows), counts), np.frombuffer(self._col, dtype=np.int64)] = np.frombuffer(
            self._value, dtype=np.int64
        )
        del self._bbox, self._mode, self._width, self._height, self._at, self._col, self._value, self._layouts

    def column(self, name: str) -> np.ndarray:
        """Tensor indices of extra field ``name`` for every row (MISSING where a BoxList lacks it)."""
        col = self.columns.get(name)
        return self.fields[:, col] if col is not None else np.full(len(self.bbox), MISSING, dtype=np.int64)

    def problem(self, row: int, name: str, code: int) -> str:
        """Why field ``name`` of ``row`` (tensor code ``code``) cannot be read."""
        if code == MISSING:
            return "missing BoxList field"
        if code == NOT_A_TENSOR:
            return f"expected a tensor, got {self.odd.get((row, name), 'something else')}"
        return self.tensors.problems.get(code, "tensor reads past the end of its storage")


_is_tensor = LazyTensor.__instancecheck__  # isinstance(value, LazyTensor), mapped over many values at C speed


def _size(size) -> tuple[float, float]:
    """(width, height) of a BoxList's ``size``; (0, 0) when absent; NaN when it is not two finite numbers >= 0."""
    if type(size) is tuple and len(size) == 2 and type(size[0]) is int and type(size[1]) is int:  # the usual
        return (float(size[0]), float(size[1])) if size[0] >= 0 and size[1] >= 0 else (float("nan"),) * 2
    if not size:
        return 0.0, 0.0
    if (
        isinstance(size, (tuple, list))
        and len(size) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in size)
    ):
        w, h = float(size[0]), float(size[1])
        if np.isfinite(w) and np.isfinite(h) and w >= 0 and h >= 0:
            return float(int(w)), float(int(h))
    return float("nan"), float("nan")


class BoxListStandIn:
    """What a pickled ``BoxList`` becomes: its row in the loading file's :class:`BoxListTable` (``table``,
    set on the per-file subclass the unpickler makes)."""

    __slots__ = ("row",)
    table: BoxListTable

    def __setstate__(self, state) -> None:
        if not isinstance(state, dict):
            raise InputError("BoxList state is not a dict")
        self.row = self.table.record(state)


def stand_in_for(table: BoxListTable) -> type:
    """A BoxList stand-in class recording into ``table`` (the unpickler's ``find_class`` returns it)."""
    return type("BoxListStandIn", (BoxListStandIn,), {"__slots__": (), "table": table})
