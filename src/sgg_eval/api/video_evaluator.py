"""``sgg_eval.VideoEvaluator``: Action Genome's ``sttran`` and ``oed`` protocols as a streaming accumulator, for a
video-SGG
training loop or a distributed evaluation. Hand it each video's prediction dict as STTran's model returns it
(torch tensors or NumPy arrays: ``boxes``, the labels and scores, ``pair_idx``, ``im_idx`` and the three
distributions; ``docs/action_genome.md``), in any order; ``merge`` another process's evaluator; ``compute`` gives
the document ``sgg-eval evaluate --ag`` writes for the same predictions, to the last bit."""

from __future__ import annotations

import os

from sgg_eval.api.inputs import as_array
from sgg_eval.core.errors import InputError
from sgg_eval.video.ag_evaluate import Scorer, open_split, open_training, options_for
from sgg_eval.video.ag_predictions import read_video
from sgg_eval.video.sttran import IOU_THRESHOLD


class VideoEvaluator:
    """Video protocol ``protocol`` (``sttran``, the default, or ``oed``) on the split store ``gt`` (``sgg-eval split
    --ag-dir``) for ``task``, with the command's options: ``constraint`` (one the protocol builds, or ``all``;
    default: its first), ``semi_threshold``, ``attention`` (``logits`` or ``probabilities``; default: what the
    protocol's model gives) and ``iou_threshold``; ``train``, the train split store, for the figures of
    ``beyond_protocol`` that need the training split (zR, wIMR, head/body/tail)."""

    def __init__(self, gt: str | os.PathLike, task: str, *, protocol: str = "sttran", constraint: str | None = None,
                 semi_threshold: float | None = None, attention: str | None = None,
                 iou_threshold: float = IOU_THRESHOLD, train: str | os.PathLike | None = None):  # fmt: skip
        self.gt, self.train = os.fspath(gt), None if train is None else os.fspath(train)
        self.options = options_for(protocol, task, constraint, semi_threshold, attention, iou_threshold)
        self.split, self.vocab, stored = open_split(self.gt, task, protocol)
        self._scorer = Scorer(self.split, self.options, len(stored), open_training(self.train, protocol))
        self._index = {name: i for i, name in enumerate(self.split.videos)}
        self._stored = set(stored)

    def update(self, video: str, prediction: dict) -> None:
        """Add one video's prediction; ``video`` is its name in Action Genome (``001YG.mp4``, or ``001YG``). A video
        of the split the protocol does not score (STTran: one with 1 or 2 frames) is left aside."""
        v = self._index.get(video, self._index.get(f"{video}.mp4"))
        if v is None and (video in self._stored or f"{video}.mp4" in self._stored):
            return
        if v is None:
            raise InputError(f"no video of the split is called {video!r:.60}", field="video")
        if not isinstance(prediction, dict):
            raise InputError(f"expected a dict of tensors or arrays, got {type(prediction).__name__}",
                             image_id=f"video {video}")  # fmt: skip
        where = {"image_id": f"video {video}"}
        arrays = {key: as_array(value, key, where) for key, value in prediction.items()}
        pred = read_video(arrays, "", video, int(self._scorer.frames_of[v]), self.options.task, self.options.attention)
        self._scorer.add(v, pred)

    def merge(self, other: VideoEvaluator) -> None:
        """Take ``other``'s videos: an evaluator of the same split and options in another process (gathered, e.g.
        with ``torch.distributed.all_gather_object``)."""
        if not isinstance(other, VideoEvaluator) or (other.gt, other.train, other.options) != (
            self.gt,
            self.train,
            self.options,
        ):
            raise InputError("merge takes a VideoEvaluator of the same split store and options", field="merge")
        self._scorer.merge(other._scorer)

    def compute(self) -> dict:
        """The document ``sgg-eval evaluate --ag`` writes; every video of the split must have been added."""
        return self._scorer.document(self.vocab)
