"""Panoptic scene graph ground truth: OpenPSG's ``psg.json`` and the COCO panoptic PNGs it names.

``psg.json``: ``{"data": [image, ...], "test_image_ids": [...], "thing_classes": [...], "stuff_classes": [...],
"predicate_classes": [...]}``. Object classes are ``thing_classes + stuff_classes`` (PSG: 80 + 53), predicates
``predicate_classes`` (PSG: 56), both 0-based. An image: ``image_id`` (PSG's are strings), ``segments_info``
(``id``, ``category_id``), ``relations`` (``[s, o, p]``: s and o index ``segments_info``), ``annotations``
(``bbox`` xyxy pixels inside the image and ``category_id``, one per segment: boxes for box mode; where present,
the classes must equal ``segments_info``'s, see :func:`_same_classes`) and ``pan_seg_file_name`` (relative to
the COCO root). A PNG pixel's segment id is ``R + 256·G + 256²·B``.

The test split is the images whose ``image_id`` is in ``test_image_ids`` (compared by value and type, as the
file has them); those without relations are not evaluated (both sgbench and OpenPSG skip them) and are
counted. GT triplets are the unique ``relations`` rows, sorted (duplicates dropped, several predicates on one
pair kept).
"""

from __future__ import annotations

import contextlib
import io
import os
import struct
from dataclasses import dataclass

import numpy as np

from sgg_eval.data.types import check_xyxy
from sgg_eval.errors import InputError
from sgg_eval.integrity import crc32
from sgg_eval.jsonfast import (
    ObjectMarks,
    box_rows,
    is_array,
    is_object,
    number_rows,
    parse_items,
    unique_keys,
    unique_keys_each,
)
from sgg_eval.jsonio import read_bytes


@dataclass(frozen=True)
class PsgImage:
    """One image with relations: its id, segment ids and 0-based classes (``segments_info`` order), unique GT
    triplets ``[M, 3]`` (subject, object: segment indices; predicate), boxes ``[N, 4]`` xyxy, PNG name, and
    the ``relations`` rows as given (duplicates kept: what training statistics count)."""

    image_id: int | str
    position: int
    segment_ids: np.ndarray
    labels: np.ndarray
    triplets: np.ndarray
    boxes: np.ndarray
    png: str
    relations: np.ndarray


@dataclass(frozen=True)
class PsgGT:
    """The images with relations of one split (file order), names, and the split's images without relations."""

    path: str
    root: str
    object_classes: tuple[str, ...]
    predicate_classes: tuple[str, ...]
    images: list[PsgImage]
    without_relations: int

    @property
    def num_predicates(self) -> int:
        return len(self.predicate_classes)


def read_psg(
    path: str | os.PathLike, root: str | os.PathLike = "", *, boxes: bool = False, split: str = "test"
) -> PsgGT:
    """The ``test`` split of ``path`` (the ``test_image_ids``), or its ``train`` split (every other entry, the
    images ``sgg-eval stats`` counts); ``boxes``: box mode (``annotations`` are required, the PNGs are not)."""
    path, root = os.fspath(path), os.fspath(root)
    parser, doc, items = parse_items(read_bytes(path, "psg.json"), "data", path)  # the parser holds the skeleton
    classes, predicates = _vocabulary(doc, path)
    data, test_ids = doc.get("data"), doc.get("test_image_ids")
    if not is_array(data) or not is_array(test_ids):
        raise InputError("expected lists 'data' and 'test_image_ids'", path=path, field="data")
    test = {}
    for i, image_id in enumerate(test_ids):
        if type(image_id) not in (int, str):
            raise InputError(
                f"id {image_id!r:.40} is neither an integer nor a string", path=path, field=f"test_image_ids[{i}]"
            )
        test[(type(image_id), image_id)] = None  # by value and type: "1" and 1 are different images (a dict: ordered)
    images, without, seen = [], 0, set()
    for position, entry in items:
        image_id = entry.get("image_id") if is_object(entry) else None
        if type(image_id) not in (int, str):
            raise InputError(
                f"image_id {image_id!r:.40} is neither an integer nor a string",
                path=path,
                position=position,
                field="image_id",
            )
        key = (type(image_id), image_id)
        if (key in test) != (split == "test"):
            continue
        if key in seen:
            raise InputError("image listed twice in 'data'", path=path, image_id=image_id, position=position)
        seen.add(key)
        relations = entry.get("relations")
        if is_array(relations) and not len(relations):
            without += 1
            continue
        marks = items.marks(position)
        images.append(_image(entry, marks, image_id, position, len(classes), len(predicates), boxes, root, path))
    missing = [key[1] for key in test if key not in seen] if split == "test" else []
    if missing:
        example = f"{missing[0]!r:.40}"
        raise InputError(
            f"{len(missing)} test image ids have no entry in 'data' (e.g. {example})", path=path, field="test_image_ids"
        )
    return PsgGT(path, root, classes, predicates, images, without)


def read_psg_names(path: str | os.PathLike) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``path``'s object classes (things, then stuff) and predicate classes, from the document without its
    ``data`` items (which are found, not parsed): what a submission's checks need while ``read_psg`` runs
    elsewhere. A file ``read_psg`` refuses for its names or its form is refused here the same way."""
    path = os.fspath(path)
    parser, doc, _ = parse_items(read_bytes(path, "psg.json"), "data", path)  # the parser holds the skeleton
    return _vocabulary(doc, path)


def _vocabulary(doc, path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(object classes, predicate classes) of the parsed document ``doc``, its form checked first."""
    if not is_object(doc):
        raise InputError("expected a JSON object with 'data' and 'test_image_ids'", path=path)
    unique_keys(doc, "data", dict(path=path))
    names = {}
    for key in ("thing_classes", "stuff_classes", "predicate_classes"):
        listed = list(doc.get(key)) if is_array(doc.get(key)) else None
        if listed is None or not all(type(n) is str for n in listed) or (key != "stuff_classes" and not listed):
            raise InputError("expected a list of class names", path=path, field=key)
        names[key] = tuple(listed)
    return names["thing_classes"] + names["stuff_classes"], names["predicate_classes"]


def _ints(values: list, field: str, where: dict) -> np.ndarray:
    if not all(type(v) is int for v in values):
        raise InputError("expected an integer per segment", field=field, **where)
    return np.array(values, dtype=np.int64)


def _same_classes(segments: np.ndarray, annotations: np.ndarray, where: dict) -> None:
    """PSG gives each segment's class twice, ``segments_info[i].category_id`` and ``annotations[i].category_id``.
    OpenPSG and sgbench take it from ``annotations``, sgg-eval from ``segments_info``: a file where they differ
    would be scored on other classes by each tool, so it is refused (docs/metrics.md)."""
    differ = np.flatnonzero(segments != annotations)
    if len(differ):
        i = int(differ[0])
        raise InputError(
            f"annotations[{i}].category_id is {annotations[i]} but segments_info[{i}].category_id is {segments[i]}"
            f" ({len(differ)} segment(s) differ; OpenPSG and sgbench read the first, sgg-eval the second: make"
            " them agree)",
            field="annotations.category_id",
            **where,
        )


def _inside_image(xyxy: np.ndarray, entry, where: dict) -> None:
    """A GT box lies in its image, ``[0, width] x [0, height]`` where the entry gives its size (PSG's do), else
    at non-negative coordinates: one outside is a damaged file, whose IoUs would differ without a word."""
    w, h = entry.get("width"), entry.get("height")
    sized = type(w) is int and type(h) is int
    top = np.array([w, h, w, h], dtype=np.float64) if sized else np.full(4, np.inf)
    bad = (xyxy < 0).any(axis=1) | (xyxy > top).any(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        frame = f"[0, {w}] x [0, {h}]" if sized else "non-negative coordinates"
        raise InputError(
            f"box {i} = {xyxy[i].tolist()} lies outside the image ({frame})", field="annotations.bbox", **where
        )


def _image(
    entry,
    marks: ObjectMarks,
    image_id,
    position: int,
    n_classes: int,
    n_predicates: int,
    boxes: bool,
    root: str,
    path: str,
) -> PsgImage:
    where = dict(path=path, image_id=image_id, position=position)
    unique_keys(entry, "data", where)
    segments = entry.get("segments_info")
    segments = list(segments) if is_array(segments) else None
    if not segments or not all(is_object(s) for s in segments):
        raise InputError("expected a non-empty list of {'id', 'category_id'}", field="segments_info", **where)
    ids = _ints([s.get("id") for s in segments], "segments_info.id", where)
    labels = _ints([s.get("category_id") for s in segments], "segments_info.category_id", where)
    unique_keys_each(segments, "segments_info", where, found=2)
    if len(np.unique(ids)) != len(ids) or ids.min() < 0 or ids.max() >= 256**3:
        raise InputError("segment ids must be distinct and in [0, 256³)", field="segments_info.id", **where)
    if labels.min() < 0 or labels.max() >= n_classes:
        raise InputError(f"category outside [0, {n_classes - 1}]", field="segments_info.category_id", **where)
    rels = number_rows(entry.get("relations"), 3, integer=True, field="relations", where=where, marks=marks)
    if rels[:, :2].min() < 0 or rels[:, :2].max() >= len(ids):
        raise InputError(f"segment index outside [0, {len(ids) - 1}]", field="relations", **where)
    if rels[:, 2].min() < 0 or rels[:, 2].max() >= n_predicates:
        raise InputError(f"predicate outside [0, {n_predicates - 1}]", field="relations", **where)
    xyxy = np.zeros((0, 4))
    annotations = entry.get("annotations")
    if boxes or annotations is not None:  # mask mode reads no box, but a class given twice must agree
        annotations = list(annotations) if is_array(annotations) else None
        if annotations is None or not all(is_object(a) for a in annotations):
            raise InputError("expected a list of {'bbox', 'category_id'}", field="annotations", **where)
        if len(annotations) != len(ids):
            raise InputError(f"{len(annotations)} annotations for {len(ids)} segments", field="annotations", **where)
        classes = _ints([a.get("category_id") for a in annotations], "annotations.category_id", where)
        if boxes:
            xyxy = box_rows([a.get("bbox") for a in annotations], "annotations.bbox", where)
        unique_keys_each(annotations, "annotations", where, found=2 if boxes else 1)
        _same_classes(labels, classes, where)
        if boxes:
            check_xyxy(xyxy, "annotations.bbox", where)
            _inside_image(xyxy, entry, where)
    png = entry.get("pan_seg_file_name")
    if not boxes and (not isinstance(png, str) or not png or os.path.isabs(png) or ".." in png.split("/")):
        raise InputError("expected a file name relative to --psg-root", field="pan_seg_file_name", **where)
    return PsgImage(image_id, position, ids, labels, np.unique(rels, axis=0), xyxy, png or "", rels)


_PNG = b"\x89PNG\r\n\x1a\n"


def check_png(raw: bytes, where: dict) -> None:
    """Every chunk's CRC-32, as the PNG format records it: Pillow skips those of the image data (IDAT), so a
    flipped bit there could decode to other segment ids, i.e. another ground truth."""
    if raw[:8] != _PNG:
        raise InputError("not a PNG file", **where)
    at, view = 8, memoryview(raw)
    while at + 12 <= len(raw):
        (length,) = struct.unpack_from(">I", raw, at)
        end = at + 8 + length
        if end + 4 > len(raw):
            raise InputError(f"PNG chunk at byte {at} runs past the end of the file", **where)
        if crc32(view[at + 4 : end]) != struct.unpack_from(">I", raw, end)[0]:
            raise InputError(
                f"PNG chunk {bytes(raw[at + 4 : at + 8])!r} fails its CRC-32: the file is corrupt", **where
            )
        if raw[at + 4 : at + 8] == b"IEND":
            return
        at = end + 4
    raise InputError("PNG without its end chunk: truncated", **where)


def segment_index(gt: PsgGT, image: PsgImage) -> tuple[np.ndarray, np.ndarray | None]:
    """``[H, W]``: each pixel's index into the image's ``segments_info``, ``len(segments_info)`` where no segment
    is (void, or an id the list does not name); uint8 (uint16 past 255 segments). Read from the PNG under
    ``gt.root``. And each segment's pixel count, from the PNG's colour counts (None past ``_MAX_COLOURS``).

    When one colour channel alone tells every colour of the PNG apart (its few colours usually differ in their
    red, green or blue byte), Pillow maps that channel through a 256-entry table; otherwise the full ids go
    through :func:`index_of_ids`."""
    file = os.path.join(gt.root, image.png)
    where = dict(path=file, image_id=image.image_id)
    if not os.path.isfile(file):
        raise InputError("PNG not found (is --psg-root the folder its pan_seg_file_name is relative to?)", **where)
    with _panoptic_png(file, where) as im:
        colours = im.getcolors(_MAX_COLOURS)
        if colours is None:
            return index_of_ids(_ids(im), image.segment_ids), None
        present, counts = _colour_ids(colours)
        index = {seg_id: i for i, seg_id in enumerate(image.segment_ids.tolist())}
        g = len(index)
        area = np.zeros(g, dtype=np.int64)
        for seg_id, n in zip(present.tolist(), counts.tolist()):
            if seg_id in index:
                area[index[seg_id]] = n
        for channel in range(3) if g < 255 else ():
            byte = (present >> (8 * channel)) & 0xFF
            if len(np.unique(byte)) == len(byte):  # this channel names every colour of the image
                table = [g] * 256
                for seg_id, value in zip(present.tolist(), byte.tolist()):
                    table[value] = index.get(seg_id, g)
                return np.asarray(im.getchannel(channel).point(table)), area
        return index_of_ids(_ids(im), image.segment_ids, present), area


def index_of_ids(ids: np.ndarray, segment_ids: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Each pixel's index in ``segment_ids`` (distinct, < 2²⁴), ``len(segment_ids)`` for any other id. A table
    indexed by the fewest low bits that tell the ids apart names each pixel's segment: when ``present`` lists
    every id of the image (PNGs of a few hundred colours), that is the answer, two passes over the pixels;
    otherwise one comparison with the segment's id confirms it. No hashing or search."""
    g = len(segment_ids)
    dtype = np.uint8 if g < 255 else np.uint16
    keys = np.union1d(segment_ids, present) if present is not None else segment_ids
    bits = max(1, int(len(keys)).bit_length())
    while len(np.unique(keys & ((1 << bits) - 1))) < len(keys):
        bits += 1
    mask = (1 << bits) - 1
    table = np.full(1 << bits, g, dtype=dtype)
    table[segment_ids & mask] = np.arange(g, dtype=dtype)  # the other keys keep g: they name no segment
    candidate = table[ids & mask]
    if present is not None:
        return candidate
    known = np.append(segment_ids, 1 << 24).astype(np.uint32)  # the sentinel matches no 24-bit id
    return np.where(known[candidate] == ids, candidate, dtype(g))


_MAX_COLOURS = 4096  # a panoptic PNG has one colour per segment (and void); past this, ids are checked per pixel


def read_panoptic_png(file: str, where: dict) -> np.ndarray:
    """``[H, W]`` uint32 segment ids ``R + 256·G + 256²·B`` of a COCO panoptic PNG (RGB or RGBA), its chunk CRCs
    checked first; read with Pillow."""
    with _panoptic_png(file, where) as im:
        return _ids(im)


@contextlib.contextmanager
def _panoptic_png(file: str, where: dict):
    """The PNG decoded by Pillow (RGB or RGBA), its chunk CRCs checked first; one InputError when unreadable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with open(file, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InputError(f"PNG unreadable ({exc.strerror or exc})", **where) from None
    check_png(raw, where)
    try:
        im = Image.open(io.BytesIO(raw))
        if im.mode not in ("RGB", "RGBA"):
            raise InputError(f"PNG mode {im.mode}, expected RGB (ids R + 256 G + 256² B)", **where)
        im.load()
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise InputError(f"unreadable PNG ({' '.join(str(exc).split())[:100]})", **where) from None
    with im:
        yield im


def _ids(im) -> np.ndarray:
    # R + 256 G + 256² B is the pixel's little-endian uint32 without its alpha byte
    return np.asarray(im.convert("RGBA")).view("<u4")[..., 0] & 0xFFFFFF


def _colour_ids(colours: list) -> tuple[np.ndarray, np.ndarray]:
    """Pillow's ``getcolors`` as (distinct ids, their pixel counts): RGBA colours of one id are summed."""
    present = np.array([c[0] + 256 * c[1] + 65536 * c[2] for _, c in colours], dtype=np.int64)
    counts = np.array([n for n, _ in colours], dtype=np.int64)
    present, inverse = np.unique(present, return_inverse=True)
    return present, np.bincount(inverse, weights=counts, minlength=len(present)).astype(np.int64)
