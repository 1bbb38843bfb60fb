"""Ragged per-image arrays in HDF5, CSR style: the shape both of our stores share.

Each *segment* (objects, relations, pairs, ...) is a set of row-aligned datasets plus an offsets array
``[I + 1]``: the rows of image ``i`` are ``offsets[i]:offsets[i + 1]``. Writing appends in flushes so memory
stays bounded; reading a batch of consecutive images is one slice per dataset. Datasets are chunked,
gzip-compressed and written without timestamps, so the same content gives byte-identical files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import h5py
import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.image_ids import MAX_ID_CHARS
from sgg_eval.io.atomic import ensure_space

SCHEMA_VERSION = 1
_FLUSH_ROWS = 1 << 16
IMAGE_ID = "image_id"  # the per-image id column: int64, or ASCII text when the dataset's ids are text (GQA)


@dataclass(frozen=True)
class Column:
    """One row-aligned dataset of a segment: its name, dtype and the shape of one row."""

    name: str
    dtype: str
    row_shape: tuple[int, ...] = ()


class RaggedWriter:
    """Append per-image rows to the segments of an open HDF5 file.

    ``segments`` maps a segment name to its columns; ``per_image`` lists the per-image scalar columns.
    """

    def __init__(self, h5: h5py.File, segments: dict[str, list[Column]], per_image: list[Column]):
        self.h5, self.segments, self.per_image = h5, segments, per_image
        self._pending: dict[str, list] = {}
        self._pending_rows = 0  # rows over every pending block (flushed at _FLUSH_ROWS)
        self._offsets = {seg: [0] for seg in segments}
        self._images: dict[str, list] = {c.name: [] for c in per_image}
        for seg, cols in segments.items():
            for col in cols:
                chunk_rows = max(
                    1,
                    min(
                        _FLUSH_ROWS,
                        (1 << 20) // max(1, np.dtype(col.dtype).itemsize * int(np.prod(col.row_shape or (1,)))),
                    ),
                )
                h5.create_dataset(
                    f"{seg}/{col.name}",
                    shape=(0, *col.row_shape),
                    maxshape=(None, *col.row_shape),
                    dtype=col.dtype,
                    chunks=(chunk_rows, *col.row_shape),
                    compression="gzip",
                    compression_opts=1,
                    shuffle=True,
                    track_times=False,
                )
                self._pending[f"{seg}/{col.name}"] = []

    def append(self, scalars: dict, rows: dict[str, dict[str, np.ndarray]]) -> None:
        """Add one image: its scalar values and, per segment, its row arrays (all of equal length)."""
        for col in self.per_image:
            self._images[col.name].append(scalars[col.name])
        for seg, cols in self.segments.items():
            lengths = {len(rows[seg][c.name]) for c in cols}
            if len(lengths) != 1:
                raise ValueError(f"segment {seg}: columns of unequal length {sorted(lengths)}")
            self._offsets[seg].append(self._offsets[seg][-1] + lengths.pop())
            for col in cols:
                block = np.asarray(rows[seg][col.name], dtype=col.dtype).reshape(-1, *col.row_shape)
                self._pending[f"{seg}/{col.name}"].append(block)
                self._pending_rows += len(block)
        if self._pending_rows >= _FLUSH_ROWS:  # a running count: summing the pending blocks was quadratic
            self._flush()

    def _flush(self) -> None:
        ensure_space(self.h5.filename, sum(a.nbytes for parts in self._pending.values() for a in parts))
        for key, parts in self._pending.items():
            if not parts:
                continue
            block = np.concatenate(parts)
            ds = self.h5[key]
            start = ds.shape[0]
            ds.resize(start + len(block), axis=0)
            ds[start:] = block
            parts.clear()
        self._pending_rows = 0

    def close(self) -> int:
        """Flush and write offsets and per-image columns; returns the number of images written."""
        self._flush()
        ensure_space(
            self.h5.filename,
            8 * sum(len(o) for o in self._offsets.values()) + 8 * sum(len(v) for v in self._images.values()),
        )
        for seg, offs in self._offsets.items():
            self.h5.create_dataset(f"{seg}/offsets", data=np.asarray(offs, dtype=np.int64), track_times=False)
        for col in self.per_image:
            values = self._images[col.name]
            data = _id_column(values) if col.name == IMAGE_ID else np.asarray(values, dtype=col.dtype)
            self.h5.create_dataset(f"images/{col.name}", data=data, track_times=False)
        return len(next(iter(self._offsets.values()))) - 1


def _id_column(ids: list) -> np.ndarray:
    """Image ids as stored: int64 when every id is an integer (VG150, PSG), else fixed-width ASCII bytes (GQA's
    ids are text, some not numbers: ``n161313``). Each id was checked by ``image_ids.check_image_id``."""
    if all(not isinstance(i, str) for i in ids):
        return np.asarray(ids, dtype=np.int64)
    if not all(isinstance(i, str) for i in ids):
        raise ValueError("image ids mix integers and text")
    return np.array([i.encode("ascii") for i in ids], dtype=f"S{max(1, *map(len, ids))}")


def write_attrs(h5: h5py.File, attrs: dict) -> None:
    """Store attributes; dicts, lists and tuples as JSON text so any HDF5 tool can read them."""
    h5.attrs["schema_version"] = SCHEMA_VERSION
    for key, value in attrs.items():
        h5.attrs[key] = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list, tuple)) else value


_KINDS = {str: "text", bool: "true or false", int: "an integer"}


def read_attr(h5: h5py.File, key: str, path: str, *, as_json: bool = False, kind: type = str):
    """Attribute ``key``: a scalar of ``kind`` (text by default; ``bool`` for flags, ``int`` for numbers, a bool
    not counting as one), or with ``as_json`` the JSON document its text holds. Anything else is refused:
    ``bool("false")`` is True, so a flag stored as text would silently read as set."""
    if key not in h5.attrs:
        raise InputError("missing attribute", path=path, field=key)
    try:
        value = h5.attrs[key]
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise InputError(f"unreadable attribute ({' '.join(str(exc).split())[:80]})", path=path, field=key) from None
    if isinstance(value, bytes):
        try:
            value = value.decode()
        except UnicodeDecodeError:
            raise InputError("attribute is not UTF-8 text", path=path, field=key) from None
    if isinstance(value, np.generic):
        value = value.item()
    want = str if as_json else kind
    if type(value) is not want:
        raise InputError(
            f"attribute holds {type(value).__name__} {value!r:.40}, expected {_KINDS[want]}", path=path, field=key
        )
    if not as_json:
        return value
    try:
        return json.loads(value)
    except (TypeError, ValueError, RecursionError):
        raise InputError("attribute is not valid JSON", path=path, field=key) from None


def read_names(h5: h5py.File, key: str, path: str) -> tuple[str, ...]:
    """A JSON list of class names (``object_classes``, ``predicate_classes``): non-empty, distinct strings."""
    names = read_attr(h5, key, path, as_json=True)
    if not (isinstance(names, list) and names and all(type(n) is str for n in names) and len(set(names)) == len(names)):
        raise InputError("expected a non-empty list of distinct names", path=path, field=key)
    return tuple(names)


def check_schema_version(h5: h5py.File, path: str) -> None:
    """The store's ``schema_version`` must be the one this sgg-eval writes (an integer, not a bool)."""
    version = read_attr(h5, "schema_version", path, kind=int)
    if version != SCHEMA_VERSION:
        raise InputError(
            f"schema version {version!r:.40}, this sgg-eval reads {SCHEMA_VERSION}", path=path, field="schema_version"
        )


class RaggedReader:
    """Read consecutive images of the segments written by :class:`RaggedWriter`."""

    def __init__(self, h5: h5py.File, path: str, segments: dict[str, list[str]], per_image: list[str]):
        self.h5, self.path, self.segments = h5, path, segments
        self._columns: dict[str, h5py.Dataset] = {}
        check_schema_version(h5, path)
        self.images = {name: self._vector(f"images/{name}") for name in per_image}
        self.offsets = {seg: self._vector(f"{seg}/offsets") for seg in segments}
        self.num_images = len(self.images[per_image[0]])
        for name, values in self.images.items():
            if len(values) != self.num_images:
                raise InputError(
                    f"shape {list(values.shape)}, expected [{self.num_images}]", path=path, field=f"images/{name}"
                )
        if IMAGE_ID in self.images and len(np.unique(self.images[IMAGE_ID])) != self.num_images:
            raise InputError("image ids are not unique", path=path, field="images/image_id")
        for seg, offs in self.offsets.items():
            if len(offs) != self.num_images + 1 or offs[0] != 0 or np.any(np.diff(offs) < 0):
                raise InputError(
                    "offsets are not a non-decreasing [images+1] array from 0", path=path, field=f"{seg}/offsets"
                )
            for col in segments[seg]:
                shape = self._dataset(f"{seg}/{col}").shape
                if not shape or shape[0] != offs[-1]:
                    raise InputError(
                        f"shape {list(shape)}: {offs[-1]} rows expected (from the offsets)",
                        path=path,
                        field=f"{seg}/{col}",
                    )

    def _vector(self, key: str) -> np.ndarray:
        """A per-image column or an offsets array: one-dimensional integers (``image_id``, sizes, offsets); image
        ids may be text instead (``image_ids.check_image_id``)."""
        ds = self._dataset(key)
        if key == f"images/{IMAGE_ID}" and ds.ndim == 1 and ds.dtype.kind == "S":
            ids = self._read(ds, key, ())
            chars = ids.view(np.uint8).reshape(len(ids), ds.dtype.itemsize)
            digit, lower = (chars >= 0x30) & (chars <= 0x39), (chars >= 0x61) & (chars <= 0x7A)
            if ds.dtype.itemsize > MAX_ID_CHARS or np.any((chars != 0) & ~digit & ~lower):
                message = f"an image id is not text of at most {MAX_ID_CHARS} lowercase letters and digits"
                raise InputError(message, path=self.path, field=key)
            filled = chars != 0
            if len(ids) and not (filled[:, 0].all() and not np.any(filled[:, 1:] & ~filled[:, :-1])):
                raise InputError("an empty image id, or one with a NUL byte", path=self.path, field=key)
            return ids
        if ds.ndim != 1 or ds.dtype.kind not in "iu":
            raise InputError(
                f"dtype {ds.dtype} shape {list(ds.shape)}, expected a one-dimensional integer array",
                path=self.path,
                field=key,
            )
        return self._read(ds, key, ())

    def _read(self, ds, key: str, index) -> np.ndarray:
        """``ds[index]``, libhdf5's errors (a chunk its filter cannot decode) named with this file and field."""
        try:
            return ds[index]
        except (OSError, RuntimeError, ValueError) as exc:
            raise InputError(f"unreadable ({' '.join(str(exc).split())[:120]})", path=self.path, field=key) from None

    def _dataset(self, key: str) -> h5py.Dataset:
        if key not in self.h5:
            raise InputError("missing dataset", path=self.path, field=key)
        return self.h5[key]

    def load(self) -> None:
        """Read every column into memory (read-only arrays); the reader no longer touches the file."""
        for seg, cols in self.segments.items():
            for col in cols:
                values = self._read(self._dataset(f"{seg}/{col}"), f"{seg}/{col}", ())
                values.flags.writeable = False  # images are views into it: a change would leak into others
                self._columns[f"{seg}/{col}"] = values

    def _column(self, key: str) -> h5py.Dataset | np.ndarray:
        """The dataset ``key`` (or its rows, once loaded), one object per reader: HDF5's cache of decompressed
        chunks belongs to the dataset object, so a new one per block decompressed its 64k-row chunk again
        (~2 ms per column)."""
        column = self._columns.get(key)
        if column is None:
            column = self._columns[key] = self.h5[key]
        return column

    def read_blocks(self, start: int, stop: int) -> tuple[dict, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Images ``start:stop`` as whole blocks: per-image columns ``[n]``, every segment column's rows
        (one slice per dataset) and each segment's offsets rebased to 0 (``[n + 1]``)."""
        scalars = {name: vals[start:stop] for name, vals in self.images.items()}
        blocks, offsets = {}, {}
        for seg, cols in self.segments.items():
            offs = self.offsets[seg][start : stop + 1]
            offsets[seg] = offs - offs[0]
            for col in cols:
                blocks[col] = self._read(self._column(f"{seg}/{col}"), f"{seg}/{col}", slice(offs[0], offs[-1]))
        return scalars, blocks, offsets

    def split(self, scalars: dict, blocks: dict, offsets: dict) -> list[dict[str, np.ndarray]]:
        """Per-image dicts (views into the blocks) from :meth:`read_blocks`' output."""
        n = len(next(iter(scalars.values())))
        out = [{name: vals[i] for name, vals in scalars.items()} for i in range(n)]
        for seg, cols in self.segments.items():
            offs = offsets[seg]
            for col in cols:
                block = blocks[col]
                for k, image in enumerate(out):
                    image[col] = block[offs[k] : offs[k + 1]]
        return out
