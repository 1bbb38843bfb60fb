"""Action Genome's ground truth as STTran's loader builds it (``yrcong/STTran`` @ 6b559e1,
``dataloader/action_genome.py``, ``AG.__init__``, mode ``"test"`` or ``"train"``, ``filter_nonperson_box_frame``).

Which frames are scored:

1. ``person_bbox.pkl``'s keys in their stored order (``"<video>/<frame>.png"``). A frame is a candidate when the
   ``metadata.set`` of the *first* entry of its object list is the split and *any* of its objects is visible;
   candidates are grouped by video (videos in order of their first candidate, frames in key order).
2. A candidate whose person box has 0 rows is dropped ("frames have no human bbox").
3. STTran keeps a video only if *more than 2* frames remain (1: "only one frame", 0 or 2: "invalid (no person)");
   OED keeps every video with a frame. The split holds every video with a frame, and the counts STTran's loader
   prints; each protocol takes the videos it scores (``video.ag_protocol``).

The GT of a kept frame: box 0 is the person box as stored (x1, y1, x2, y2); then each visible object in list
order, its ``(x, y, w, h)`` as ``(x, y, x + w, y + h)`` in float64, its label the position of its name in the
object list. Relations, object by object: ``(person, object, attention)``, then ``(object, person, s)`` for each
spatial name (the object is the subject), then ``(person, object, c)`` for each contacting name; duplicates are
kept. The attention list must hold exactly one name (STTran indexes with it). Each frame keeps its size, the
person entry's ``bbox_size`` (width, height; NaN when the entry has none), which OED clamps GT boxes to.

The pickles are read with :mod:`sgg_eval.formats.plain_pickle`: plain data, nothing executed.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import STTRAN_MIN_VIDEO_FRAMES
from sgg_eval.formats.plain_pickle import load_plain, plain_array
from sgg_eval.video.ag_names import ATTENTION, CONTACTING, GROUPS, PERSON, SPATIAL, AGVocabulary

PERSON_FILE, OBJECT_FILE = "person_bbox.pkl", "object_bbox_and_relationship.pkl"
SMALL_BOX_FILE = "object_bbox_and_relationship_filtersmall.pkl"  # the STTran authors' file, for SGCls and SGDet
SPLITS = ("train", "test")
_RELATION_FIELD = {ATTENTION: "attention_relationship", SPATIAL: "spatial_relationship",
                   CONTACTING: "contacting_relationship"}  # fmt: skip


@dataclass
class AGSplit:
    """The scored frames of one split, flat and in STTran's order. Axes: ``V`` videos, ``F`` frames, ``N`` boxes,
    ``R`` relations. ``frame_video [F]`` (int32) is each frame's video; ``box_offsets``/``rel_offsets [F + 1]``
    delimit a frame's boxes and relations; ``boxes [N, 4]`` float64 x1 y1 x2 y2, ``labels [N]`` int32 (1..36, the
    person first in each frame); ``rels [R, 3]`` int32 (subject, object: indices within the frame; predicate
    1..26); ``frame_size [F, 2]`` float64 (width, height; NaN: not in the file). ``counts``: what STTran's loader
    prints about the frames and videos it dropped."""

    split: str
    videos: list[str]
    frame_keys: list[str]
    frame_video: np.ndarray
    boxes: np.ndarray
    labels: np.ndarray
    box_offsets: np.ndarray
    rels: np.ndarray
    rel_offsets: np.ndarray
    frame_size: np.ndarray
    counts: dict = field(default_factory=dict)

    @property
    def num_frames(self) -> int:
        return len(self.frame_keys)

    @property
    def box_frame(self) -> np.ndarray:
        """``[N]``: each box's frame."""
        return np.repeat(np.arange(self.num_frames), np.diff(self.box_offsets))

    @property
    def rel_frame(self) -> np.ndarray:
        """``[R]``: each relation's frame."""
        return np.repeat(np.arange(self.num_frames), np.diff(self.rel_offsets))

    def rel_boxes(self, rel_frame: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``([R], [R])``: each relation's subject and object box, as indices into ``boxes`` (``rel_frame``: the
        relations' frames, when the caller has them)."""
        first = self.box_offsets[:-1][self.rel_frame if rel_frame is None else rel_frame]
        return first + self.rels[:, 0], first + self.rels[:, 1]


def load_persons(annotations: str) -> dict:
    """``annotations/person_bbox.pkl``, read once for every split made from it."""
    path = os.path.join(annotations, PERSON_FILE)
    return _mapping(load_plain(path), path)


def read_ag_split(annotations: str, vocab: AGVocabulary, split: str, object_file: str | None = None, *,
                  persons: dict | None = None) -> AGSplit:  # fmt: skip
    """The frames of ``split`` (``"test"`` or ``"train"``) from ``annotations/person_bbox.pkl`` (or ``persons``,
    :func:`load_persons`'s) and the object file (``annotations/object_bbox_and_relationship.pkl`` unless
    ``object_file`` names another, e.g. the STTran authors' small-box-filtered one for SGCls and SGDet)."""
    person_path = os.path.join(annotations, PERSON_FILE)
    object_path = object_file or os.path.join(annotations, OBJECT_FILE)
    persons = load_persons(annotations) if persons is None else persons
    objects = _mapping(load_plain(object_path), object_path)
    reader = _FrameReader(vocab, person_path, object_path)
    videos: dict[str, list[str]] = {}
    for key in persons:
        entries = objects.get(key)
        if entries is None:
            raise InputError(f"frame {key!r} of {PERSON_FILE} is missing", path=object_path)
        if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
            raise InputError("expected a non-empty list of object dicts", path=object_path, field=key)
        if reader.split_of(key, entries[0]) == split and any(reader.visible(key, e) for e in entries):
            video = _video_of(key, person_path)
            videos.setdefault(video, []).append(key)
    builder = _SplitBuilder(split)
    for video, keys in videos.items():
        kept = []
        for key in keys:
            person = reader.person_box(key, persons[key])
            if person is None:
                builder.counts["frames_without_person_box"] += 1
            else:
                kept.append((key, person))
        builder.counts["valid_frames"] += len(kept)
        if kept:
            builder.add_video(video, [(key, person, reader.frame(key, objects[key])) for key, person in kept])
        if len(kept) == 1:
            builder.counts["one_frame_videos"] += 1
        elif len(kept) <= 2:
            builder.counts["videos_without_person"] += 1
    return builder.build()


def _mapping(obj, path: str) -> dict:
    if not isinstance(obj, dict) or not all(isinstance(k, str) for k in obj):
        raise InputError("expected a dict keyed by frame name ('<video>/<frame>.png')", path=path)
    return obj


def _video_of(key: str, path: str) -> str:
    parts = key.split("/")
    if len(parts) != 2 or not parts[0] or not parts[1] or not key.isascii() or not key.isprintable():
        raise InputError(f"frame name {key!r:.80} is not '<video>/<frame>.png'", path=path)
    return parts[0]


class _FrameReader:
    """Reads and checks one frame's entries, naming the file, the frame and the field on bad input."""

    def __init__(self, vocab: AGVocabulary, person_path: str, object_path: str):
        self.vocab, self.person_path, self.object_path = vocab, person_path, object_path
        self.object_label = {name: i + 1 for i, name in enumerate(vocab.objects)}
        self.predicate = {g: {name: s + j + 1 for j, name in enumerate(vocab.predicates[s:e])} for g, s, e in GROUPS}

    def _fail(self, message: str, key: str, what: str, path: str | None = None):
        raise InputError(message, path=path or self.object_path, image_id=key, field=what)

    def split_of(self, key: str, entry: dict):
        meta = entry.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("set"), str):
            self._fail("expected a dict with the text 'set'", key, "metadata")
        return meta["set"]

    def visible(self, key: str, entry: dict) -> bool:
        value = entry.get("visible")
        if type(value) is not bool:
            self._fail(f"expected True or False, got {value!r:.40}", key, "visible")
        return value

    def person_box(self, key: str, entry) -> tuple[np.ndarray, np.ndarray] | None:
        """The person box (float64 [4]) and the frame's size (``bbox_size``, float64 [2], NaN when absent), or
        None when the detector found nobody (0 rows)."""
        if not isinstance(entry, dict) or "bbox" not in entry:
            self._fail("expected a dict with 'bbox'", key, "bbox", self.person_path)
        box = plain_array(entry["bbox"], self.person_path, "bbox")
        if box.ndim >= 1 and box.shape[0] == 0:
            return None
        if box.shape not in ((1, 4), (4,)):
            self._fail(f"shape {list(box.shape)}: one [1, 4] box expected", key, "bbox", self.person_path)
        box = box.reshape(4).astype(np.float64)
        if not np.isfinite(box).all():
            self._fail("a coordinate is not finite", key, "bbox", self.person_path)
        return box, self._size(key, entry.get("bbox_size"))

    def _size(self, key: str, value) -> np.ndarray:
        if value is None:
            return np.full(2, np.nan)
        size = plain_array(value, self.person_path, "bbox_size").reshape(-1)
        if size.shape != (2,) or not np.isfinite(size).all() or np.any(size <= 0):
            self._fail("expected (width, height), two positive numbers", key, "bbox_size", self.person_path)
        return size.astype(np.float64)

    def frame(self, key: str, entries: list) -> tuple[list, list, list]:
        """The visible objects' boxes and labels, and the relations, in STTran's order."""
        boxes, labels, rels = [], [], []
        for entry in entries:
            if not self.visible(key, entry):
                continue
            m = len(boxes) + 1  # the person is box 0
            name = entry.get("class")
            if type(name) is not str or name not in self.object_label:
                self._fail(f"object class {name!r:.40} is not one of Action Genome's 36", key, "class")
            bbox = entry.get("bbox")
            if bbox is None:
                self._fail("a visible object without a box", key, "bbox")
            boxes.append(self._box(key, bbox))
            labels.append(self.object_label[name])
            names = {g: self._names(key, entry, g) for g in (ATTENTION, SPATIAL, CONTACTING)}
            if len(names[ATTENTION]) != 1:
                self._fail(f"{len(names[ATTENTION])} names: exactly one expected", key, _RELATION_FIELD[ATTENTION])
            rels.append((0, m, names[ATTENTION][0]))
            rels.extend((m, 0, p) for p in names[SPATIAL])
            rels.extend((0, m, p) for p in names[CONTACTING])
        return boxes, labels, rels

    def _box(self, key: str, bbox) -> tuple[float, float, float, float]:
        """``(x, y, x + w, y + h)``, the sums in the box's own type, as STTran adds the two values it reads: Python
        floats in the release (checked without NumPy there: a frame has a few objects, the release 300,000)."""
        if type(bbox) is tuple and len(bbox) == 4 and all(type(v) is float for v in bbox):
            x, y, w, h = bbox
            x2, y2 = x + w, y + h
            if math.isfinite(x) and math.isfinite(y) and math.isfinite(x2) and math.isfinite(y2) and w == w and h == h:
                return x, y, x2, y2
            self._fail("expected four finite numbers (x, y, w, h)", key, "bbox")
        xywh = plain_array(bbox, self.object_path, "bbox").reshape(-1)
        if xywh.shape != (4,) or not np.isfinite(xywh).all():
            self._fail("expected four finite numbers (x, y, w, h)", key, "bbox")
        return float(xywh[0]), float(xywh[1]), float(xywh[0] + xywh[2]), float(xywh[1] + xywh[3])

    def _names(self, key: str, entry: dict, group: str) -> list[int]:
        what = _RELATION_FIELD[group]
        names = entry.get(what)
        if not isinstance(names, (list, tuple)):
            self._fail(f"expected a list of names, got {type(names).__name__}", key, what)
        ids = []
        for name in names:
            if type(name) is not str or name not in self.predicate[group]:  # a list or dict would not even hash
                self._fail(f"{name!r:.40} is not one of Action Genome's {group} predicates", key, what)
            ids.append(self.predicate[group][name])
        return ids


class _SplitBuilder:
    def __init__(self, split: str):
        self.split = split
        self.videos: list[str] = []
        self.keys: list[str] = []
        self.frame_video: list[int] = []
        self.boxes: list = []
        self.labels: list[int] = []
        self.box_offsets, self.rels, self.rel_offsets = [0], [], [0]
        self.sizes: list = []
        self.counts = dict.fromkeys(("valid_frames", "frames_without_person_box", "one_frame_videos",
                                     "videos_without_person"), 0)  # fmt: skip

    def add_video(self, video: str, frames: list) -> None:
        for key, (person, size), (boxes, labels, rels) in frames:
            self.keys.append(key)
            self.frame_video.append(len(self.videos))
            self.sizes.append(size)
            self.boxes.append(tuple(person))
            self.boxes.extend(boxes)
            self.labels.append(PERSON)
            self.labels.extend(labels)
            self.rels.extend(rels)
            self.box_offsets.append(len(self.labels))
            self.rel_offsets.append(len(self.rels))
        self.videos.append(video)

    def build(self) -> AGSplit:
        # the counts STTran's loader prints: its videos and frames (the split keeps shorter videos for OED)
        frame_video = np.asarray(self.frame_video, dtype=np.int64)
        kept = np.bincount(frame_video, minlength=len(self.videos)) >= STTRAN_MIN_VIDEO_FRAMES
        counts = {**self.counts, "videos": int(kept.sum()), "frames": int(kept[frame_video].sum())}
        return AGSplit(
            self.split,
            self.videos,
            self.keys,
            np.asarray(self.frame_video, dtype=np.int32),
            np.asarray(self.boxes, dtype=np.float64).reshape(-1, 4),
            np.asarray(self.labels, dtype=np.int32),
            np.asarray(self.box_offsets, dtype=np.int64),
            np.asarray(self.rels, dtype=np.int32).reshape(-1, 3),
            np.asarray(self.rel_offsets, dtype=np.int64),
            np.asarray(self.sizes, dtype=np.float64).reshape(-1, 2),
            counts,
        )
