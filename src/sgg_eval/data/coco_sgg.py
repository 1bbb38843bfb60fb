"""Reader for COCO-style scene-graph files as Maelic/SGG-Benchmark (the REACT toolkit) publishes its datasets (VG150,
IndoorVG, PSG): one JSON per split, faithful to its loader ``RelationDataset`` (``sgg_benchmark/data/datasets/
data.py`` @ 28a8261, read at a664201) and its evaluation GT (``get_groundtruth(i, evaluation=True)``); docs/
sgg_benchmark.md.

Files (``CocoSGGFiles.in_dir``): ``<root>/<split>/_annotations.coco.json``, the toolkit's layout. A file holds
``images`` [{id, file_name, width, height}], ``annotations`` [{id, image_id, category_id, bbox [x, y, w, h]}],
``rel_annotations`` [{image_id, subject_id, predicate_id, object_id}] (annotation ids), ``categories`` [{id, name}]
and ``rel_categories`` [{id, name}]. Other keys are ignored.

Rules reproduced:
- Class k is the k-th category by id (id 0 is the toolkit's background, so ids 1..C give labels 1..C and gaps
  are compacted); predicates likewise from ``rel_categories``.
- An image is kept when it has at least one ``rel_annotations`` entry (before any check), in ``images`` order;
  its boxes are its annotations in file order, ``[x, y, x + w, y + h]`` as float32, clipped to ``[0, W] x [0, H]``
  (not ``W - 1``: the toolkit's ``box_clip``; ``clip_boxes=False``, `--no-clip`, keeps them as written, as for
  VG150: every protocol then clips at evaluation as its tool does).
- A relation whose predicate id is unknown, or whose subject or object is not one of *this image's* annotations,
  is dropped, as the loader drops it silently; here each kind is counted in the store's metadata and printed.
- Evaluation GT keeps one predicate per (subject, object) pair: the loader draws it with ``np.random.choice`` from
  NumPy's global, unseeded generator. Here the draw is a ``RandomState(draw_seed)`` called as the loader calls the
  global one (image order, then pairs in first-appearance order, duplicates included; a one-predicate pair draws
  nothing), which equals the toolkit's evaluation when the global generator was seeded with ``draw_seed`` right
  before it. The draw is applied to the evaluation splits (``val``, ``test``); ``train`` keeps every relation, as
  the toolkit's statistics count them. ``keep_all_relations`` keeps every relation everywhere.
What the loader would crash on, or would read into something the file did not say, is refused in one line naming
the file, the image and the field: a category or predicate with id 0 (the toolkit overwrites it with its
background), two categories of one name, a duplicate id, an unknown ``category_id`` (the loader's KeyError), a box
that is not four finite numbers with ``w, h >= 0``, a size that is not two positive whole numbers, and an id
reference that is missing or not of its ids' type (an ``image_id``, ``subject_id`` or ``object_id`` that is not
an integer or text like the ids it names, a ``predicate_id`` that is not an integer: the loader crashes on some,
such as a missing key or a list, and silently drops the others; a well-typed id that names nothing is dropped and
counted, as above).

Images whose file is missing from the split folder are skipped by the toolkit; sgg-eval reads annotations only and
keeps them (docs/sgg_benchmark.md says how to check that both see the same images).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import GTImage, SplitMeta, Vocabulary
from sgg_eval.io.jsonio import is_pixel_count, json_array, load_json

SPLITS = ("train", "val", "test")
FLOAT32_MAX = float(np.finfo(np.float32).max)
ANNOTATIONS = "_annotations.coco.json"
EVALUATION_SPLITS = ("val", "test")  # the splits whose GT keeps one drawn predicate per pair
# what the loader leaves out without a word: counted per split in the store's metadata (``extra["dropped"]``)
DROPPED = {
    "annotations_of_unlisted_images": "annotations of an image the file does not list",
    "rel_annotations_of_unlisted_images": "relations of an image the file does not list",
    "relations_of_unknown_predicates": "relations whose predicate_id is not in rel_categories",
    "relations_to_annotations_of_other_images": "relations to an annotation that is not one of the image's",
    "relations_left_by_the_pair_draw": "relations beside the one predicate drawn for their (subject, object) pair",
}


@dataclass(frozen=True)
class CocoSGGFiles:
    annotations: dict  # split -> path

    @classmethod
    def in_dir(cls, root: str) -> CocoSGGFiles:
        """The toolkit's layout: ``root/<split>/_annotations.coco.json``."""
        return cls({s: os.path.join(root, s, ANNOTATIONS) for s in SPLITS})


@dataclass(frozen=True)
class CocoSGG:
    """COCO-style scene graphs (``kind: coco_sgg``): :class:`~sgg_eval.boxes.splits.Dataset` over the toolkit's
    files."""

    OPTIONS: ClassVar[tuple[str, ...]] = ("draw_seed", "keep_all_relations", "clip_boxes")

    name: str
    files: CocoSGGFiles
    draw_seed: int = 0
    keep_all_relations: bool = False
    clip_boxes: bool = True
    zeroshot_seen: tuple[str, ...] = ("train",)

    def open_split(self, split: str) -> tuple[SplitMeta, int, Iterator[GTImage]]:
        if split not in self.files.annotations:
            known = ", ".join(self.files.annotations)
            raise InputError(f"unknown split {split!r:.20} (the COCO-style files have {known})", field="split")
        path = self.files.annotations[split]
        doc = load_json(path)
        if not isinstance(doc, dict):
            raise InputError("expected a JSON object with images, annotations and categories", path=path)
        objects, object_index = _categories(doc, "categories", path, required=True)
        predicates, predicate_index = _categories(doc, "rel_categories", path, required=False)
        drawn = not self.keep_all_relations and split in EVALUATION_SPLITS
        draw = np.random.RandomState(self.draw_seed) if drawn else None
        images, dropped = _images(doc, path, object_index, predicate_index, draw, self.clip_boxes)
        rule = "every relation" if draw is None else f"one predicate per pair, drawn with seed {self.draw_seed}"
        # how its boxes are clipped (``boxes.split_gt.gt_boxes_of``): to [0, W], or not at all (--no-clip)
        extra = {"simulated": False, "relations": rule, "dropped": dropped, "boxes_clipped": self.clip_boxes,
                 "boxes_clip_edge": 0}  # fmt: skip
        meta = SplitMeta(split, Vocabulary(objects, predicates), self.name, False, f"COCO-style file {path}", extra)
        return meta, len(images), iter(images)


def _list(doc: dict, key: str, path: str, required: bool = True) -> list:
    value = doc.get(key, None if required else [])
    if not isinstance(value, list):
        raise InputError("missing, or not a list", path=path, field=key)
    return value


def _categories(doc: dict, key: str, path: str, required: bool) -> tuple[tuple[str, ...], dict[int, int]]:
    """Names in id order and id -> 1-based index (the position among the ids, as the loader sorts them)."""
    entries = _list(doc, key, path, required)
    names: dict[int, str] = {}
    for i, entry in enumerate(entries):
        where = dict(path=path, field=f"{key}[{i}]")
        if not isinstance(entry, dict) or type(entry.get("id")) is not int or not isinstance(entry.get("name"), str):
            raise InputError('expected {"id": integer, "name": string}', **where)
        if entry["id"] <= 0:
            raise InputError(
                f"id {entry['id']}: SGG-Benchmark's loader overwrites id 0 with its background and sorts the rest; "
                "number the entries from 1", **where)  # fmt: skip
        if entry["id"] in names:
            raise InputError(f"id {entry['id']} given twice", **where)
        if not entry["name"] or entry["name"] in names.values() or entry["name"] == "__background__":
            raise InputError(f"name {entry['name']!r:.40} is empty, repeated or the background's", **where)
        names[entry["id"]] = entry["name"]
    if not names:  # rel_categories may be left out of the file, but then the loader drops every relation
        raise InputError("no entry: nothing could be labelled or evaluated", path=path, field=key)
    ids = sorted(names)
    return tuple(names[i] for i in ids), {i: k + 1 for k, i in enumerate(ids)}


def _by_image(entries: list, key: str, path: str, image_ids: set, id_type: type | None, dropped: dict) -> dict:
    """Entries of ``key`` grouped by their ``image_id`` (file order kept). An entry of an image the file does not
    list is never read by the loader: counted in ``dropped``. An ``image_id`` that is missing or not of the images'
    id type is a broken file, not such an entry: refused."""
    grouped: dict = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InputError("expected an object", path=path, field=f"{key}[{i}]")
        image_id = _id(entry, "image_id", id_type, "the images' ids", path, f"{key}[{i}]")
        if image_id not in image_ids:
            dropped[f"{key}_of_unlisted_images"] += 1
            continue
        grouped.setdefault(image_id, []).append((i, entry))
    return grouped


def _id(entry: dict, key: str, id_type: type | None, whose: str, path: str, field: str, **where) -> int | str:
    """``entry[key]``, an integer or a text id; of ``id_type`` (the type of ``whose``) when that is known."""
    value = entry.get(key)
    if type(value) not in (int, str) or (id_type is not None and type(value) is not id_type):
        kind = {int: "an integer", str: "a text"}.get(id_type, "an integer or text")
        what = f"{key} {json.dumps(value)[:40]} is not" if key in entry else f"no {key}: expected"  # null, [], "1"
        raise InputError(f"{what} {kind} id like {whose}", path=path, field=field, **where)
    return value


def _id_type(entries: list, key: str, path: str) -> type | None:
    """The one type (int or str) of the ``id`` of every entry of ``key``; None when there is none."""
    types = {type(e.get("id")) for e in entries if isinstance(e, dict)}
    if types - {int, str} or len(types) > 1:
        raise InputError("ids must be all integers or all text", path=path, field=f"{key}.id")
    return types.pop() if types else None


def _images(
    doc: dict, path: str, object_index: dict, predicate_index: dict, draw, clip: bool
) -> tuple[list[GTImage], dict]:
    records = _list(doc, "images", path)
    ids = []
    for i, record in enumerate(records):
        if not isinstance(record, dict) or type(record.get("id")) not in (int, str):
            raise InputError("expected an object with an integer or string id", path=path, field=f"images[{i}]")
        ids.append(record["id"])
    if len({type(x) for x in ids}) > 1:  # a split store's ids are all integers or all text
        raise InputError("image ids mix integers and text", path=path, field="images.id")
    listed: set = set()
    for image_id in ids:  # one pass: counting each id in the list would take quadratic time on a large file
        if image_id in listed:
            raise InputError(f"image id {image_id!r:.40} given twice", path=path, field="images")
        listed.add(image_id)
    dropped = dict.fromkeys(DROPPED, 0)
    image_type = type(ids[0]) if ids else None
    annotations, relations = _list(doc, "annotations", path), _list(doc, "rel_annotations", path, False)
    annotation_type = _id_type(annotations, "annotations", path)
    boxes_of = _by_image(annotations, "annotations", path, listed, image_type, dropped)
    rels_of = _by_image(relations, "rel_annotations", path, listed, image_type, dropped)
    seen_annotations: set = set()
    images = []
    for record in records:
        if record["id"] not in rels_of:
            continue  # the loader keeps only images with a relation entry
        where = dict(path=path, image_id=record["id"])
        width, height = _size(record, where)
        boxes, labels, index_of = _objects(boxes_of.get(record["id"], []), object_index, seen_annotations, where)
        rels = []
        for i, rel in rels_of[record["id"]]:
            at = dict(path=path, field=f"rel_annotations[{i}]", image_id=record["id"])
            s, o = (_id(rel, k, annotation_type, "the annotations' ids", **at) for k in ("subject_id", "object_id"))
            p = _id(rel, "predicate_id", int, "the rel_categories' ids", **at)
            if p not in predicate_index:
                dropped["relations_of_unknown_predicates"] += 1
            elif s not in index_of or o not in index_of:
                dropped["relations_to_annotations_of_other_images"] += 1
            else:
                rels.append((index_of[s], index_of[o], predicate_index[p]))
        if draw is not None:
            kept = one_per_pair(rels, draw)
            dropped["relations_left_by_the_pair_draw"] += len(rels) - len(kept)
            rels = kept
        if clip:
            np.clip(boxes[:, 0::2], 0, width, out=boxes[:, 0::2])
            np.clip(boxes[:, 1::2], 0, height, out=boxes[:, 1::2])
        rel_array = np.array(rels, dtype=np.int64).reshape(-1, 3)
        images.append(GTImage(record["id"], width, height, boxes, labels, rel_array))
    return images, dropped


def _size(record: dict, where: dict) -> tuple[int, int]:
    size = [record.get("width"), record.get("height")]
    if not all(is_pixel_count(v) for v in size):
        raise InputError(f"{size!r:.40} is not a width and height in whole pixels", field="width/height", **where)
    return int(size[0]), int(size[1])


def _objects(entries: list, object_index: dict, seen: set, where: dict) -> tuple[np.ndarray, np.ndarray, dict]:
    """Boxes (xyxy float32), labels and annotation id -> box index of one image's annotations."""
    index_of, labels, xywh = {}, [], []
    for i, ann in entries:
        at = dict(where, field=f"annotations[{i}]")
        if type(ann.get("id")) not in (int, str) or ann["id"] in seen:
            raise InputError(f"annotation id {ann.get('id')!r:.40} missing or given twice", **at)
        seen.add(ann["id"])
        if type(ann.get("category_id")) is not int or ann["category_id"] not in object_index:
            raise InputError(f"category_id {ann.get('category_id')!r:.40} is not in categories", **at)
        index_of[ann["id"]] = len(labels)
        labels.append(object_index[ann["category_id"]])
        xywh.append(ann.get("bbox"))
    box = json_array(xywh, (None, 4), integer=False, field="annotations.bbox", where=where)
    if np.any(box[:, 2:] < 0):
        raise InputError("a bbox [x, y, w, h] with w < 0 or h < 0", field="annotations.bbox", **where)
    # the loader adds in Python floats (float64), then stores float32
    xyxy = np.concatenate([box[:, :2], box[:, :2] + box[:, 2:]], axis=1)
    if np.any(np.abs(np.concatenate([box, xyxy], axis=1)) > FLOAT32_MAX):
        raise InputError("a bbox beyond what float32 holds (the loader's dtype)", field="annotations.bbox", **where)
    xyxy = xyxy.astype(np.float32)
    return xyxy, np.array(labels, dtype=np.int64), index_of


def one_per_pair(rels: list[tuple[int, int, int]], draw: np.random.RandomState) -> list[tuple[int, int, int]]:
    """One relation per (subject, object) pair, pairs in first-appearance order, its predicate drawn from the pair's
    list (duplicates included) as the loader's ``np.random.choice(list)`` draws it."""
    groups: dict[tuple[int, int], list[int]] = {}
    for s, o, p in rels:
        groups.setdefault((s, o), []).append(p)
    return [(s, o, int(draw.choice(ps))) for (s, o), ps in groups.items()]


def dropped_summary(extra: dict) -> str:
    """What a split store's loader left out, in words (``""`` when nothing): the line `sgg-eval split` prints."""
    counts = extra.get("dropped") or {}
    return "; ".join(f"{counts[key]} {DROPPED[key]}" for key in DROPPED if counts.get(key))
