"""Reader for GQA200 (the 200 most frequent GQA objects and 100 predicates of SHA-GCL, Dong et al. 2022, and the
unbiased-SGG papers that follow it), faithful to SHA-GCL's loader (``maskrcnn_benchmark/data/datasets/gqa.py``
and ``paths_catalog.py`` of dongxingning/SHA-GCL-for-SGG at 0aefad6).

Files, in one folder under these names:
- ``GQA_200_ID_Info.json``: ``ind_to_classes`` (201 names) and ``ind_to_predicates`` (101 names), each with
  ``__background__`` first; optional ``rel_name_to_id`` (name -> index) and ``rel_count`` (name -> count),
  whose names must be predicates (or ``__background__``).
- ``GQA_200_Train.json`` and ``GQA_200_Test.json``: parallel per-image lists ``filenames_all`` (``<id>.jpg``),
  ``img_info_all`` (``width``, ``height``), ``gt_boxes_all`` (``[x1, y1, x2, y2]`` pixels), ``gt_classes_all``
  (1-based class indices) and ``relationships_all`` (``[subject box, object box, predicate]``: 0-based box
  indices, 1-based predicates).

Rules reproduced:
- train is the train file; test and val come from the test file, whose 5,580th record (1-based) is skipped
  (the loader does so, without a reason given). Val is the first ``num_val_im`` (5,000) kept test images, so
  a subset of test; nothing is carved out of train.
- An image is kept when it has at least one box and one relation.
- Boxes are used as the files give them (xyxy pixels, no rescaling), as float32 clipped to
  ``[0, W - 1] x [0, H - 1]`` (the loader's ``clip_to_image(remove_empty=False)`` at evaluation); duplicate
  relation rows are kept (``relation_tuple`` holds them all).
- Image ids are the file names' stems (VG image ids: integers).
Later forks (DRM, SGG-Benchmark) also skip ten hard-coded file names; sgg-eval follows SHA-GCL, whose
split the papers of the IMR/PKO line report on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from sgg_eval.core.defaults import NUM_VAL_IM
from sgg_eval.core.errors import InputError
from sgg_eval.data.types import GTImage, SplitMeta, Vocabulary, clip_to_image
from sgg_eval.io.jsonio import json_array, load_json, name_list

BACKGROUND = "__background__"
SKIPPED_TEST_RECORD = 5579  # 0-based position in GQA_200_Test.json of the record the loader skips
LISTS = ("filenames_all", "img_info_all", "gt_boxes_all", "gt_classes_all", "relationships_all")
SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class GQA200Files:
    id_info: str
    train: str
    test: str

    @classmethod
    def in_dir(cls, root: str) -> GQA200Files:
        return cls(*(os.path.join(root, f"GQA_200_{name}.json") for name in ("ID_Info", "Train", "Test")))


@dataclass(frozen=True)
class GQA200:
    """GQA200 (``kind: gqa200``): :class:`~sgg_eval.boxes.splits.Dataset` over the three files."""

    OPTIONS: ClassVar[tuple[str, ...]] = ("num_val_im",)  # its conf keys (splits.READERS)

    name: str
    files: GQA200Files
    num_val_im: int = NUM_VAL_IM
    zeroshot_seen: tuple[str, ...] = ("train",)

    def open_split(self, split: str) -> tuple[SplitMeta, int, Iterator[GTImage]]:
        vocab, count, images = read_gqa200_split(self.files, split, num_val_im=self.num_val_im)
        source = f"GQA200 files {self.files.id_info}, {self.files.test if split != 'train' else self.files.train}"
        return SplitMeta(split, vocab, self.name, False, source, {"simulated": False}), count, images


def load_vocab(path: str) -> Vocabulary:
    """Class and predicate names (background dropped) from ``GQA_200_ID_Info.json``."""
    info = load_json(path)
    if not isinstance(info, dict):
        raise InputError("expected a JSON object", path=path)
    names = []
    for key in ("ind_to_classes", "ind_to_predicates"):
        value = name_list(info.get(key), path=path, field=key, at_least=2)
        if value[0] != BACKGROUND:
            raise InputError(f"the first name is {value[0]!r:.40}, expected {BACKGROUND!r}", path=path, field=key)
        names.append(tuple(value[1:]))
    predicates = (BACKGROUND, *names[1])
    for key in ("rel_name_to_id", "rel_count"):
        table = info.get(key)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise InputError("expected an object of predicate names", path=path, field=key)
        for name, value in table.items():
            if name not in predicates:
                raise InputError(f"unknown predicate {name!r:.40}", path=path, field=key)
            if key == "rel_name_to_id" and (
                type(value) is not int or not 0 <= value < len(predicates) or predicates[value] != name
            ):
                raise InputError(
                    f"{name!r:.40} -> {value!r:.20}, but ind_to_predicates puts it at {predicates.index(name)}",
                    path=path,
                    field=key,
                )
    return Vocabulary(*names)


def read_gqa200_split(
    files: GQA200Files, split: str, *, num_val_im: int = NUM_VAL_IM
) -> tuple[Vocabulary, int, Iterator[GTImage]]:
    """Vocabulary, image count and a generator of the images of ``split`` (module docstring); every image is
    checked, and a bad one named by its file, image id and field."""
    if split not in SPLITS:
        raise InputError(f"unknown split {split!r:.20} (GQA200 has {', '.join(SPLITS)})", field="split")
    vocab = load_vocab(files.id_info)
    path = files.train if split == "train" else files.test
    lists = _lists(path)
    kept = [
        i
        for i in range(len(lists["filenames_all"]))
        if not (split != "train" and i == SKIPPED_TEST_RECORD) and _has_boxes_and_relations(lists, i, path)
    ]
    if split == "val":
        kept = kept[:num_val_im]
    return vocab, len(kept), (_image(lists, i, path, vocab) for i in kept)


def _lists(path: str) -> dict[str, list]:
    doc = load_json(path)
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object of per-image lists", path=path)
    for key in LISTS:
        if not isinstance(doc.get(key), list):
            raise InputError("missing, or not a list", path=path, field=key)
    lengths = {key: len(doc[key]) for key in LISTS}
    if len(set(lengths.values())) != 1:
        odd = next(k for k in LISTS if lengths[k] != lengths[LISTS[0]])
        raise InputError(f"{lengths[odd]} entries, but {LISTS[0]} has {lengths[LISTS[0]]}", path=path, field=odd)
    return {key: doc[key] for key in LISTS}


def _has_boxes_and_relations(lists: dict[str, list], i: int, path: str) -> bool:
    boxes, rels = lists["gt_boxes_all"][i], lists["relationships_all"][i]
    for key, value in (("gt_boxes_all", boxes), ("relationships_all", rels)):
        if not isinstance(value, list):
            raise InputError("expected a list of rows", path=path, image_id=_image_id(lists, i, path), field=key)
    return len(boxes) > 0 and len(rels) > 0


def _image_id(lists: dict[str, list], i: int, path: str) -> int:
    name = lists["filenames_all"][i]
    stem = os.path.splitext(name)[0] if isinstance(name, str) else None
    if stem is None or not stem.isascii() or not stem.isdigit() or len(stem) > 18:
        raise InputError(f"{name!r:.40} is not <integer id>.jpg", path=path, position=i, field="filenames_all")
    return int(stem)


def _image(lists: dict[str, list], i: int, path: str, vocab: Vocabulary) -> GTImage:
    image_id = _image_id(lists, i, path)
    where = dict(path=path, image_id=image_id)
    info = lists["img_info_all"][i]
    size = [info.get(k) if isinstance(info, dict) else None for k in ("width", "height")]
    if not all(type(v) is int and v > 0 for v in size):
        raise InputError(f"width and height {size!r:.40} are not positive integers", field="img_info_all", **where)
    width, height = size
    boxes = json_array(lists["gt_boxes_all"][i], (None, 4), integer=False, field="gt_boxes_all", where=where)
    if np.any(boxes[:, 2:] < boxes[:, :2]):
        raise InputError("a box with x2 < x1 or y2 < y1", field="gt_boxes_all", **where)
    labels = json_array(lists["gt_classes_all"][i], (None,), integer=True, field="gt_classes_all", where=where)
    if len(labels) != len(boxes):
        raise InputError(f"{len(labels)} classes for {len(boxes)} boxes", field="gt_classes_all", **where)
    if labels.min() < 1 or labels.max() > vocab.num_objects:
        raise InputError(f"class index outside [1, {vocab.num_objects}]", field="gt_classes_all", **where)
    rels = json_array(lists["relationships_all"][i], (None, 3), integer=True, field="relationships_all", where=where)
    if rels[:, :2].min() < 0 or rels[:, :2].max() >= len(boxes):
        raise InputError(f"box index outside [0, {len(boxes) - 1}]", field="relationships_all", **where)
    if rels[:, 2].min() < 1 or rels[:, 2].max() > vocab.num_predicates:
        raise InputError(f"predicate outside [1, {vocab.num_predicates}]", field="relationships_all", **where)
    return GTImage(image_id, width, height, clip_to_image(boxes, width, height), labels, rels)
