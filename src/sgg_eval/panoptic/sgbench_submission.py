"""SGBench submissions for panoptic SGG: a ZIP (or a folder) holding ``triplets.json`` and one multi-page TIFF of
instance masks per image, or the JSON alone (box mode).

``triplets.json``: ``{"version": 1 or 2, "images": [{"id", "seg_filename", <instances>, "triplets",
"ng_triplets"?, "scores"?}]}``. The instance list has three published spellings, all read:
``instances: [{bbox, category}]`` (the SGBench paper), ``annotation: [{bbox, category}]`` (what sgbench 1.0.0
reads) and image-level ``bboxes`` + ``categories`` (its README); an image may give several if they hold
the same instances in the same order (a file written for sgbench's code and its README), else it is refused.
Categories and predicates are 0-based; ``triplets`` (subject, object, predicate; best first: the order is the
ranking) and ``ng_triplets`` index the instances; exact duplicate rows are dropped, the first kept, as sgbench
does. ``scores`` (one per triplet) is our extension, read and checked but not used by the sgbench protocol.

TIFF: one layer per instance (any non-zero pixel is in the mask; layers may overlap), as ``tifffile`` writes
them (``panoptic.tiff_layers``).
ZIP members are read in memory (never extracted) and checked as they are read, by the one ZIP reader
(``io.archive``), with their sizes bounded (a ZIP bomb is refused before any member is read); names must stay
inside the archive and be unique.
"""

from __future__ import annotations

import os
import struct
import zipfile
import zlib

import numpy as np

from sgg_eval.arrays.segments import first_seen
from sgg_eval.core.errors import InputError
from sgg_eval.data.types import check_xyxy
from sgg_eval.io.archive import Archive, MemberError
from sgg_eval.io.jsonfast import (
    ObjectMarks,
    is_array,
    is_object,
    number_rows,
    parse_items,
    unique_keys,
)
from sgg_eval.io.jsonio import read_bytes
from sgg_eval.io.processes import in_parts
from sgg_eval.panoptic.instance_lists import read_instances
from sgg_eval.panoptic.tiff_layers import BYTES_PER_PIXEL, tiff_stack
from sgg_eval.panoptic.types import SubmissionImage

TRIPLETS = "triplets.json"
MAX_MEMBER_BYTES = 4 << 30  # one member, uncompressed
MAX_RATIO = 1000  # uncompressed / compressed size of a member: beyond it, a ZIP bomb
MASK_FILE_MARGIN = 1 << 20  # a mask file's bytes besides its pixels (TIFF tags, offsets): far below this


def submission_mode(path: str | os.PathLike, boxes: bool = False) -> str:
    """``masks`` for a ZIP or a folder (unless ``boxes``), ``boxes`` for a JSON file alone (as sgbench decides)."""
    path = os.fspath(path)
    return "boxes" if boxes or not (os.path.isdir(path) or zipfile.is_zipfile(path)) else "masks"


class Submission:
    """An opened submission: ``images`` by (type, id), ``masks(image, shape)`` for its layers (mask mode).
    ``jobs``: processes that convert its images (any number gives the same images, or the same error)."""

    def __init__(
        self, path: str | os.PathLike, num_classes: int, num_predicates: int, *, boxes: bool = False, jobs: int = 1
    ):
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            self.kind, self._zip = "folder", None
            raw = read_bytes(os.path.join(self.path, TRIPLETS), "JSON")
        elif zipfile.is_zipfile(self.path):
            self.kind, self._zip = "zip", _open_zip(self.path)
            raw = self._member(TRIPLETS)
        else:
            self.kind, self._zip = "json", None
            raw = read_bytes(self.path, "JSON")
        self.mode = submission_mode(self.path, boxes)
        parser, doc, items = parse_items(raw, "images", self.path if self.kind == "json" else f"{self.path}:{TRIPLETS}")
        where = dict(path=self.path)
        if (
            not is_object(doc)
            or doc.get("version") not in (1, 2)
            or type(doc.get("version")) is not int
            or not is_array(doc.get("images"))
        ):
            raise InputError("expected {'version': 1 or 2, 'images': [...]}", field="version", **where)
        unique_keys(doc, "version", where)
        self.images: dict[tuple, SubmissionImage] = {}

        def convert(position: int) -> SubmissionImage:
            entry, marks = items.at(position), items.marks(position)
            return _image(entry, marks, position, num_classes, num_predicates, self.mode == "masks", self.path)

        for image in in_parts(convert, len(items), jobs):  # ~0.75 ms an image at PSG's size: spread over jobs
            key = (type(image.image_id), image.image_id)
            if key in self.images:
                raise InputError(
                    "image listed twice", path=self.path, image_id=image.image_id, position=image.position, field="id"
                )
            self.images[key] = image
        del raw, doc, parser  # the arrays are copies: the text goes now

    def _member(self, name: str, row: int | None = None) -> bytes:
        """A member's bytes (the archive is mapped: forked workers read it as well)."""
        row = self._zip.row(name) if row is None else row
        if row < 0:
            raise InputError(f"no member {name!r} in the archive", path=self.path)
        try:
            return self._zip.read(row, MAX_MEMBER_BYTES)
        except MemberError as exc:
            raise InputError(f"member {name!r} unreadable ({exc})", path=self.path) from None

    def masks(self, image: SubmissionImage, shape: tuple[int, int]) -> np.ndarray:
        """``[N, H, W]`` uint8: the image's instance masks (non-zero: in the mask), checked against its instance
        count and ``shape``."""
        name = image.seg_filename
        where = dict(path=self.path, image_id=image.image_id, field="seg_filename")
        if self.kind == "zip":
            row = self._zip.row(name)
            limit = BYTES_PER_PIXEL * len(image.labels) * shape[0] * shape[1] + MASK_FILE_MARGIN
            if row >= 0 and int(self._zip.members.usize[row]) > limit:
                raise InputError(
                    f"{name!r} expands to {int(self._zip.members.usize[row])} bytes; {len(image.labels)} masks of "
                    f"{shape[1]}x{shape[0]} px need at most {limit}: refused before reading",
                    **where,
                )
            raw = self._member(name, row)  # the row looked up once, for the bound and the read
        else:
            file = os.path.join(self.path, name)
            if not os.path.isfile(file):
                raise InputError(f"{name!r} not found", **where)
            with open(file, "rb") as fh:
                raw = fh.read()
        return tiff_stack(raw, len(image.labels), shape, where)


def _open_zip(path: str) -> Archive:
    """The archive, its member names checked (inside the archive) and its sizes bounded (no ZIP bomb)."""
    try:
        archive = Archive(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, struct.error, zlib.error) as exc:
        raise InputError(f"corrupt ZIP ({' '.join(str(exc).split())[:100]})", path=path) from None
    zm = archive.members
    for name in zm.names:
        if name.startswith("/") or "\\" in name or ".." in name.split("/"):
            raise InputError(f"member {name!r:.80} points outside the archive", path=path)
    bomb = np.flatnonzero((zm.usize > MAX_MEMBER_BYTES) | (zm.usize > MAX_RATIO * np.maximum(zm.size, 1)))
    if len(bomb):
        row = int(bomb[0])
        raise InputError(
            f"member {zm.name(row)!r:.80} expands to {zm.usize[row]} bytes from {zm.size[row]}: a ZIP bomb", path=path
        )
    return archive


def check_categories(labels: np.ndarray, num_classes: int, field: str, where: dict) -> None:
    """Instance classes are 0-based ids of ``num_classes`` classes."""
    if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
        raise InputError(f"category outside [0, {num_classes - 1}]", field=field, **where)


def checked_rows(rows: np.ndarray, count: int, num_predicates: int, field: str, where: dict) -> tuple[np.ndarray, int]:
    """``[T, 3]`` (subject, object, predicate) rows over ``count`` instances, checked (indices and 0-based
    predicates in range) and without exact repeats (:func:`_deduplicated`); and how many repeats went."""
    if len(rows) and (rows[:, :2].min() < 0 or rows[:, :2].max() >= count):
        raise InputError(f"instance index outside [0, {count - 1}]", field=field, **where)
    if len(rows) and (rows[:, 2].min() < 0 or rows[:, 2].max() >= num_predicates):
        raise InputError(f"predicate outside [0, {num_predicates - 1}]", field=field, **where)
    return _deduplicated(rows, count, num_predicates)


def _deduplicated(rows: np.ndarray, count: int, num_predicates: int) -> tuple[np.ndarray, int]:
    """The rows without exact repeats, the first kept, in order (one integer key per row), and how many went."""
    n = max(count, 1)
    keep = first_seen((rows[:, 0] * n + rows[:, 1]) * num_predicates + rows[:, 2], n * n * num_predicates)
    return rows[keep], int(len(rows) - keep.sum())


def _image(
    entry, marks: ObjectMarks, position: int, num_classes: int, num_predicates: int, masks: bool, path: str
) -> SubmissionImage:
    if not is_object(entry):
        raise InputError("image entry is not an object", path=path, position=position, field="images")
    image_id = entry.get("id")
    if type(image_id) not in (int, str):
        raise InputError(
            f"id {image_id!r:.40} is neither an integer nor a string", path=path, position=position, field="id"
        )
    where = dict(path=path, image_id=image_id, position=position)
    unique_keys(entry, "images", where)
    labels, boxes = read_instances(entry, where, marks)
    check_categories(labels, num_classes, "categories", where)
    check_xyxy(boxes, "bbox", where)
    lists, dropped, raw = {}, 0, None
    # kept for the whole run: a submission's ~11 M rows take 68 MB as int16, 270 MB as int64
    compact = np.int16 if max(len(labels), num_predicates) <= np.iinfo(np.int16).max else np.int32
    for field in ("triplets", "ng_triplets"):
        value = entry.get(field)
        if field == "ng_triplets" and value is None:
            rows = np.zeros((0, 3), dtype=np.int64)
        else:
            rows = number_rows(value, 3, integer=True, field=field, where=where, marks=marks)
        lists[field], gone = checked_rows(rows, len(labels), num_predicates, field, where)
        lists[field] = lists[field].astype(compact, copy=False)
        if field == "triplets":
            raw, dropped = rows.astype(compact, copy=False), gone
    if "scores" in entry:
        scores = number_rows(entry["scores"], None, integer=False, field="scores", where=where, marks=marks)
        if len(scores) != len(raw):
            raise InputError(f"{len(scores)} scores for {len(raw)} triplets", field="scores", **where)
        if len(scores) and np.any(np.diff(scores) > 0):
            raise InputError("scores must not increase: the triplets are best first", field="scores", **where)
    seg = entry.get("seg_filename")
    if masks and (
        not isinstance(seg, str)
        or not seg.lower().endswith((".tif", ".tiff"))
        or seg.startswith("/")
        or ".." in seg.split("/")
    ):
        raise InputError("expected a .tiff file name inside the submission", field="seg_filename", **where)
    return SubmissionImage(
        image_id, position, labels, boxes, lists["triplets"], lists["ng_triplets"], dropped, seg if masks else None, raw
    )
