"""Score a video-SGG model's predictions on an Action Genome split store: the ``sttran`` protocol.

Videos are read one file at a time and scored in batches of whole videos (``BATCH_FRAMES``), so memory stays flat
in the split's size; the per-relation first-hit ranks of every batch fill one array in store order, and the
metrics are its reductions (``video.ag_metrics``): the result does not depend on the batching.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import STTRAN_ALL as ALL
from sgg_eval.core.tasks import task_spec
from sgg_eval.video.ag_metrics import Relations, tie_range
from sgg_eval.video.ag_predictions import LOGITS, read_video, video_sources
from sgg_eval.video.ag_store import read_ag_store
from sgg_eval.video.sttran import (
    CONSTRAINTS,
    IOU_THRESHOLD,
    K_VALUES,
    SEMI,
    SEMI_THRESHOLD,
    FirstHits,
    FramePredictions,
    FrameTruth,
    first_hits,
    ranked_triplets,
)

BATCH_FRAMES = 4096


def evaluate_ag(gt_path: str, predictions: str, task: str, constraint: str, *, semi_threshold: float = SEMI_THRESHOLD,
                attention: str = LOGITS, iou_threshold: float = IOU_THRESHOLD) -> dict:  # fmt: skip
    """The metrics document of ``predictions`` (a folder of per-video files or one file) on the split store
    ``gt_path``, under ``constraint`` (``with``, ``semi``, ``no``, or ``all``: the three from one reading, as
    STTran's test.py prints them). ``results`` holds, per constraint, its ``metrics``, the range STTran's own
    numbers span over tied scores and each predicate's recall both ways."""
    split, vocab, object_file = read_ag_store(gt_path)
    # STTran reads its authors' small-box-filtered object file wherever the model predicts the labels (test.py)
    if not task_spec(task).gt_labels and "filtersmall" not in object_file:
        raise InputError(f"STTran scores {task} on its authors' object_bbox_and_relationship_filtersmall.pkl; this "
                         f"store was read from {object_file}: write one with `sgg-eval split --ag-dir DIR "
                         "--ag-small-boxes FILE`", path=gt_path)  # fmt: skip
    constraints = CONSTRAINTS if constraint == ALL else (constraint,)
    hits = score_split(split, predictions, task, constraints, semi_threshold, attention, iou_threshold)
    relations = Relations(split.rels, split.rel_offsets)
    return {
        "protocol": "sttran",
        "task": task,
        "constraint": constraint,
        "semi_threshold": semi_threshold if SEMI in constraints else None,
        "attention": attention,
        "iou_threshold": iou_threshold,
        "counts": {"videos": len(split.videos), "frames": split.num_frames, "relations": len(split.rels)},
        "results": {c: _results(hits[c], relations, vocab) for c in constraints},
    }


def _results(hits: FirstHits, relations: Relations, vocab) -> dict:
    metrics, pooled, per_frame = relations.recalls(hits.ours)
    return {
        "metrics": metrics,
        "sttran_tie_range": tie_range(hits, relations),
        "per_predicate": {
            f"{name}@{k}": dict(zip(vocab.predicates, map(float, values[i]), strict=True))
            for name, values in (("recall_pooled", pooled), ("recall_per_frame", per_frame))
            for i, k in enumerate(K_VALUES)
        },
    }


def score_split(split, predictions: str, task: str, constraints: tuple[str, ...], semi_threshold: float,
                attention: str, iou_threshold: float) -> dict[str, FirstHits]:  # fmt: skip
    """Per constraint, the first-hit ranks of the split's relations (``video.sttran.first_hits``), in store order;
    each video's file is read once for all of them."""
    frames_of = np.bincount(split.frame_video, minlength=len(split.videos))
    video_start = np.r_[0, np.cumsum(frames_of)]
    out = {c: FirstHits(*(np.empty(len(split.rels), np.int16) for _ in range(3))) for c in constraints}
    batch: list[tuple[int, FramePredictions]] = []
    batch_frames = 0
    for v, (video, path, obj) in enumerate(video_sources(predictions, split.videos)):
        batch.append((v, read_video(obj, path, video, int(frames_of[v]), task, attention)))
        batch_frames += int(frames_of[v])
        if batch_frames >= BATCH_FRAMES or v == len(split.videos) - 1:
            _score_batch(split, video_start, batch, semi_threshold, iou_threshold, out)
            batch, batch_frames = [], 0
    return out


def _score_batch(split, video_start, batch, semi_threshold, iou_threshold, out: dict[str, FirstHits]) -> None:
    f0, f1 = int(video_start[batch[0][0]]), int(video_start[batch[-1][0] + 1])
    b0, b1 = split.box_offsets[f0], split.box_offsets[f1]
    r0, r1 = split.rel_offsets[f0], split.rel_offsets[f1]
    truth = FrameTruth(split.boxes[b0:b1], split.labels[b0:b1], split.box_offsets[f0 : f1 + 1] - b0,
                       split.rels[r0:r1], split.rel_offsets[f0 : f1 + 1] - r0)  # fmt: skip
    pred = _concatenate([(int(video_start[v]) - f0, p) for v, p in batch])
    for constraint, hits_of in out.items():
        hits = first_hits(truth, ranked_triplets(pred, constraint, semi_threshold), pred, iou_threshold)
        for name in ("ours", "best", "worst"):
            getattr(hits_of, name)[r0:r1] = getattr(hits, name)


def _concatenate(parts: list[tuple[int, FramePredictions]]) -> FramePredictions:
    """The videos' predictions as one batch: box indices and frame positions shifted to the batch's."""
    box_start = np.cumsum([0] + [len(p.boxes) for _, p in parts])
    scores = np.concatenate([p.scores for _, p in parts])
    return FramePredictions(
        np.concatenate([p.boxes for _, p in parts]),
        np.concatenate([p.labels for _, p in parts]),
        scores,
        np.concatenate([p.pairs + box_start[i] for i, (_, p) in enumerate(parts)]),
        np.concatenate([p.pair_frame + f for f, p in parts]),
        np.concatenate([p.attention for _, p in parts]),
        np.concatenate([p.spatial for _, p in parts]),
        np.concatenate([p.contacting for _, p in parts]),
    )
