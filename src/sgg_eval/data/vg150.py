"""Reader for the real VG150 split files (docs/definitions.md §6), faithful to Scene-Graph-Benchmark.pytorch's loader.

Files: ``VG-SGG-with-attri.h5`` (boxes, labels, relations, split codes), ``VG-SGG-dicts-with-attri.json``
(class and predicate names) and ``image_data.json`` (width/height per image).

Rules reproduced exactly:
- ``split`` code 2 is test, 0 is train+val; images whose ``img_to_first_box`` or ``img_to_first_rel`` is -1
  are dropped in every split; validation is the first ``num_val_im`` (5,000) remaining split-0 images,
  train the rest.
- ``image_data.json`` lists 108,077 images; ids 1592, 1722, 4616, 4617 (corrupted files) are dropped and
  h5 row ``i`` belongs to the ``i``-th remaining entry.
- Boxes are ``(cx, cy, w, h)`` at longest side 1024 in an int32 array, each value in ``[0, 1024]`` (the
  split's conversion script clamps every box to the scaled image; a value outside is refused, not clipped
  away silently); the reference converts them in place,
  so ``x1 = trunc(cx - w / 2)`` and ``x2 = x1 + w``; then ``xyxy / 1024 * max(W, H)`` as float, cast to
  float32 and clipped to ``[0, W - 1] x [0, H - 1]``.
- Classes and predicates are 1-based; duplicate relation rows are kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import h5py
import numpy as np

from sgg_eval.core.defaults import BOX_SCALE, NUM_VAL_IM, SPLIT_KEY
from sgg_eval.core.errors import InputError
from sgg_eval.data.types import GTImage, SplitMeta, Vocabulary, clip_to_image
from sgg_eval.data.vg150_json import load_image_sizes, load_vocab
from sgg_eval.io.processes import run_isolated

SPLITS = ("train", "val", "test")
_H5_KEYS = (
    "split",
    "img_to_first_box",
    "img_to_last_box",
    "img_to_first_rel",
    "img_to_last_rel",
    "labels",
    "relationships",
    "predicates",
)


@dataclass(frozen=True)
class VG150Files:
    """Paths of the three VG150 files."""

    h5: str
    dicts: str
    image_data: str

    @classmethod
    def in_dir(cls, root: str) -> VG150Files:
        return cls(
            os.path.join(root, "VG-SGG-with-attri.h5"),
            os.path.join(root, "VG-SGG-dicts-with-attri.json"),
            os.path.join(root, "image_data.json"),
        )


# Seconds libhdf5 may take to read the VG150 h5 (~2 s for the real 170 MB file), plus a second per 20 MB: it
# has no checksums, and a damaged B-tree can make libhdf5 loop forever.
H5_READ_SECONDS, H5_READ_BYTES_PER_SECOND = 10.0, 20e6
# key -> (rank, columns of a row or None): every array is integers ([n, 1] columns may also be [n])
_H5_SHAPES = {
    "split": (1, None),
    "img_to_first_box": (1, None),
    "img_to_last_box": (1, None),
    "img_to_first_rel": (1, None),
    "img_to_last_rel": (1, None),
    "labels": (2, 1),
    "relationships": (2, 2),
    "predicates": (2, 1),
    "boxes": (2, 4),
}


def _read_h5(path: str, box_scale: int, split_key: str = SPLIT_KEY) -> dict[str, np.ndarray]:
    """The arrays the reader uses, read in a child process with a time limit (see ``H5_READ_SECONDS``); the split
    codes from ``split_key`` (e.g. ``split_GLIPunseen``), under ``"split"``."""
    if not os.path.isfile(path):
        raise InputError("file not found" if not os.path.exists(path) else "not a file", path=path)
    limit = H5_READ_SECONDS + os.path.getsize(path) / H5_READ_BYTES_PER_SECOND
    try:
        arrays = run_isolated(_read_h5_now, path, box_scale, split_key, timeout=limit)
    except TimeoutError:
        raise InputError(
            f"libhdf5 did not finish reading it in {limit:.0f} s: the file's structure is corrupt", path=path
        ) from None
    for key, values in arrays.items():
        rank, cols = _H5_SHAPES["boxes" if key.startswith("boxes_") else key]
        key = split_key if key == "split" else key  # the file's name for it, in messages
        flat_ok = rank == 2 and cols == 1 and values.ndim == 1
        shaped = values.ndim == rank and (cols is None or values.shape[1] == cols)
        if values.dtype.kind not in "iu" or not (flat_ok or shaped):
            raise InputError(
                f"dtype {values.dtype} shape {list(values.shape)}, expected integers of rank {rank}"
                + (f" with {cols} columns" if cols else ""),
                path=path,
                field=key,
            )
    return arrays


def _read_h5_now(path: str, box_scale: int, split_key: str = SPLIT_KEY) -> dict[str, np.ndarray]:
    keys = {k: split_key if k == "split" else k for k in (*_H5_KEYS, f"boxes_{box_scale}")}  # ours -> the file's
    try:
        with h5py.File(path, "r") as h5:
            missing = [k for k in keys.values() if k not in h5]
            if missing:
                raise InputError("missing h5 key", path=path, field=missing[0])
            not_arrays = [k for k in keys.values() if not isinstance(h5[k], h5py.Dataset)]
            if not_arrays:
                raise InputError("not a dataset", path=path, field=not_arrays[0])
            return {ours: h5[theirs][()] for ours, theirs in keys.items()}
    except (OSError, RuntimeError, ValueError, KeyError, TypeError) as exc:  # libhdf5's errors on a damaged file
        raise InputError(f"not a readable HDF5 file ({' '.join(str(exc).split())[:160]})", path=path) from None


def split_image_rows(
    split_codes: np.ndarray, first_box: np.ndarray, first_rel: np.ndarray, split: str, num_val_im: int = NUM_VAL_IM
) -> np.ndarray:
    """h5 row indices of ``split`` following the reference's masks and validation carve-out."""
    if split not in SPLITS:
        raise InputError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}", field="split")
    if not isinstance(num_val_im, (int, np.integer)) or num_val_im < 0:
        raise InputError(f"num_val_im = {num_val_im} must be a non-negative integer", field="num_val_im")
    mask = (split_codes == (2 if split == "test" else 0)) & (first_box >= 0) & (first_rel >= 0)
    rows = np.flatnonzero(mask)
    if split == "val":
        return rows[:num_val_im]
    if split == "train":
        if len(rows) and num_val_im >= len(rows):
            raise InputError(
                f"the validation carve-out (num_val_im = {num_val_im}) takes all {len(rows)} "
                f"training images; set dataset.num_val_im (or --num-val-im) below {len(rows)}, "
                f"e.g. {max(1, len(rows) // 10)}",
                field="num_val_im",
            )
        return rows[num_val_im:]
    return rows


def convert_boxes(
    boxes_cxcywh: np.ndarray, width: int, height: int, box_scale: int = BOX_SCALE, clip: bool = True
) -> np.ndarray:
    """Reference conversion of int ``(cx, cy, w, h)`` at ``box_scale`` to float32 xyxy pixels, clipped to the image
    unless ``clip`` is False (OvSGTR's loader does not clip)."""
    b = np.asarray(boxes_cxcywh, dtype=np.int32).copy()
    # In place on an int32 array, like the reference: the float result is truncated toward zero.
    b[:, :2] = (b[:, :2] - b[:, 2:] / 2).astype(np.int32)
    b[:, 2:] = b[:, :2] + b[:, 2:]
    out = b / box_scale * max(width, height)
    return clip_to_image(out, width, height) if clip else out.astype(np.float32)


@dataclass(frozen=True)
class VG150:
    """The real VG150 split (``kind: vg150``): :class:`~sgg_eval.boxes.splits.Dataset` over the three files."""

    OPTIONS: ClassVar[tuple[str, ...]] = ("num_val_im", "box_scale", "split_key", "clip_boxes")  # conf keys (READERS)

    name: str
    files: VG150Files
    num_val_im: int = NUM_VAL_IM
    box_scale: int = BOX_SCALE
    split_key: str = SPLIT_KEY  # the h5 key of the split codes (``split_GLIPunseen``: VS3's and OvSGTR's test)
    clip_boxes: bool = True  # False keeps boxes past the border, as OvSGTR reads them (every other protocol clips)
    zeroshot_seen: tuple[str, ...] = ("train",)  # the reference's zero-shot triplets: unseen in training

    def open_split(self, split: str) -> tuple[SplitMeta, int, Iterator[GTImage]]:
        vocab, count, images = read_vg150_split(
            self.files,
            split,
            num_val_im=self.num_val_im,
            box_scale=self.box_scale,
            split_key=self.split_key,
            clip_boxes=self.clip_boxes,
        )
        source = f"VG150 files {self.files.h5}, {self.files.dicts}, {self.files.image_data}"
        extra = {"simulated": False, "boxes_clipped": bool(self.clip_boxes)}
        if self.split_key != SPLIT_KEY:
            source += f" (split codes: h5 key {self.split_key})"
            extra["split_key"] = self.split_key
        return SplitMeta(split, vocab, self.name, False, source, extra), count, images


def read_vg150_split(
    files: VG150Files,
    split: str,
    *,
    num_val_im: int = NUM_VAL_IM,
    box_scale: int = BOX_SCALE,
    split_key: str = SPLIT_KEY,
    clip_boxes: bool = True,
) -> tuple[Vocabulary, int, Iterator[GTImage]]:
    """Vocabulary, image count and a generator of the images of ``split`` (the split codes read from the h5 key
    ``split_key``); every image is checked."""
    vocab = load_vocab(files.dicts)
    ids, widths, heights = load_image_sizes(files.image_data)
    a = _read_h5(files.h5, box_scale, split_key)
    n_rows = len(a["split"])
    if len(ids) != n_rows:
        raise InputError(
            f"{len(ids)} images after dropping corrupted ids, but the h5 has {n_rows} rows in {split_key}",
            path=files.image_data,
        )
    for key in ("img_to_first_box", "img_to_last_box", "img_to_first_rel", "img_to_last_rel"):
        if len(a[key]) != n_rows:
            raise InputError(f"{len(a[key])} entries for {n_rows} images", path=files.h5, field=key)
    rows = split_image_rows(a["split"], a["img_to_first_box"], a["img_to_first_rel"], split, num_val_im)
    return vocab, len(rows), _images(files, a, rows, ids, widths, heights, vocab, box_scale, clip_boxes)


def _images(files, a, rows, ids, widths, heights, vocab, box_scale, clip_boxes=True) -> Iterator[GTImage]:
    labels_all = a["labels"].reshape(len(a["labels"]), -1)[:, 0]
    preds_all = a["predicates"].reshape(len(a["predicates"]), -1)[:, 0]
    rels_all, boxes_all = a["relationships"], a[f"boxes_{box_scale}"]
    n_obj, n_rel = len(labels_all), len(preds_all)
    if len(boxes_all) != n_obj:
        raise InputError(f"{len(boxes_all)} boxes for {n_obj} labels", path=files.h5, field=f"boxes_{box_scale}")
    for row in rows:
        image_id = int(ids[row])
        where = dict(path=files.h5, image_id=image_id)
        b0, b1 = int(a["img_to_first_box"][row]), int(a["img_to_last_box"][row])
        r0, r1 = int(a["img_to_first_rel"][row]), int(a["img_to_last_rel"][row])
        if not (0 <= b0 <= b1 < n_obj):
            raise InputError(
                f"box range [{b0}, {b1}] outside [0, {n_obj - 1}]", field="img_to_first_box/img_to_last_box", **where
            )
        if not (0 <= r0 <= r1 < n_rel):
            raise InputError(
                f"relation range [{r0}, {r1}] outside [0, {n_rel - 1}]",
                field="img_to_first_rel/img_to_last_rel",
                **where,
            )
        raw = boxes_all[b0 : b1 + 1]
        if np.any(raw[:, 2:] <= 0):
            raise InputError("box with non-positive width or height", field=f"boxes_{box_scale}", **where)
        if np.any(raw < 0) or np.any(raw > box_scale):  # the conversion clamps every box inside the scaled image
            raise InputError(
                f"box value outside [0, {box_scale}] (cx, cy, w, h at longest side {box_scale})",
                field=f"boxes_{box_scale}",
                **where,
            )
        local = rels_all[r0 : r1 + 1].astype(np.int64) - b0
        if np.any(local < 0) or np.any(local > b1 - b0):
            raise InputError("relation refers to an object outside its image", field="relationships", **where)
        labels = labels_all[b0 : b1 + 1].astype(np.int64)
        if np.any(labels < 1) or np.any(labels > vocab.num_objects):
            raise InputError(f"class id outside [1, {vocab.num_objects}]", field="labels", **where)
        preds = preds_all[r0 : r1 + 1].astype(np.int64)
        if np.any(preds < 1) or np.any(preds > vocab.num_predicates):
            raise InputError(f"predicate id outside [1, {vocab.num_predicates}]", field="predicates", **where)
        w, h = int(widths[row]), int(heights[row])
        yield GTImage(
            image_id, w, h, convert_boxes(raw, w, h, box_scale, clip_boxes), labels, np.column_stack([local, preds])
        )
