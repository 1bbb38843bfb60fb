"""SGBench submissions for panoptic SGG: a ZIP (or a folder) holding ``triplets.json`` and one multi-page TIFF of
instance masks per image, or the JSON alone (box mode).

``triplets.json``: ``{"version": 1 or 2, "images": [{"id", "seg_filename", <instances>, "triplets",
"ng_triplets"?, "scores"?}]}``. The instance list has three published spellings, all read:
``instances: [{bbox, category}]`` (the SGBench paper), ``annotation: [{bbox, category}]`` (what sgbench 1.0.0
reads) and image-level ``bboxes`` + ``categories`` (its README). Categories and predicates are 0-based;
``triplets`` (subject, object, predicate; best first: the order is the ranking) and ``ng_triplets`` index the
instances; exact duplicate rows are dropped, the first kept, as sgbench does. ``scores`` (one per triplet) is
our extension, read and checked but not used by the sgbench protocol.

TIFF: one layer per instance (any non-zero pixel is in the mask; layers may overlap), as ``tifffile`` writes
them: N pages; 3 or 4 layers as one planar RGB(A) page; 1 layer with or without shape metadata; 0 layers.
ZIP members are read in memory (never extracted), CRC-checked by ``zipfile`` as they are read, with their
sizes bounded; names must stay inside the archive and be unique.
"""

from __future__ import annotations

import io
import os
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass

import numpy as np

from sgg_eval.data.types import check_xyxy
from sgg_eval.errors import InputError
from sgg_eval.jsonio import json_array, load_json, parse_json

TRIPLETS = "triplets.json"
MAX_MEMBER_BYTES = 4 << 30  # one member, uncompressed
MAX_RATIO = 1000  # uncompressed / compressed size of a member: beyond it, a ZIP bomb


@dataclass
class SubmissionImage:
    """One image's predictions: instance classes ``[N]`` and boxes ``[N, 4]``; ``triplets`` and ``ng_triplets``
    ``[T, 3]`` de-duplicated in their order; the TIFF's name (mask mode); ``rows``, the triplets as given."""

    image_id: int | str
    position: int
    labels: np.ndarray
    boxes: np.ndarray
    triplets: np.ndarray
    ng_triplets: np.ndarray
    duplicates: int
    seg_filename: str | None
    rows: np.ndarray  # the triplets as given, duplicates included (what OpenPSG's protocol ranks)
    segment_ids: np.ndarray | None = None  # OpenPSG's submit folder: each instance's id in its PNG


def submission_mode(path: str | os.PathLike, boxes: bool = False) -> str:
    """``masks`` for a ZIP or a folder (unless ``boxes``), ``boxes`` for a JSON file alone (as sgbench decides)."""
    path = os.fspath(path)
    return "boxes" if boxes or not (os.path.isdir(path) or zipfile.is_zipfile(path)) else "masks"


class Submission:
    """An opened submission: ``images`` by (type, id), ``masks(image, shape)`` for its layers (mask mode)."""

    def __init__(self, path: str | os.PathLike, num_classes: int, num_predicates: int, *, boxes: bool = False):
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            self.kind, self._zip = "folder", None
            doc = load_json(os.path.join(self.path, TRIPLETS))
        elif zipfile.is_zipfile(self.path):
            self.kind, self._zip, self._pid = "zip", _open_zip(self.path), os.getpid()
            doc = parse_json(self._member(TRIPLETS), f"{self.path}:{TRIPLETS}")
        else:
            self.kind, self._zip = "json", None
            doc = load_json(self.path)
        self.mode = submission_mode(self.path, boxes)
        if not isinstance(doc, dict) or doc.get("version") not in (1, 2) or type(doc.get("version")) is not int \
                or not isinstance(doc.get("images"), list):
            raise InputError("expected {'version': 1 or 2, 'images': [...]}", path=self.path, field="version")
        self.images: dict[tuple, SubmissionImage] = {}
        for position, entry in enumerate(doc["images"]):
            image = _image(entry, position, num_classes, num_predicates, self.mode == "masks", self.path)
            key = (type(image.image_id), image.image_id)
            if key in self.images:
                raise InputError("image listed twice", path=self.path, image_id=image.image_id, position=position,
                                 field="id")
            self.images[key] = image

    def _member(self, name: str) -> bytes:
        if self._pid != os.getpid():  # a forked worker: its own file handle (a shared one shares the offset)
            self._zip, self._pid = _open_zip(self.path), os.getpid()
        try:
            info = self._zip.getinfo(name)
        except KeyError:
            raise InputError(f"no member {name!r} in the archive", path=self.path) from None
        try:
            with self._zip.open(info) as fh:
                return fh.read(MAX_MEMBER_BYTES + 1)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, zlib.error) as exc:
            raise InputError(f"member {name!r} unreadable ({' '.join(str(exc).split())[:100]})",
                             path=self.path) from None

    def masks(self, image: SubmissionImage, shape: tuple[int, int]) -> np.ndarray:
        """``[N, H, W]`` bool: the image's instance masks, checked against its instance count and ``shape``."""
        name = image.seg_filename
        where = dict(path=self.path, image_id=image.image_id, field="seg_filename")
        if self.kind == "zip":
            raw = self._member(name)
        else:
            file = os.path.join(self.path, name)
            if not os.path.isfile(file):
                raise InputError(f"{name!r} not found", **where)
            with open(file, "rb") as fh:
                raw = fh.read()
        layers = _decode_tiff(raw, len(image.labels), shape, where)
        return layers != 0


def _open_zip(path: str) -> zipfile.ZipFile:
    try:
        zf = zipfile.ZipFile(path)
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, zlib.error) as exc:
        raise InputError(f"corrupt ZIP ({' '.join(str(exc).split())[:100]})", path=path) from None
    twice = [n for n, c in Counter(i.filename for i in infos).items() if c > 1]
    if twice:
        raise InputError(f"two members are named {twice[0]!r:.80}: the archive is ambiguous", path=path)
    for info in infos:
        name = info.filename
        if name.startswith("/") or "\\" in name or ".." in name.split("/"):
            raise InputError(f"member {name!r:.80} points outside the archive", path=path)
        if info.file_size > MAX_MEMBER_BYTES or info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise InputError(f"member {name!r:.80} expands to {info.file_size} bytes from {info.compress_size}: "
                             "a ZIP bomb", path=path)
    return zf


def _numbers(value, shape: tuple, kind, field: str, where: dict) -> np.ndarray:
    return json_array(value, shape, integer=kind is np.int64, field=field, where=where)


def _instances(entry: dict, where: dict) -> tuple[list, list]:
    """(categories, boxes) from whichever of the three spellings the image uses (exactly one)."""
    spelled = [k for k in ("instances", "annotation") if k in entry] + (["bboxes"] if "bboxes" in entry or
                                                                          "categories" in entry else [])
    if len(spelled) != 1:
        raise InputError("give the instances once: 'instances' or 'annotation' ([{bbox, category}]), or "
                         "'bboxes' + 'categories'", field="instances", **where)
    if spelled[0] == "bboxes":
        return entry.get("categories"), entry.get("bboxes")
    listed = entry[spelled[0]]
    if not isinstance(listed, list) or not all(isinstance(i, dict) for i in listed):
        raise InputError("expected a list of {bbox, category}", field=spelled[0], **where)
    return [i.get("category") for i in listed], [i.get("bbox") for i in listed]


def _image(entry, position: int, num_classes: int, num_predicates: int, masks: bool, path: str) -> SubmissionImage:
    if not isinstance(entry, dict):
        raise InputError("image entry is not an object", path=path, position=position, field="images")
    image_id = entry.get("id")
    if type(image_id) not in (int, str):
        raise InputError(f"id {image_id!r:.40} is neither an integer nor a string", path=path, position=position,
                         field="id")
    where = dict(path=path, image_id=image_id, position=position)
    cats, bbox = _instances(entry, where)
    labels = _numbers(cats, (None,), np.int64, "categories", where)
    boxes = _numbers(bbox, (len(labels), 4), np.float64, "bbox", where) if len(labels) else np.zeros((0, 4))
    if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
        raise InputError(f"category outside [0, {num_classes - 1}]", field="categories", **where)
    check_xyxy(boxes, "bbox", where)
    lists, dropped, raw = {}, 0, None
    for field in ("triplets", "ng_triplets"):
        value = entry.get(field, [] if field == "ng_triplets" else None)
        rows = _numbers([] if value is None and field == "ng_triplets" else value, (None, 3), np.int64, field, where)
        if len(rows) and (rows[:, :2].min() < 0 or rows[:, :2].max() >= len(labels)):
            raise InputError(f"instance index outside [0, {len(labels) - 1}]", field=field, **where)
        if len(rows) and (rows[:, 2].min() < 0 or rows[:, 2].max() >= num_predicates):
            raise InputError(f"predicate outside [0, {num_predicates - 1}]", field=field, **where)
        _, first = np.unique(rows, axis=0, return_index=True)
        lists[field] = rows[np.sort(first)]
        raw = rows if field == "triplets" else raw
        dropped += len(rows) - len(first) if field == "triplets" else 0
    if "scores" in entry:
        scores = _numbers(entry["scores"], (len(entry.get("triplets") or []),), np.float64, "scores", where)
        if len(scores) and np.any(np.diff(scores) > 0):
            raise InputError("scores must not increase: the triplets are best first", field="scores", **where)
    seg = entry.get("seg_filename")
    if masks and (not isinstance(seg, str) or not seg.lower().endswith((".tif", ".tiff")) or seg.startswith("/")
                  or ".." in seg.split("/")):
        raise InputError("expected a .tiff file name inside the submission", field="seg_filename", **where)
    return SubmissionImage(image_id, position, labels, boxes, lists["triplets"], lists["ng_triplets"], dropped,
                           seg if masks else None, raw)


def _decode_tiff(raw: bytes, count: int, shape: tuple[int, int], where: dict) -> np.ndarray:
    """``[count, H, W]`` layers of a TIFF as tifffile writes them (see the module docstring)."""
    import tifffile

    try:
        layers = tifffile.imread(io.BytesIO(raw))
    except Exception as exc:  # noqa: BLE001 - tifffile and its codecs raise many kinds on a damaged file
        raise InputError(f"unreadable TIFF ({type(exc).__name__}: {' '.join(str(exc).split())[:100]})",
                         **where) from None
    layers = np.asarray(layers)
    if layers.ndim == 2 and count == 1:
        layers = layers[None]
    elif layers.ndim == 3 and count in (3, 4) and layers.shape[2] == count and layers.shape[0] != count:
        layers = np.moveaxis(layers, 2, 0)  # one contiguous RGB(A) page
    if layers.ndim != 3 or layers.shape[0] != count:
        raise InputError(f"TIFF of shape {list(layers.shape)}: expected {count} layers (one per instance)", **where)
    if layers.shape[1:] != tuple(shape):
        raise InputError(f"masks of {layers.shape[2]}x{layers.shape[1]} px, the GT image is {shape[1]}x{shape[0]}",
                         **where)
    if layers.dtype.kind not in "biuf":
        raise InputError(f"TIFF of dtype {layers.dtype}, expected integer masks", **where)
    return layers
