"""Reader for GQA's scene graphs (Hudson & Manning 2019) split as Knyazev et al. 2020 split them for SGG, and
GQA-nLR (without "to the left of" / "to the right of"); faithful to ``dataloaders/gqa.py`` and
``dataloaders/visual_genome.py`` of bknyaz/sgg at 1a3c3ae.

Files, in one folder (``GQAFiles.in_dir``), under GQA's download names:
- ``train_sceneGraphs.json`` and ``val_sceneGraphs.json`` (in the folder or its ``sceneGraphs/``): image id (text,
  e.g. ``"2354786"``, ``"n161313"``) -> ``{width, height, objects}``; an object id -> ``{name, x, y, w, h,
  relations: [{name, object}]}``, x, y the top-left corner in pixels, the owner of a relation its subject.
- optionally the ids of the images with questions: Knyazev's cache ``train_images.json`` / ``val_images.json``
  (a list of ids), else ``train_balanced_questions.json`` / ``val_balanced_questions.json`` (their ``imageId``
  values; in the folder or its ``questions/``). Without them, every scene graph is a candidate image.

Rules reproduced:
- Vocabularies: the object and relation names over *every* image of both scene-graph files, sorted (code-point
  order), background at index 0.
- Candidates sorted as text. test = the official val scene graphs ("GQA has no public test SGs"); val = the first
  ``num_val_im`` (5,000) train candidates, *before* any image is dropped; train = the rest.
- An object is skipped when x < 0, y < 0, w <= 0 or h <= 0, with the relations that touch it. Boxes are
  ``[x, y, x + w, y + h]`` pixels as given (no clipping, no 1024 scale: Knyazev evaluates on raw pixels).
- Objects are indexed in their ids' text order; relations kept in file order, duplicates kept.
- An image is dropped when none of its kept objects has an outgoing relation in the file, or when no relation
  is left. GQA-nLR removes the two predicates before that last check; names and indices stay the same.
- Zero-shot (``ZEROSHOT_SEEN``): a test triplet is zero-shot when neither train nor val holds it (``test_zs``).
A relation to an object id the image does not have is refused (Knyazev's loader skips it silently, as if its
object had a bad box): it is a broken file, not a rule.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from sgg_eval.core.defaults import NUM_VAL_IM
from sgg_eval.core.errors import InputError
from sgg_eval.data.image_ids import check_image_id
from sgg_eval.data.types import GTImage, SplitMeta, Vocabulary
from sgg_eval.io.jsonio import load_json

SPLITS = ("train", "val", "test")
LEFT_RIGHT = ("to the left of", "to the right of")
ZEROSHOT_SEEN = ("train", "val")  # Knyazev's test_zs: never seen in train_orig or val_alls
GRAPHS = {"train": "train", "val": "train", "test": "val"}  # the scene-graph file each split reads
GRAPH_FILES = ("train_sceneGraphs.json", "val_sceneGraphs.json")


def _first(root: str, names: list[str]) -> str | None:
    return next((os.path.join(root, n) for n in names if os.path.isfile(os.path.join(root, n))), None)


@dataclass(frozen=True)
class GQAFiles:
    train_graphs: str
    val_graphs: str
    train_ids: str | None = None  # None: every scene graph of the file is a candidate
    val_ids: str | None = None

    @classmethod
    def in_dir(cls, root: str) -> GQAFiles:
        graphs = [_first(root, [f, f"sceneGraphs/{f}"]) or os.path.join(root, f) for f in GRAPH_FILES]
        ids = [
            _first(root, [f"{m}_images.json", f"{m}_balanced_questions.json", f"questions/{m}_balanced_questions.json"])
            for m in ("train", "val")
        ]
        return cls(*graphs, *ids)


@dataclass
class GQA:
    """The GQA dataset (``kind: gqa``): :class:`~sgg_eval.boxes.splits.Dataset` over the raw files."""

    OPTIONS: ClassVar[tuple[str, ...]] = ("num_val_im", "exclude_left_right")  # its conf keys (splits.READERS)

    name: str
    files: GQAFiles
    num_val_im: int = NUM_VAL_IM
    exclude_left_right: bool = False
    zeroshot_seen: tuple[str, ...] = ZEROSHOT_SEEN
    _parsed: dict = field(default_factory=dict, repr=False)  # each scene-graph file, parsed once

    def graphs(self, which: str) -> dict:
        """One scene-graph file (``train`` or ``val``), parsed once and checked for the structure every rule
        reads; an image is named by its id and the field that is wrong."""
        if which not in self._parsed:
            path = getattr(self.files, f"{which}_graphs")
            doc = load_json(path)
            if not isinstance(doc, dict):
                raise InputError("expected a JSON object of image id -> scene graph", path=path)
            for image_id, graph in doc.items():
                _check_graph(image_id, graph, path)
            self._parsed[which] = doc
        return self._parsed[which]

    @cached_property
    def vocab(self) -> Vocabulary:
        """The object and predicate names of both files' images, sorted; indices start at 1 (0: background)."""
        objects, predicates = set(), set()
        for which in ("train", "val"):
            for graph in self.graphs(which).values():
                for obj in graph["objects"].values():
                    objects.add(obj["name"])
                    predicates.update(rel["name"] for rel in obj["relations"])
        return Vocabulary(tuple(sorted(objects)), tuple(sorted(predicates)))

    def candidates(self, split: str) -> list[str]:
        """The split's image ids before any is dropped: the question images (or every scene graph), sorted as
        text, val the first ``num_val_im`` train ones."""
        which = GRAPHS[split]
        graphs, ids_path = self.graphs(which), getattr(self.files, f"{which}_ids")
        ids = sorted(graphs) if ids_path is None else sorted(_question_ids(ids_path))
        missing = next((i for i in ids if i not in graphs), None)
        if missing is not None:
            raise InputError(
                f"image {missing!r:.40} has questions but no scene graph in {getattr(self.files, f'{which}_graphs')}",
                path=ids_path,
            )
        return ids[: self.num_val_im] if split == "val" else ids[self.num_val_im :] if split == "train" else ids

    def open_split(self, split: str) -> tuple[SplitMeta, int, Iterator[GTImage]]:
        if split not in SPLITS:
            raise InputError(f"unknown split {split!r:.20} (GQA has {', '.join(SPLITS)})", field="split")
        vocab = self.vocab
        drop = set()
        if self.exclude_left_right:
            absent = [p for p in LEFT_RIGHT if p not in vocab.predicate_classes]
            if absent:
                raise InputError(
                    f"GQA-nLR removes {absent[0]!r}, but no relation of the scene graphs has that name",
                    path=self.files.train_graphs,
                )
            drop = {vocab.predicate_classes.index(p) + 1 for p in LEFT_RIGHT}
        path = getattr(self.files, f"{GRAPHS[split]}_graphs")
        graphs = self.graphs(GRAPHS[split])
        index = _Index(vocab)
        images = [img for i in self.candidates(split) if (img := _image(i, graphs[i], index, drop, path)) is not None]
        nlr = " without 'to the left of'/'to the right of' (GQA-nLR)" if drop else ""
        source = f"GQA scene graphs {path} (Knyazev et al.'s split{nlr})"
        meta = SplitMeta(split, vocab, self.name, False, source, {"simulated": False, "exclude_left_right": bool(drop)})
        return meta, len(images), iter(images)


class _Index:
    """Class and predicate names -> their 1-based indices."""

    def __init__(self, vocab: Vocabulary):
        self.objects = {n: i for i, n in enumerate(vocab.object_classes, 1)}
        self.predicates = {n: i for i, n in enumerate(vocab.predicate_classes, 1)}


def _question_ids(path: str) -> set[str]:
    doc = load_json(path)
    if isinstance(doc, list):  # Knyazev's cache: the ids themselves
        ids = doc
    elif isinstance(doc, dict):  # balanced questions: question id -> {imageId, ...}
        ids = [q.get("imageId") if isinstance(q, dict) else None for q in doc.values()]
    else:
        raise InputError("expected a list of image ids or an object of questions", path=path)
    bad = [i for i in ids if not isinstance(i, str)][:1]
    if bad:
        raise InputError(f"image id {bad[0]!r:.40} is not text", path=path, field="imageId")
    return set(ids)


def _check_graph(image_id: str, graph, path: str) -> None:
    where = dict(path=path, image_id=image_id)
    check_image_id(image_id, where)
    if not isinstance(graph, dict) or not isinstance(graph.get("objects"), dict):
        raise InputError("expected a scene graph with an object of objects", field="objects", **where)
    for oid, obj in graph["objects"].items():
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
            raise InputError(f"object {oid!r:.40}: no name", field="objects.name", **where)
        rels = obj.get("relations")
        if not isinstance(rels, list) or not all(
            isinstance(r, dict) and isinstance(r.get("name"), str) and r["name"] and isinstance(r.get("object"), str)
            for r in rels
        ):
            raise InputError(f"object {oid!r:.40}: expected a list of {{name, object}}", field="relations", **where)
        target = next((r["object"] for r in rels if r["object"] not in graph["objects"]), None)
        if target is not None:
            raise InputError(
                f"object {oid!r:.20}: a relation to unknown object {target!r:.20}", field="relations", **where
            )


def _image(image_id: str, graph: dict, index: _Index, drop: set[int], path: str) -> GTImage | None:
    """The GT of one image by the module's rules, or None when they drop it."""
    where = dict(path=path, image_id=image_id)
    size = [graph.get(k) for k in ("width", "height")]
    if not all(type(v) is int and v > 0 for v in size):
        raise InputError(f"width and height {size!r:.40} are not positive integers", field="width/height", **where)
    kept, boxes, labels, raw, any_rel = _kept_objects(graph["objects"], index, where)
    if not any_rel:
        return None
    rels = []
    for subject, target, name in raw:
        predicate = index.predicates[name]
        if target in kept and predicate not in drop:
            rels.append((kept[subject], kept[target], predicate))
    if not rels:
        return None
    width, height = size
    wide = np.array(boxes, dtype=np.float64)
    if np.abs(wide).max() > 2**24:  # float32 (the stores' boxes) holds whole pixels exactly up to 2^24
        raise InputError("a box coordinate past 2^24 pixels", field="x/y/w/h", **where)
    # valid by construction (the id and names checked by _check_graph, whole-pixel boxes with w, h > 0, labels
    # and predicates from the vocabulary, kept objects' indices); write_split validates every image once more
    return GTImage(image_id, width, height, wide.astype(np.float32), labels, rels)


def _kept_objects(objects: dict, index: _Index, where: dict) -> tuple[dict, list, list, list, bool]:
    """In sorted id order, the objects Knyazev's rules keep: ``kept`` (id -> row), their ``boxes`` (x1 y1 x2 y2)
    and ``labels``, their relations ``raw`` (subject id, target id, name), and whether any of them has one."""
    kept, boxes, labels, raw, any_rel = {}, [], [], [], False
    for oid in sorted(objects):
        obj = objects[oid]
        xywh = [obj.get(k) for k in ("x", "y", "w", "h")]
        if not all(type(v) is int for v in xywh):  # GQA's boxes are whole pixels
            message = f"object {oid!r:.40}: x, y, w, h {xywh!r:.60} are not integers"
            raise InputError(message, field="x/y/w/h", **where)
        x, y, w, h = xywh
        if x < 0 or y < 0 or w <= 0 or h <= 0:
            continue  # Knyazev's rule: a box off the image's corner or empty is skipped, with its relations
        kept[oid] = len(labels)
        labels.append(index.objects[obj["name"]])
        boxes.append((x, y, x + w, y + h))
        any_rel = any_rel or bool(obj["relations"])
        raw.extend((oid, r["object"], r["name"]) for r in obj["relations"])
    return kept, boxes, labels, raw, any_rel
