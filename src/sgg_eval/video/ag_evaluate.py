"""Score a video-SGG model's predictions on an Action Genome split store: the ``sttran`` and ``oed`` protocols
(``video.ag_protocol`` says what each takes from the store).

A :class:`Scorer` takes the videos in any order and any grouping (the command reads them one file at a time in the
split's order; the Python API's ``VideoEvaluator`` as a training loop hands them over, and merges scorers of
several processes) and scores them in batches of whole videos (``BATCH_FRAMES``), so memory stays flat in the
split's size. Every batch writes its first-hit ranks into one array per constraint, at the relations' places in
the split; the metrics are reductions of those arrays (``video.ag_metrics``), so the result does not depend on the
order, the batching or the merging.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sgg_eval.core.defaults import TAU
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import STTRAN_ALL as ALL
from sgg_eval.core.protocols import STTRAN_ATTENTION_KINDS as ATTENTION_KINDS
from sgg_eval.video.ag_annotations import OBJECT_FILE, AGSplit
from sgg_eval.video.ag_beyond import TrainingFacts, beyond_protocol, training_facts
from sgg_eval.video.ag_metrics import Relations, tie_range
from sgg_eval.video.ag_names import AGVocabulary
from sgg_eval.video.ag_predictions import LOGITS, read_video, video_sources
from sgg_eval.video.ag_protocol import VideoProtocol, scored_split, video_protocol
from sgg_eval.video.ag_store import read_ag_store
from sgg_eval.video.sttran import (
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

# Frames scored at once: at AG's test size (SGDet, 53,594 frames) 1,024 took the time 4,096 did (6.8 s for the three
# constraints) in half the memory (110 MB against 224 MB peak RSS; the no constraint's 3P x 26 matrix dominates).
BATCH_FRAMES = 1024


@dataclass(frozen=True)
class Options:
    """What a run scores: the task, ``constraint`` (one the protocol's tool builds, or ``all``: every one, from
    one reading, as STTran's test.py and OED's engine.py print them), the semi threshold, what
    ``attention_distribution`` holds, the IoU threshold and the protocol (``sttran`` or ``oed``)."""

    task: str
    constraint: str
    semi_threshold: float = SEMI_THRESHOLD
    attention: str = LOGITS
    iou_threshold: float = IOU_THRESHOLD
    protocol: str = "sttran"

    @property
    def rules(self) -> VideoProtocol:
        return video_protocol(self.protocol)

    @property
    def constraints(self) -> tuple[str, ...]:
        return self.rules.constraints if self.constraint == ALL else (self.constraint,)


def options_for(protocol: str, task: str, constraint: str | None = None, semi_threshold: float | None = None,
                attention: str | None = None, iou_threshold: float = IOU_THRESHOLD) -> Options:  # fmt: skip
    """The run's options, the ones not given (None) from ``protocol``'s record, each checked against it."""
    try:
        rules = video_protocol(protocol)
    except ValueError as exc:
        raise InputError(str(exc), field="--protocol") from None
    constraint = constraint or rules.defaults["constraint"]
    if constraint not in (*rules.constraints, ALL):
        raise InputError(f"{protocol}'s tool builds the constraints {', '.join(rules.constraints)} (or all), not "
                         f"{constraint}", field="--constraint")  # fmt: skip
    if semi_threshold is not None and SEMI not in rules.constraints:
        raise InputError(f"{protocol} has no semi constraint, so no threshold for it", field="--semi-threshold")
    if semi_threshold is not None and constraint not in (SEMI, ALL):
        raise InputError("--semi-threshold is the semi constraint's: give --constraint semi", field="--semi-threshold")
    attention = attention or rules.defaults["attention"]
    if attention not in ATTENTION_KINDS:
        raise InputError(f"attention must be one of {', '.join(ATTENTION_KINDS)}, not {attention}", field="--attention")
    threshold = rules.defaults.get("semi_threshold", SEMI_THRESHOLD) if semi_threshold is None else semi_threshold
    return Options(task, constraint, threshold, attention, iou_threshold, protocol)


def open_split(gt_path: str, task: str, protocol: str = "sttran") -> tuple[AGSplit, AGVocabulary, list[str]]:
    """The frames of the split store ``gt_path`` that ``protocol`` scores ``task`` on, checked to come from the
    object file its tool reads for that task; and every video of the store (a prediction for one the protocol
    does not score is left aside, as its tool never sees it)."""
    split, vocab, object_file = read_ag_store(gt_path)
    rules = video_protocol(protocol)
    # STTran reads its authors' small-box-filtered object file wherever the model predicts the labels (test.py);
    # OED reads the release's object file for every task (it has no small-box file)
    small = rules.reads_small_boxes(task)
    if small and "filtersmall" not in object_file:
        raise InputError(f"{protocol} scores {task} on its authors' object_bbox_and_relationship_filtersmall.pkl; "
                         f"this store was read from {object_file}: write one with `sgg-eval split --ag-dir DIR "
                         "--ag-small-boxes FILE`", path=gt_path)  # fmt: skip
    if not small and object_file != OBJECT_FILE:
        raise InputError(
            f"{protocol} scores {task} on the release's {OBJECT_FILE}; this store was read from "
            f"{object_file}: use the test.h5 `sgg-eval split --ag-dir DIR` writes",
            path=gt_path,
        )
    return scored_split(split, rules, gt_path), vocab, split.videos


def open_training(path: str | None, protocol: str) -> TrainingFacts | None:
    """The training facts of ``beyond_protocol`` from the train split store ``path`` (None: not given), its frames
    as ``protocol``'s loader keeps them."""
    if path is None:
        return None
    split, _, _ = read_ag_store(path)
    if split.split != "train":
        raise InputError(f"a {split.split} split store: --ag-train takes the train.h5 `sgg-eval split --ag-dir` "
                         "writes", path=path, field="split")  # fmt: skip
    return training_facts(scored_split(split, video_protocol(protocol), path))


def evaluate_ag(gt_path: str, predictions: str, options: Options, train: str | None = None, tau: float = TAU) -> dict:
    """The metrics document of ``predictions`` (a folder of per-video files or one file) on the split store
    ``gt_path`` (:meth:`Scorer.document`); ``train``: the train split store, for ``beyond_protocol``'s figures that
    need it; ``tau``: wIMR's."""
    split, vocab, stored = open_split(gt_path, options.task, options.protocol)
    facts = open_training(train, options.protocol)
    scorer = Scorer(split, options, len(stored), facts, tau)
    for v, (video, path, obj) in enumerate(video_sources(predictions, split.videos, stored)):
        scorer.add(v, read_video(obj, path, video, int(scorer.frames_of[v]), options.task, options.attention))
    return scorer.document(vocab)


class Scorer:
    """Per constraint, the first-hit ranks of the split's relations (``video.sttran.FirstHits``), filled video by
    video."""

    def __init__(self, split: AGSplit, options: Options, stored_videos: int, facts: TrainingFacts | None = None,
                 tau: float = TAU):  # fmt: skip
        self.split, self.options, self.stored_videos, self.facts, self.tau = split, options, stored_videos, facts, tau
        self.frames_of = np.bincount(split.frame_video, minlength=len(split.videos))
        self.frame_start = np.r_[0, np.cumsum(self.frames_of)]
        self.hits = {c: FirstHits.missed(len(split.rels)) for c in options.constraints}
        self.seen = np.zeros(len(split.videos), bool)
        self._batch: list[tuple[int, FramePredictions]] = []
        self._batch_frames = 0

    def add(self, video: int, pred: FramePredictions) -> None:
        """Video ``video``'s predictions (frame positions local to it); each video once."""
        if self.seen[video]:
            raise InputError(f"video {self.split.videos[video]} was given twice", field="video")
        self.seen[video] = True
        self._batch.append((video, pred))
        self._batch_frames += int(self.frames_of[video])
        if self._batch_frames >= BATCH_FRAMES:
            self.flush()

    def flush(self) -> None:
        """Score the videos held so far."""
        if not self._batch:
            return
        split, o = self.split, self.options
        frames = [np.arange(self.frame_start[v], self.frame_start[v + 1]) for v, _ in self._batch]
        frame = np.concatenate(frames)
        boxes = np.concatenate([np.arange(split.box_offsets[f[0]], split.box_offsets[f[-1] + 1]) for f in frames])
        rels = np.concatenate([np.arange(split.rel_offsets[f[0]], split.rel_offsets[f[-1] + 1]) for f in frames])
        box_counts, rel_counts = np.diff(split.box_offsets)[frame], np.diff(split.rel_offsets)[frame]
        truth = FrameTruth(split.boxes[boxes], split.labels[boxes], np.r_[0, np.cumsum(box_counts)],
                           split.rels[rels], np.r_[0, np.cumsum(rel_counts)])  # fmt: skip
        shift = np.cumsum([0] + [len(f) for f in frames])
        pred = _concatenate([(int(shift[i]), p) for i, (_, p) in enumerate(self._batch)])
        iou = o.rules.iou
        for constraint, out in self.hits.items():
            triplets = ranked_triplets(pred, constraint, o.semi_threshold)
            out.put(rels, first_hits(truth, triplets, pred, o.iou_threshold, iou))
        self._batch, self._batch_frames = [], 0

    def merge(self, other: Scorer) -> None:
        """Take ``other``'s videos (of the same split and options, none of them seen here)."""
        self.flush()
        other.flush()
        both = self.seen & other.seen
        if both.any():
            raise InputError(f"video {self.split.videos[int(np.argmax(both))]} was evaluated by both", field="merge")
        rels = np.repeat(other.seen[self.split.frame_video], np.diff(self.split.rel_offsets))
        for constraint, out in self.hits.items():
            out.put(rels, other.hits[constraint], rels)
        self.seen |= other.seen

    def document(self, vocab: AGVocabulary) -> dict:
        """The command's metrics document: ``results`` holds, per constraint, its ``metrics``, the range the
        tool's own numbers span over tied scores (``tie_range``) and each predicate's recall both ways. ``counts``:
        what was scored, and the store's videos the protocol leaves out. Every scored video must have been given."""
        self.flush()
        if not self.seen.all():
            missing = [v for v, s in zip(self.split.videos, self.seen, strict=True) if not s]
            raise InputError(f"{len(missing)} of the split's {len(self.seen)} videos have no prediction "
                             f"(first: {missing[0]})")  # fmt: skip
        o, split = self.options, self.split
        relations = Relations(split.rels, split.rel_offsets)
        return {
            "protocol": o.protocol,
            "task": o.task,
            "constraint": o.constraint,
            "semi_threshold": o.semi_threshold if SEMI in o.constraints else None,
            "attention": o.attention,
            "iou_threshold": o.iou_threshold,
            "counts": {
                "videos": len(split.videos),
                "frames": split.num_frames,
                "relations": len(split.rels),
                "videos_not_scored": self.stored_videos - len(split.videos),
            },
            "results": {
                c: _results(self.hits[c], relations, vocab, split, self.facts, self.tau) for c in o.constraints
            },  # fmt: skip
        }


def _results(hits: FirstHits, relations: Relations, vocab: AGVocabulary, split: AGSplit,
             facts: TrainingFacts | None, tau: float) -> dict:  # fmt: skip
    metrics, pooled, per_frame = relations.recalls(hits.ours)
    return {
        "metrics": metrics,
        "beyond_protocol": beyond_protocol(hits, relations, split, vocab.predicates, facts, (pooled, per_frame), tau),
        "tie_range": tie_range(hits, relations),
        "per_predicate": {
            f"{name}@{k}": dict(zip(vocab.predicates, map(float, values[i]), strict=True))
            for name, values in (("recall_pooled", pooled), ("recall_per_frame", per_frame))
            for i, k in enumerate(K_VALUES)
        },
    }


def _concatenate(parts: list[tuple[int, FramePredictions]]) -> FramePredictions:
    """The videos' predictions as one batch: box indices and frame positions shifted to the batch's."""
    box_start = np.cumsum([0] + [len(p.boxes) for _, p in parts])
    return FramePredictions(
        np.concatenate([p.boxes for _, p in parts]),
        np.concatenate([p.labels for _, p in parts]),
        np.concatenate([p.scores for _, p in parts]),
        np.concatenate([p.pairs + box_start[i] for i, (_, p) in enumerate(parts)]),
        np.concatenate([p.pair_frame + f for f, p in parts]),
        np.concatenate([p.attention for _, p in parts]),
        np.concatenate([p.spatial for _, p in parts]),
        np.concatenate([p.contacting for _, p in parts]),
    )
