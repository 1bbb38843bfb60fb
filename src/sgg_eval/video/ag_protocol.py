"""What an Action Genome protocol takes from a split store, as its record in ``core.protocols`` declares it: the
videos it scores, how its loader prepares their GT, the IoU it matches with and the constraints its tool builds.

- ``sttran`` (TEMPURA and DSG-DETR alike): the videos with more than 2 frames; boxes and relations as stored,
  repeated names kept; STTran's +1 pixel IoU (:func:`sgg_eval.metrics.iou.sttran_iou`).
- ``oed`` (``guanw-pku/OED`` @ 4880df7): every video with a frame (``datasets/prep_annotation.py``). Its loader
  (``ConvertCocoPolysToMask`` in ``datasets/ag_single.py`` and ``ag_multi.py``) clamps the GT boxes to the frame,
  ``[0, W] x [0, H]``, and drops an object whose clamped box is empty (``x2 <= x1`` or ``y2 <= y1``) with its
  relations; it holds an object's relations as one-hot vectors, so a name repeated in a list counts once. DETR's
  IoU, no +1 (:func:`sgg_eval.metrics.iou.oed_iou`). A frame left without a relation is not scored (OED's
  evaluator stops on it, ``assert num_gt_relations != 0``), nor a video left without a frame.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from sgg_eval.core.defaults import AG_SMALL_BOX_STORE
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import VIDEO, protocol
from sgg_eval.metrics.iou import oed_iou, sttran_iou
from sgg_eval.video.ag_annotations import AGSplit
from sgg_eval.video.ag_names import NUM_PREDICATES


@dataclass(frozen=True)
class VideoProtocol:
    """One video protocol's rules (module docstring); ``defaults``: its options' defaults (``constraint``,
    ``attention``, and ``semi_threshold`` where it has the semi constraint)."""

    name: str
    constraints: tuple[str, ...]
    min_video_frames: int
    clips_gt: bool
    relations_as_set: bool
    iou: Callable[[np.ndarray, np.ndarray], np.ndarray]
    defaults: dict
    reads_small_boxes: Callable[[str], bool]  # task -> scored on the small-box file (the record's rule)


def video_protocol(name: str) -> VideoProtocol:
    """The rules of video protocol ``name``; ``ValueError`` for a protocol of another product."""
    record = protocol(name)
    if record.product != VIDEO:
        raise ValueError(f"{name} is a {record.product} protocol, not a video one")
    return VideoProtocol(name, record.constraints, record.min_video_frames, bool(record.gt_clipped),
                         record.relations_as_set, sttran_iou if record.iou_plus_one else oed_iou,
                         dict(record.options), record.reads_small_boxes)  # fmt: skip


def store_for(splits: str, name: str, task: str) -> str:
    """The store protocol ``name``'s tool reads for ``task``: in the folder ``splits`` (``sgg-eval split
    --ag-dir``'s), or ``splits`` itself when it is one store."""
    if not os.path.isdir(splits):
        return splits
    return os.path.join(splits, AG_SMALL_BOX_STORE if protocol(name).reads_small_boxes(task) else "test.h5")


def scored_split(split: AGSplit, rules: VideoProtocol, path: str) -> AGSplit:
    """The frames of ``split`` (read from ``path``) that ``rules`` scores, with their GT as its loader makes it."""
    box_frame, rel_frame = split.box_frame, split.rel_frame
    boxes, box_keep = split.boxes, np.ones(len(split.boxes), bool)
    if rules.clips_gt:
        boxes, box_keep = _clamped(split, box_frame, path)
    rel_keep = _relations_kept(split, rel_frame, box_keep, rules.relations_as_set)
    frame_keep = np.bincount(rel_frame, weights=rel_keep, minlength=split.num_frames) > 0
    frames_of = np.bincount(split.frame_video[frame_keep], minlength=len(split.videos))
    frame_keep &= frames_of[split.frame_video] >= rules.min_video_frames
    if frame_keep.all() and box_keep.all() and rel_keep.all():
        return replace(split, boxes=boxes)
    return _subset(split, box_frame, rel_frame, boxes, frame_keep, box_keep & frame_keep[box_frame], rel_keep)


def _clamped(split: AGSplit, frame_of_box: np.ndarray, path: str) -> tuple[np.ndarray, np.ndarray]:
    """The boxes clamped to their frame, and which are not empty after it."""
    unknown = np.isnan(split.frame_size).any(axis=1)
    if unknown.any():
        frame = split.frame_keys[int(np.argmax(unknown))]
        raise InputError(
            "no frame size (the person entry's bbox_size), which OED clamps the GT boxes to",
            path=path,
            image_id=frame,
            field="images/size",
        )
    size = split.frame_size[frame_of_box]
    boxes = split.boxes.copy()
    boxes[:, 0::2] = np.clip(boxes[:, 0::2], 0.0, size[:, :1])
    boxes[:, 1::2] = np.clip(boxes[:, 1::2], 0.0, size[:, 1:])
    keep = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    person_gone = ~keep[split.box_offsets[:-1]]
    if person_gone.any():
        raise InputError("the person box is empty inside the frame, so OED's loader would drop it and pair the "
                         "frame's objects with another box", path=path,
                         image_id=split.frame_keys[int(np.argmax(person_gone))], field="objects/boxes")  # fmt: skip
    return boxes, keep


def _relations_kept(split: AGSplit, rel_frame: np.ndarray, box_keep: np.ndarray, as_set: bool) -> np.ndarray:
    sub, obj = split.rel_boxes(rel_frame)
    keep = box_keep[sub] & box_keep[obj]
    if as_set:
        # a relation is its two boxes (global indices: they name the frame too) and its predicate
        key = (sub.astype(np.int64) * len(split.boxes) + obj) * (NUM_PREDICATES + 1) + split.rels[:, 2]
        once = np.zeros(len(key), bool)
        once[np.unique(key, return_index=True)[1]] = True
        keep &= once
    return keep


def _subset(split: AGSplit, frame_of_box, frame_of_rel, boxes, frame_keep, box_keep, rel_keep) -> AGSplit:
    """``split`` with the kept frames, boxes and relations, indices renumbered."""
    rel_keep = rel_keep & frame_keep[frame_of_rel]
    boxes_kept = np.bincount(frame_of_box[box_keep], minlength=split.num_frames)
    box_offsets = np.r_[0, np.cumsum(boxes_kept[frame_keep])]
    new_global = np.cumsum(box_keep) - 1  # each kept box's place among the kept ones
    new_first = np.r_[0, np.cumsum(boxes_kept)][:-1]
    rels = split.rels.copy()
    for end, box in enumerate(split.rel_boxes(frame_of_rel)):
        rels[:, end] = new_global[box] - new_first[frame_of_rel]
    rel_offsets = np.r_[0, np.cumsum(np.bincount(frame_of_rel[rel_keep], minlength=split.num_frames)[frame_keep])]
    videos_kept = np.unique(split.frame_video[frame_keep])
    renumber = np.full(len(split.videos), -1, np.int32)
    renumber[videos_kept] = np.arange(len(videos_kept), dtype=np.int32)
    return AGSplit(split.split, [split.videos[v] for v in videos_kept],
                   [k for k, keep in zip(split.frame_keys, frame_keep, strict=True) if keep],
                   renumber[split.frame_video[frame_keep]], boxes[box_keep], split.labels[box_keep],
                   box_offsets.astype(np.int64), rels[rel_keep], rel_offsets.astype(np.int64),
                   split.frame_size[frame_keep], split.counts)  # fmt: skip
