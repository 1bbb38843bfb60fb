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

import os

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import check_xyxy
from sgg_eval.io.jsonfast import (
    ObjectMarks,
    box_rows,
    is_array,
    is_object,
    number_rows,
    parse_items,
    unique_keys,
    unique_keys_each,
)
from sgg_eval.io.jsonio import read_bytes
from sgg_eval.panoptic.types import PsgGT, PsgImage


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
