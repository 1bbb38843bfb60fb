"""Reader for Open Images V6 as BGNN / PySGG prepare it for SGG (601 object classes, 30 predicates), faithful to
``pysgg/data/datasets/open_image.py`` of SHTUPLUS/PySGG at a63942a (the released BGNN code; docs/oiv6.md).

Files, in one folder (``OIV6Files.in_dir``: the folder or its ``annotations/``), under PySGG's names:
- ``categories_dict.json``: ``{"rel": [30 predicate names], "obj": [601 class names]}``; the loader puts
  ``__background__`` in front of both, so the 1-based id k is entry k - 1.
- ``vrd-{train,val,test}-anno.json``: a list, one object per image in dataset order: ``img_fn`` (the file stem),
  ``img_size`` ``[width, height]``, ``bbox`` ``[[x1, y1, x2, y2], ...]`` pixels, ``det_labels`` (0-based class
  per box) and ``rel`` ``[[subject box, object box, 0-based predicate], ...]``. Other keys are ignored.

Rules reproduced:
- An image with no relation or no box is dropped (every split, as with relations on); the others keep the file's
  order, and an image's id is its position among the kept images: the evaluator's image id, and the order in
  which PySGG's ``eval_results.pytorch`` lists them.
- Labels and predicates are shifted to 1-based. Boxes are the file's, as float32, clipped to ``[0, W - 1] x
  [0, H - 1]`` (``clip_to_image(remove_empty=False)`` at evaluation; no box is removed). Duplicate relation rows
  are kept (the loader's duplicate filter is training-only and random: not a rule of the ground truth).
What the loader would crash on or read silently wrong is refused, naming the file, the image (``img_fn`` and its
position in the file) and the field: a class >= 601, a predicate >= 30, a relation to a box the image does not
have, a box with x2 < x1 or y2 < y1, a size that is not two positive integers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import GTImage, SplitMeta, Vocabulary, clip_to_image
from sgg_eval.io.jsonio import is_pixel_count, json_array, load_json, name_list

SPLITS = ("train", "val", "test")
CATEGORIES = "categories_dict.json"
ANNOTATIONS = "vrd-{split}-anno.json"


@dataclass(frozen=True)
class OIV6Files:
    categories: str
    annotations: dict  # split -> path

    @classmethod
    def in_dir(cls, root: str) -> OIV6Files:
        """The files in ``root`` or, as PySGG lays them out, in ``root/annotations``."""
        sub = os.path.join(root, "annotations")
        base = sub if not os.path.isfile(os.path.join(root, CATEGORIES)) and os.path.isdir(sub) else root
        return cls(os.path.join(base, CATEGORIES), {s: os.path.join(base, ANNOTATIONS.format(split=s)) for s in SPLITS})


@dataclass(frozen=True)
class OIV6:
    """Open Images V6 (``kind: oiv6``): :class:`~sgg_eval.boxes.splits.Dataset` over PySGG's files."""

    OPTIONS: ClassVar[tuple[str, ...]] = ()  # its conf keys (splits.READERS): none, the files say everything

    name: str
    files: OIV6Files
    zeroshot_seen: tuple[str, ...] = ("train",)

    def open_split(self, split: str) -> tuple[SplitMeta, int, Iterator[GTImage]]:
        if split not in SPLITS:
            raise InputError(f"unknown split {split!r:.20} (Open Images V6 has {', '.join(SPLITS)})", field="split")
        vocab = load_vocab(self.files.categories)
        path = self.files.annotations[split]
        entries = load_json(path)
        if not isinstance(entries, list):
            raise InputError("expected a JSON list of images", path=path)
        kept = [i for i, entry in enumerate(entries) if _has_boxes_and_relations(entry, i, path)]
        source = f"Open Images V6 files {self.files.categories}, {path} (PySGG's split)"
        meta = SplitMeta(split, vocab, self.name, False, source, {"simulated": False})
        images = (_image(entries[i], position, i, path, vocab) for position, i in enumerate(kept))
        return meta, len(kept), images


def load_vocab(path: str) -> Vocabulary:
    """Class and predicate names from ``categories_dict.json`` (``obj`` and ``rel``, without a background)."""
    info = load_json(path)
    if not isinstance(info, dict):
        raise InputError('expected a JSON object {"rel": [...], "obj": [...]}', path=path)
    return Vocabulary(*(tuple(name_list(info.get(key), path=path, field=key)) for key in ("obj", "rel")))


def _has_boxes_and_relations(entry, i: int, path: str) -> bool:
    if not isinstance(entry, dict):
        raise InputError("expected an object per image", path=path, position=i)
    for key in ("bbox", "rel", "det_labels"):
        if not isinstance(entry.get(key), list):
            raise InputError("missing, or not a list", path=path, image_id=_name(entry), position=i, field=key)
    return len(entry["rel"]) > 0 and len(entry["bbox"]) > 0


def _name(entry: dict) -> str:
    name = entry.get("img_fn")
    return repr(name)[:40] if not isinstance(name, str) else name[:40]


def _image(entry: dict, image_id: int, i: int, path: str, vocab: Vocabulary) -> GTImage:
    """Kept image ``i`` of the file (``image_id``: its position among the kept ones), checked and clipped."""
    if not isinstance(entry.get("img_fn"), str) or not entry["img_fn"]:
        raise InputError("missing, or not a file name", path=path, position=i, field="img_fn")
    where = dict(path=path, image_id=_name(entry), position=i)
    size = entry.get("img_size")
    if not (isinstance(size, list) and len(size) == 2 and all(is_pixel_count(v) for v in size)):
        raise InputError(f"{size!r:.40} is not [width, height] in whole pixels", field="img_size", **where)
    width, height = int(size[0]), int(size[1])
    boxes = json_array(entry["bbox"], (None, 4), integer=False, field="bbox", where=where)
    if np.any(boxes[:, 2:] < boxes[:, :2]):
        raise InputError("a box with x2 < x1 or y2 < y1", field="bbox", **where)
    labels = json_array(entry["det_labels"], (None,), integer=True, field="det_labels", where=where)
    if len(labels) != len(boxes):
        raise InputError(f"{len(labels)} labels for {len(boxes)} boxes", field="det_labels", **where)
    if (bad := _outside(labels, vocab.num_objects)) is not None:
        raise InputError(f"class {bad} outside [0, {vocab.num_objects - 1}]", field="det_labels", **where)
    rels = json_array(entry["rel"], (None, 3), integer=True, field="rel", where=where)
    if (bad := _outside(rels[:, :2], len(boxes))) is not None:
        raise InputError(f"a relation to box {bad}, but the image has {len(boxes)} boxes", field="rel", **where)
    if (bad := _outside(rels[:, 2], vocab.num_predicates)) is not None:
        raise InputError(f"predicate {bad} outside [0, {vocab.num_predicates - 1}]", field="rel", **where)
    return GTImage(image_id, width, height, clip_to_image(boxes, width, height), labels + 1, rels + np.array([0, 0, 1]))


def _outside(values: np.ndarray, n: int) -> int | None:
    """A value of ``values`` outside ``[0, n)`` (the largest if any is too large, else the smallest), or None."""
    if values.max() >= n:
        return int(values.max())
    return int(values.min()) if values.min() < 0 else None
