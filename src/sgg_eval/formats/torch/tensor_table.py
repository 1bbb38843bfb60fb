"""Every storage and tensor of a torch file as columns of arrays, not as Python objects.

An eval_results file of the VG test split holds ~260,000 tensors. As objects (a storage reference, a tensor
with its size and stride tuples, a numpy view per storage) they took ~1 kB each for the whole run, and every
``--jobs`` worker that touched them wrote their reference counts, which copies their pages: the heap grew
with the number of images. Here the unpickler's callbacks append each storage and tensor to flat arrays;
``locate`` turns them into numpy columns once the storages' bytes are found in the mapped file, and
``arrays`` makes views of the file for a batch of tensors. A tensor's geometry is checked against its storage
once, for all tensors at once; a bad one is reported when it is read, with the image and field it belongs to.
"""

from __future__ import annotations

from array import array

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.io.member_crcs import MemberCrcs

_MAX_DIMS = 8
_LIMIT = float(2**62)  # element counts beyond this are refused before any int64 arithmetic could overflow


class StorageToken(int):
    """What the unpickler's ``persistent_load`` returns: a storage's index in its table."""

    __slots__ = ()


class LazyTensor(int):
    """A tensor of a loaded file, as its index in the file's :class:`TensorTable`: ``numpy()`` returns a
    read-only view of the mapped file. An int, so the C unpickler makes one without running Python code; each
    table has its own subclass (:func:`lazy_tensor_class`) carrying ``table``."""

    __slots__ = ()
    table: TensorTable

    @property
    def index(self) -> int:
        return int(self)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.table.shape(int(self))

    def numpy(self) -> np.ndarray:
        return self.table.array(int(self))

    def __repr__(self) -> str:
        return f"LazyTensor({int(self)})"


def lazy_tensor_class(table: TensorTable) -> type[LazyTensor]:
    """The LazyTensor subclass of ``table``'s tensors (the table itself never refers to it, so it pickles)."""
    return type("LazyTensor", (LazyTensor,), {"__slots__": (), "table": table})


class TensorTable:
    """Storages (key, dtype, element count, legacy view offset) and tensors (storage, offset, size, stride)."""

    def __init__(self, dtypes: list[np.dtype]):
        self.dtypes = [np.dtype(d).newbyteorder("<") for d in dtypes]  # a storage's dtype is a code into this
        # storage keys, while the pickle is read: torch numbers storages "0", "1", ... in order; that leading
        # run is kept as a count (no string and dict entry per storage), any other key in a dict
        self._n_sequential = 0
        self._index_of: dict[str, int] = {}
        self._other_keys: list[str] = []
        self.s_dtype, self.s_numel, self.s_view, self.s_root = array("b"), array("q"), array("q"), array("q")
        self.t_storage, self.t_offset, self.t_ndim, self.t_dims = array("q"), array("q"), array("b"), array("q")
        self.whole: np.ndarray | None = None
        self.crcs: MemberCrcs | None = None  # zip layout: each storage member's CRC-32 (``expect_crc``)

    # --- while the pickle is read ------------------------------------------------------------------------
    def storage(
        self, key: str, dtype: int, numel: int, root: StorageToken | None = None, view_offset: int = 0
    ) -> StorageToken:
        """The storage called ``key`` (the first declaration wins, as torch keeps one storage per key); a legacy
        view names its ``root`` storage and starts ``view_offset`` elements into it."""
        index = len(self.s_dtype)
        if not self._other_keys and key == str(index):  # the next of torch's own numbering: a new storage
            self._n_sequential += 1
        else:
            known = self.index(key)
            if known is not None:
                return StorageToken(known)
            self._index_of[key] = index
            self._other_keys.append(key)
        try:
            self.s_numel.append(numel)
            self.s_view.append(view_offset)
        except OverflowError:
            raise InputError(f"storage {key} declares {numel} elements") from None
        self.s_root.append(index if root is None else root)
        self.s_dtype.append(dtype)
        return StorageToken(index)

    def index(self, key: str) -> int | None:
        """The index of the storage called ``key``, None if there is none yet."""
        index = self._index_of.get(key)
        if index is None and key.isascii() and key.isdigit() and int(key) < self._n_sequential and str(int(key)) == key:
            return int(key)
        return index

    def is_key(self, value: str) -> bool:
        """Whether ``value`` may be a storage key (every decimal string counts: dropping one too many from the
        unpickler's memo is safe, see ``unpickler``)."""
        return value in self._index_of or value.isdigit()

    @property
    def count(self) -> int:
        return len(self.s_dtype)

    def key(self, i: int) -> str:
        return str(i) if i < self._n_sequential else self._other_keys[i - self._n_sequential]

    def keys(self) -> list[str]:
        """Every storage's key, by index."""
        return [str(i) for i in range(self._n_sequential)] + self._other_keys

    def tensor(self, storage: StorageToken, offset: int, size: tuple, stride: tuple) -> int:
        """A new tensor's index; its geometry is plain non-negative ints here (the unpickler converts or
        refuses)."""
        n = len(self.t_storage)
        try:
            self.t_dims.extend(size)
            self.t_dims.extend(stride)
            self.t_offset.append(offset)
        except OverflowError:
            del self.t_dims[len(self.t_dims) - len(size) - len(stride) :]
            raise InputError(f"invalid tensor geometry (size {size}, stride {stride}, offset {offset})") from None
        self.t_storage.append(storage)
        self.t_ndim.append(len(size))
        return n

    def fill(
        self,
        index_of: dict[str, int],
        codes: np.ndarray,
        numels: np.ndarray,
        t_storage: np.ndarray,
        t_offset: np.ndarray,
        t_ndim: np.ndarray,
        t_dims: np.ndarray,
    ) -> None:
        """Every storage and tensor at once, into an empty table (``bulk_pickle``): storages by first
        appearance (``index_of``: key -> 0, 1, ... in that order; dtype ``codes``, ``numels``; no legacy views),
        tensors by their storage index, offset, dimension count and dims (each tensor's sizes, then its
        strides). Equivalent to ``storage`` and ``tensor`` called in that order, which check what this one
        trusts its caller to have checked."""
        # every key in a dict until the storages are located (``locate`` drops them): a transient ~100 bytes
        # per storage, while torch's numbering would be checked key by key
        self._n_sequential, self._other_keys, self._index_of = 0, list(index_of), index_of
        self.s_dtype, self.s_numel = codes.astype(np.int8), numels.astype(np.int64)
        self.s_view, self.s_root = np.zeros(len(index_of), np.int64), np.arange(len(index_of), dtype=np.int64)
        self.t_storage, self.t_offset = t_storage.astype(np.int64), t_offset.astype(np.int64)
        self.t_ndim, self.t_dims = t_ndim.astype(np.int8), t_dims.astype(np.int64)

    # --- once the storages are found ---------------------------------------------------------------------
    def roots(self) -> np.ndarray:
        """Each storage's root storage (itself, except for legacy views)."""
        return np.frombuffer(self.s_root, dtype=np.int64)

    def numels(self) -> np.ndarray:
        """Elements each storage declares."""
        return np.frombuffer(self.s_numel, dtype=np.int64)

    def itemsizes(self) -> np.ndarray:
        """Bytes per element of each storage."""
        return np.array([d.itemsize for d in self.dtypes], dtype=np.int64)[np.frombuffer(self.s_dtype, np.int8)]

    def declared_bytes(self) -> np.ndarray:
        """Bytes each storage declares (float64: a hostile count cannot overflow)."""
        return self.numels().astype(np.float64) * self.itemsizes()

    def locate(self, whole: np.ndarray, byte_at: np.ndarray, capacity: np.ndarray) -> None:
        """Storage ``i``'s root starts at byte ``byte_at[i]`` of ``whole`` and holds ``capacity[i]`` elements
        (``byte_at`` -1: never found). Every tensor is then checked against its storage, all at once."""
        self.whole = whole
        s = np.frombuffer(self.t_storage, dtype=np.int64)
        dtype_code = np.frombuffer(self.s_dtype, dtype=np.int8).astype(np.int64)
        itemsize = self.itemsizes()
        ndim = np.frombuffer(self.t_ndim, dtype=np.int8).astype(np.int64)
        dims = np.concatenate([np.frombuffer(self.t_dims, dtype=np.int64), [0, 0]])  # [at + 1] always exists
        dims_at = np.zeros(len(s), dtype=np.int64)
        np.cumsum(2 * ndim[:-1], out=dims_at[1:])
        start = np.frombuffer(self.s_view, dtype=np.int64)[s] + np.frombuffer(self.t_offset, dtype=np.int64)
        needed, contiguous, numel = _extents(ndim, dims, dims_at)
        located = byte_at[s] >= 0
        fits = located & (start.astype(np.float64) + needed <= capacity[s]) & (start < 2**62)
        self.t_code = dtype_code[s].astype(np.int8)
        self.t_byte = np.where(fits, byte_at[s] + start * itemsize[s], -1)
        self.t_nbytes = np.where(fits & contiguous, numel.clip(0, 2**62) * itemsize[s], -1)
        self.t_dims_at, self.t_ndim_np, self.t_dims_np = dims_at, ndim.astype(np.int8), dims
        self.problems = {
            int(t): (
                f"storage {self.key(s[t])} was never located in the file"
                if not located[t]
                else f"tensor of shape {self.shape(int(t))} reads past the end of storage {self.key(s[t])}"
            )
            for t in np.flatnonzero(~fits)[:1000]
        }
        self.t_bad = ~fits
        root_dtype = np.int32 if self.count < 2**31 else np.int64  # kept per tensor: ~4 bytes, not 8
        self.t_root = np.frombuffer(self.s_root, dtype=np.int64)[s].astype(root_dtype)
        self._index_of, self._other_keys = {}, []  # only needed to locate the storages
        del self.t_storage, self.t_offset, self.t_ndim, self.t_dims
        del self.s_numel, self.s_view, self.s_dtype, self.s_root

    def expect_crc(self, byte_at: np.ndarray, nbytes: np.ndarray, crc: np.ndarray) -> None:
        """Storage ``i``'s ``nbytes[i]`` bytes at ``byte_at[i]`` must have CRC-32 ``crc[i]`` (``MemberCrcs``)."""
        self.crcs = MemberCrcs(byte_at, nbytes, crc)

    def other_tensors(self, ids: np.ndarray) -> np.ndarray:
        """A tensor of every storage with a CRC-32 that no tensor of ``ids`` reads (fields the evaluation never
        looks at): checked too, a flipped bit anywhere in the file is found, whatever it belongs to."""
        if self.crcs is None:
            return np.zeros(0, dtype=np.int64)
        others = np.ones(len(self.crcs), dtype=bool)
        others[self.t_root[ids]] = False
        _, first = np.unique(self.t_root, return_index=True)
        return np.sort(first[others[self.t_root[first]]])

    def check(self, ids: np.ndarray) -> None:
        """Raise InputError if a storage of tensors ``ids`` fails its CRC-32 (no-op for the legacy layout,
        which records none)."""
        if self.crcs is not None and len(ids):
            self.crcs.check(self.whole, self.t_root[ids])

    def whole_storages(self, ids: np.ndarray) -> np.ndarray:
        """Per tensor of ``ids`` (below 0: none), its storage when the tensor's bytes are exactly that storage's
        and its CRC-32 is still to check, else -1: the caller may fold the CRC-32 over the tensor's bytes in
        order, while it reads them anyway, and hand it to ``crcs.settle``."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.full(len(ids), -1, dtype=np.int64)
        if self.crcs is not None:
            has = np.flatnonzero(ids >= 0)
            t = ids[has]
            out[has] = self.crcs.to_fold(self.t_root[t].astype(np.int64), self.t_byte[t], self.t_nbytes[t])
        return out

    def shape(self, t: int) -> tuple[int, ...]:
        at, nd = int(self.t_dims_at[t]), int(self.t_ndim_np[t])
        return tuple(self.t_dims_np[at : at + nd].tolist())

    def array(self, t: int) -> np.ndarray:
        """Tensor ``t`` as a read-only view of the file (InputError if it does not fit its storage)."""
        if self.t_bad[t]:
            raise InputError(self.problems.get(t, "tensor reads past the end of its storage"))
        self.check(np.array([t]))
        dtype, byte, nbytes = self.dtypes[self.t_code[t]], int(self.t_byte[t]), int(self.t_nbytes[t])
        shape = self.shape(t)
        if nbytes >= 0:
            return self.whole[byte : byte + nbytes].view(dtype).reshape(shape)
        at, nd = int(self.t_dims_at[t]), len(shape)
        stride = self.t_dims_np[at + nd : at + 2 * nd].tolist()
        span = (1 + sum((n - 1) * st for n, st in zip(shape, stride))) if all(shape) else 0
        window = self.whole[byte : byte + span * dtype.itemsize].view(dtype)
        return np.lib.stride_tricks.as_strided(
            window, shape=shape, strides=[st * dtype.itemsize for st in stride], writeable=False
        )

    def arrays(self, ids: np.ndarray) -> list[np.ndarray | None]:
        """Tensors ``ids`` (a 1-d int64 array) as views; None where ``array`` would raise (the caller names the
        image and field). Contiguous 1-d and 2-d tensors, all of an eval_results file, take the fast path.
        Their CRC-32 is not checked here: the caller checks them (:meth:`check`) before using them (``eval_results``
        overlaps that with validation)."""
        ids = np.asarray(ids, dtype=np.int64)
        nd, at = self.t_ndim_np[ids], self.t_dims_at[ids]
        d0, d1 = self.t_dims_np[at], self.t_dims_np[at + 1]  # meaningful where nd >= 1, nd == 2
        fast = (nd >= 1) & (nd <= 2) & (self.t_nbytes[ids] >= 0)
        whole, dtypes, out = self.whole, self.dtypes, []
        for t, ok, n, a, b, code, byte, nbytes in zip(
            ids.tolist(),
            fast.tolist(),
            nd.tolist(),
            d0.tolist(),
            d1.tolist(),
            self.t_code[ids].tolist(),
            self.t_byte[ids].tolist(),
            self.t_nbytes[ids].tolist(),
        ):
            if ok:
                view = whole[byte : byte + nbytes].view(dtypes[code])
                out.append(view if n == 1 else view.reshape(a, b))
            else:
                out.append(None if self.t_bad[t] else self.array(t))
        return out


def _extents(ndim: np.ndarray, dims: np.ndarray, dims_at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per tensor: elements of its storage it spans (float64, so absurd sizes compare as too large instead of
    overflowing), whether it is C-contiguous (then a reshape of a slice is enough), and its element count."""
    needed = np.zeros(len(ndim), dtype=np.float64)
    contiguous = np.ones(len(ndim), dtype=bool)
    numel = np.ones(len(ndim), dtype=np.int64)
    for nd in np.unique(ndim).tolist():
        rows = np.flatnonzero(ndim == nd)
        if nd == 0:
            continue  # a scalar: one element, contiguous
        block = dims[dims_at[rows, None] + np.arange(2 * nd)]
        size, stride = block[:, :nd], block[:, nd:]
        size_f = size.astype(np.float64)
        count_f = size_f.prod(axis=1)
        expected = np.ones_like(size)
        expected[:, :-1] = np.cumprod(np.maximum(size[:, :0:-1], 1), axis=1)[:, ::-1] if nd > 1 else 1
        empty = (size == 0).any(axis=1)
        contiguous[rows] = (stride == expected).all(axis=1) | empty
        span_f = np.where(empty, 0.0, 1.0 + ((size_f - 1) * stride.astype(np.float64)).sum(axis=1))
        needed[rows] = np.where(contiguous[rows], count_f, span_f)
        too_big = np.maximum(count_f, span_f) >= _LIMIT
        needed[rows[too_big]] = np.inf
        numel[rows] = np.where((too_big | empty)[:, None], 0, size).prod(axis=1)  # no partial product overflows
    return needed, contiguous, numel
