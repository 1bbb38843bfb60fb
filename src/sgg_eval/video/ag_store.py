"""A split store of video frames (``kind = "video-split"``): an Action Genome split, every video with a frame
(each protocol takes the videos it scores, ``video.ag_protocol``), one self-describing, sealed HDF5 file that
``sgg-eval evaluate --ag`` reads back without the pickles::

    attrs   schema_version, kind, split, dataset, source, object_file, object_classes, predicate_classes, counts
    videos/ name [V] ASCII
    images/ image_id [F] int64 (the frame's position), video [F] int32, key [F] ASCII ("<video>/<frame>.png"),
            size [F, 2] float64 (width, height: the person entry's bbox_size; NaN where it has none)
    objects/ boxes [N, 4] float64 (x1 y1 x2 y2, the person first), labels [N] int32, offsets [F + 1] int64
    relations/ rels [R, 3] int32 (subject, object, predicate 1..26), offsets [F + 1] int64

Boxes are float64 because STTran adds ``x + w`` in float64: float32 would move a box by up to 2^-18 pixels at
640 and an IoU exactly at 0.5 across it.

:func:`write_ag_splits` writes a release's stores, as ``sgg-eval split --ag-dir`` and the pipeline's ``video_data``
stage do: ``train.h5`` and ``test.h5`` from the release's object file, and, given the STTran authors'
small-box-filtered file, ``test_filtersmall.h5`` (what STTran scores SGCls and SGDet on). Every file is read and
checked before the first store is written.
"""

from __future__ import annotations

import os

import h5py
import numpy as np

from sgg_eval.core.defaults import AG_SMALL_BOX_STORE
from sgg_eval.core.errors import InputError
from sgg_eval.data.ragged_h5 import check_schema_version, read_attr, read_names, write_attrs
from sgg_eval.io.atomic import atomic_output
from sgg_eval.io.integrity import hdf5_create_options, open_sealed, seal
from sgg_eval.video.ag_annotations import OBJECT_FILE, SPLITS, AGSplit, load_persons, read_ag_split
from sgg_eval.video.ag_names import NUM_OBJECTS, NUM_PREDICATES, AGVocabulary, read_vocabulary

KIND, DATASET = "video-split", "action_genome"
_REWRITE = "write it again with `sgg-eval split --ag-dir`"


def write_ag_store(path: str | os.PathLike, split: AGSplit, vocab: AGVocabulary, object_file: str) -> int:
    """Write ``split`` atomically; returns its frame count. ``object_file``: the object pickle it was read from
    (its name says whether the GT is the small-box-filtered one STTran scores SGCls and SGDet on)."""
    with atomic_output(path) as tmp:
        with h5py.File(tmp, "w", track_order=False, **hdf5_create_options()) as h5:
            write_attrs(h5, {"kind": KIND, "split": split.split, "dataset": DATASET, "source": "Action Genome",
                             "object_file": object_file, "object_classes": list(vocab.objects),
                             "predicate_classes": list(vocab.predicates), "counts": split.counts})  # fmt: skip
            h5.attrs["schema_version"] = 1
            columns = {
                "videos/name": _ascii(split.videos),
                "images/image_id": np.arange(split.num_frames, dtype=np.int64),
                "images/video": split.frame_video.astype(np.int32),
                "images/key": _ascii(split.frame_keys),
                "images/size": split.frame_size.astype(np.float64),
                "objects/boxes": split.boxes.astype(np.float64),
                "objects/labels": split.labels.astype(np.int32),
                "objects/offsets": split.box_offsets.astype(np.int64),
                "relations/rels": split.rels.astype(np.int32),
                "relations/offsets": split.rel_offsets.astype(np.int64),
            }
            packed = {"compression": "gzip", "compression_opts": 1, "shuffle": True}
            for key, data in columns.items():
                big = data.ndim and data.shape[0] > 1024
                h5.create_dataset(key, data=data, track_times=False, **(packed if big else {}))
        seal(tmp)
    return split.num_frames


def write_ag_splits(ag_dir: str, out_dir: str, splits: tuple[str, ...] = SPLITS,
                    small_boxes: str | None = None) -> list[tuple[str, AGSplit]]:  # fmt: skip
    """Write the stores of ``splits`` (and ``test_filtersmall.h5`` with ``small_boxes``) from the release in
    ``ag_dir`` (the folder holding ``annotations/``) into ``out_dir``; returns ``(path, split)`` of each."""
    annotations = os.path.join(ag_dir, "annotations")
    if not os.path.isdir(annotations):
        raise InputError("no annotations/ folder here (Action Genome's release has one)", path=ag_dir)
    vocab = read_vocabulary(annotations)
    jobs = [(s, os.path.join(out_dir, f"{s}.h5"), None) for s in SPLITS if s in splits]
    if small_boxes:
        jobs.append(("test", os.path.join(out_dir, AG_SMALL_BOX_STORE), small_boxes))
    persons = load_persons(annotations)
    read = [(path, read_ag_split(annotations, vocab, split, small, persons=persons), small)
            for split, path, small in jobs]  # fmt: skip
    os.makedirs(out_dir, exist_ok=True)
    for path, split, small in read:
        write_ag_store(path, split, vocab, os.path.basename(small) if small else OBJECT_FILE)
    return [(path, split) for path, split, _ in read]


def _ascii(names: list[str]) -> np.ndarray:
    return np.array([n.encode("ascii") for n in names], dtype=f"S{max([1, *map(len, names)])}")


def read_ag_store(path: str | os.PathLike) -> tuple[AGSplit, AGVocabulary, str]:
    """The split, its vocabulary and its object file, every column checked against the others (shapes, dtypes,
    offsets, label and predicate ranges, indices within their frame, finite boxes)."""
    path = os.fspath(path)
    with open_sealed(path, _REWRITE) as h5:
        check_schema_version(h5, path)
        if read_attr(h5, "kind", path) != KIND:
            raise InputError(f"a {read_attr(h5, 'kind', path)!r} store, not an Action Genome split (video-split)",
                             path=path, field="kind")  # fmt: skip
        vocab = AGVocabulary(read_names(h5, "object_classes", path), read_names(h5, "predicate_classes", path))
        if (len(vocab.objects), len(vocab.predicates)) != (NUM_OBJECTS, NUM_PREDICATES):
            raise InputError("not Action Genome's 36 objects and 26 predicates", path=path, field="object_classes")
        col = _Columns(h5, path)
        videos, keys = col.text("videos/name"), col.text("images/key")
        frame_video = col.array("images/video", "iu", 1)
        frame_size = col.array("images/size", "f", 2, 2)
        boxes, labels = col.array("objects/boxes", "f", 2, 4), col.array("objects/labels", "iu", 1)
        rels = col.array("relations/rels", "iu", 2, 3)
        box_offsets = col.offsets("objects/offsets", len(keys), len(boxes))
        rel_offsets = col.offsets("relations/offsets", len(keys), len(rels))
        split = AGSplit(read_attr(h5, "split", path), videos, keys, frame_video.astype(np.int32),
                        boxes.astype(np.float64), labels.astype(np.int32), box_offsets, rels.astype(np.int32),
                        rel_offsets, frame_size.astype(np.float64),
                        read_attr(h5, "counts", path, as_json=True))  # fmt: skip
        object_file = read_attr(h5, "object_file", path)
    _check(split, path)
    return split, vocab, object_file


class _Columns:
    def __init__(self, h5: h5py.File, path: str):
        self.h5, self.path = h5, path

    def array(self, key: str, kinds: str, ndim: int, width: int | None = None) -> np.ndarray:
        if key not in self.h5 or not isinstance(self.h5[key], h5py.Dataset):
            raise InputError(f"missing dataset: {_REWRITE}", path=self.path, field=key)
        ds = self.h5[key]
        if ds.dtype.kind not in kinds or ds.ndim != ndim or (width is not None and ds.shape[1] != width):
            raise InputError(f"dtype {ds.dtype} shape {list(ds.shape)} is not this store's", path=self.path, field=key)
        try:
            return ds[()]
        except (OSError, RuntimeError, ValueError) as exc:
            raise InputError(f"unreadable ({' '.join(str(exc).split())[:120]})", path=self.path, field=key) from None

    def text(self, key: str) -> list[str]:
        values = self.array(key, "S", 1)
        try:
            return [v.decode("ascii") for v in values]
        except UnicodeDecodeError:
            raise InputError("not ASCII text", path=self.path, field=key) from None

    def offsets(self, key: str, count: int, rows: int) -> np.ndarray:
        offs = self.array(key, "iu", 1).astype(np.int64)
        if len(offs) != count + 1 or offs[0] != 0 or offs[-1] != rows or np.any(np.diff(offs) < 0):
            raise InputError(f"not a non-decreasing [{count + 1}] array from 0 to {rows}", path=self.path, field=key)
        return offs


def _check(split: AGSplit, path: str) -> None:
    def fail(message: str, field: str, frame: int | None = None):
        key = split.frame_keys[frame] if frame is not None else None
        raise InputError(message, path=path, image_id=key, field=field)

    if len(split.frame_video) != split.num_frames:
        fail(f"{len(split.frame_video)} rows for {split.num_frames} frames", "images/video")
    if len(split.frame_size) != split.num_frames:
        fail(f"{len(split.frame_size)} rows for {split.num_frames} frames", "images/size")
    bad = (~np.isnan(split.frame_size) & ~(np.isfinite(split.frame_size) & (split.frame_size > 0))).any(axis=1)
    if bad.any():
        fail("a size that is not a positive number", "images/size", int(np.argmax(bad)))
    if split.num_frames and (split.frame_video.min() < 0 or split.frame_video.max() >= len(split.videos)):
        fail("a video index out of range", "images/video")
    if np.any(np.diff(split.frame_video) < 0):
        fail("frames are not grouped by video", "images/video")
    if len(split.labels) != len(split.boxes):
        fail(f"{len(split.labels)} labels for {len(split.boxes)} boxes", "objects/labels")
    sizes = np.diff(split.box_offsets)
    if np.any(sizes < 2):
        fail("a frame without the person and an object", "objects/offsets", int(np.argmax(sizes < 2)))
    if not np.isfinite(split.boxes).all():
        fail("a coordinate is not finite", "objects/boxes", _frame_of(split.box_offsets, np.isfinite(split.boxes)))
    bad = (split.labels < 1) | (split.labels > NUM_OBJECTS)
    if bad.any():
        fail("a label outside 1..36", "objects/labels", _frame_of(split.box_offsets, ~bad))
    rels, frame_of_rel = split.rels, split.rel_frame
    if np.any(np.diff(split.rel_offsets) == 0):
        fail("a frame without a relation", "relations/offsets", int(np.argmax(np.diff(split.rel_offsets) == 0)))
    local_size = sizes[frame_of_rel][:, None] if len(rels) else np.zeros((0, 1))
    bad = np.any((rels[:, :2] < 0) | (rels[:, :2] >= local_size), axis=1) | (rels[:, 2] < 1) | (rels[:, 2] > 26)
    if bad.any():
        fail("a box index outside its frame, or a predicate outside 1..26", "relations/rels",
             int(frame_of_rel[np.argmax(bad)]))  # fmt: skip


def _frame_of(offsets: np.ndarray, good: np.ndarray) -> int:
    row = int(np.argmax(~good.reshape(len(good), -1).all(axis=1)))
    return int(np.searchsorted(offsets, row, side="right") - 1)
