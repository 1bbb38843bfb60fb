"""A video-SGG model's predictions as STTran's model returns them: one dict per video (``lib/sttran.py``,
``STTran.forward``), saved by the user with ``torch.save`` (read without torch, ``formats.torch``) or
``numpy.savez``.

Where: a folder with one file per video, ``<video>.pt`` or ``<video>.npz`` (the video's name as in Action Genome,
``001YG.mp4``, with or without its ``.mp4``), or one ``torch.save`` file holding a dict ``{video: dict}``.

What a dict holds (``P`` pairs, ``N`` boxes of the whole video):

- ``boxes [N, 5]``: column 0 the frame's position in the video, 1-4 ``x1 y1 x2 y2`` in pixels;
- PredCls: ``labels [N]`` and ``scores [N]``; SGCls and SGDet: ``pred_labels`` and ``pred_scores`` (the person box
  too: label 1 and its score);
- ``pair_idx [P, 2]``: (person box, object box), indices into the video's boxes; ``im_idx [P]``: the pair's frame
  position (0 .. frames - 1; float in STTran, integer-valued);
- ``attention_distribution [P, 3]``: logits, which STTran's evaluator turns into probabilities with a softmax
  (``attention="probabilities"`` when the file holds them already, as TEMPURA's model returns them);
  ``spatial_distribution [P, 6]`` and ``contacting_distribution [P, 17]``: probabilities in [0, 1].
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import STTRAN_ATTENTION_KINDS
from sgg_eval.core.tasks import task_spec
from sgg_eval.formats.numpy_files import read_npz
from sgg_eval.formats.torch.reader import load
from sgg_eval.formats.torch.tensor_table import LazyTensor
from sgg_eval.video.ag_names import NUM_OBJECTS
from sgg_eval.video.sttran import FramePredictions

LOGITS, PROBABILITIES = STTRAN_ATTENTION_KINDS
_SUFFIXES = (".pt", ".pth", ".npz")
_COMMON = ("boxes", "pair_idx", "im_idx", "attention_distribution", "spatial_distribution", "contacting_distribution")
_WIDTH = {"attention_distribution": 3, "spatial_distribution": 6, "contacting_distribution": 17}


def object_keys(task: str) -> tuple[str, str]:
    """The label and score keys STTran's evaluator reads for ``task``: the GT's (PredCls) or the model's."""
    return ("labels", "scores") if task_spec(task).gt_labels else ("pred_labels", "pred_scores")


def video_sources(path: str, videos: list[str], stored: list[str] | None = None) -> Iterator[tuple[str, str, object]]:
    """``(video, file, dict)`` for each of ``videos`` (the scored ones) in order, one file at a time; every video
    must have a prediction and every prediction a video of ``stored`` (the split's, ``videos`` by default; one
    of them not scored is left unread)."""
    known = set(stored or videos)
    yield from _from_folder(path, videos, known) if os.path.isdir(path) else _from_file(path, videos, known)


def _from_folder(path: str, videos: list[str], known: set[str]) -> Iterator[tuple[str, str, object]]:
    files = _folder(path, known)
    missing = [v for v in videos if v not in files]
    if missing:
        raise InputError(f"{len(missing)} of the split's {len(videos)} videos have no file (first: {missing[0]})",
                         path=path)  # fmt: skip
    for video in videos:
        yield video, files[video], _load(files[video])


def _from_file(path: str, videos: list[str], known: set[str]) -> Iterator[tuple[str, str, object]]:
    whole = _load(path)
    if not isinstance(whole, dict) or not all(isinstance(k, str) for k in whole):
        raise InputError("expected a dict {video name: prediction dict}, or a folder of per-video files", path=path)
    names = {_video_name(k, known): k for k in whole}
    extra = [k for k in whole if _video_name(k, known) is None]
    missing = [v for v in videos if v not in names]
    if extra or missing:
        what = f"video {extra[0]!r} is not in the split" if extra else f"{len(missing)} videos have no prediction"
        raise InputError(f"{what} (first missing: {missing[0] if missing else '-'})", path=path)
    for video in videos:
        yield video, path, whole[names[video]]


def _folder(path: str, videos: set[str]) -> dict[str, str]:
    files = {}
    for entry in sorted(os.listdir(path)):
        stem, ext = os.path.splitext(entry)
        if ext not in _SUFFIXES:
            continue
        video = _video_name(stem, videos)
        if video is None:
            raise InputError(f"{entry}: no video of the split is called {stem!r}", path=path)
        if video in files:
            raise InputError(f"two files for video {video}: {os.path.basename(files[video])} and {entry}", path=path)
        files[video] = os.path.join(path, entry)
    return files


def _video_name(name: str, videos: set[str]) -> str | None:
    return name if name in videos else name + ".mp4" if name + ".mp4" in videos else None


def _load(path: str):
    return read_npz(path) if path.endswith(".npz") else load(path)


def read_video(obj, path: str, video: str, num_frames: int, task: str, attention: str = LOGITS) -> FramePredictions:
    """One video's dict, checked (dtypes, shapes, ranges, finite values), as frame-local arrays: ``pair_frame`` is
    the frame's position in the video."""
    if not isinstance(obj, dict):
        raise InputError(f"expected a dict of arrays, got {type(obj).__name__}", path=path, image_id=video)
    label_key, score_key = object_keys(task)
    arr = {key: _array(obj, key, path, video) for key in (*_COMMON, label_key, score_key)}

    def fail(message: str, key: str):
        raise InputError(message, path=path, image_id=f"video {video}", field=key)

    _check_boxes(arr, label_key, score_key, fail)
    _check_pairs(arr, len(arr["boxes"]), num_frames, fail)
    p = len(arr["pair_idx"])
    for key, width in _WIDTH.items():
        d = arr[key]
        if d.shape != (p, width) or d.dtype.kind != "f" or not np.all(np.isfinite(d)):
            fail(f"shape {list(d.shape)} dtype {d.dtype}: [{p}, {width}] finite floats expected", key)
        if (key != "attention_distribution" or attention == PROBABILITIES) and np.any((d < 0) | (d > 1)):
            fail("a score outside [0, 1] (probabilities expected)", key)
    att = arr["attention_distribution"]
    return FramePredictions(arr["boxes"][:, 1:].astype(np.float64), arr[label_key].astype(np.int64), arr[score_key],
                            arr["pair_idx"].astype(np.int64), arr["im_idx"].astype(np.int64),
                            _softmax(att) if attention == LOGITS else att, arr["spatial_distribution"],
                            arr["contacting_distribution"])  # fmt: skip


def _check_boxes(arr: dict, label_key: str, score_key: str, fail) -> None:
    boxes = arr["boxes"]
    if boxes.ndim != 2 or boxes.shape[1] != 5 or boxes.dtype.kind not in "fiu":
        fail(f"shape {list(boxes.shape)} dtype {boxes.dtype}: [N, 5] numbers expected", "boxes")
    n = len(boxes)
    if not np.all(np.isfinite(boxes[:, 1:])):
        fail("a coordinate is not finite", "boxes")
    for key in (label_key, score_key):
        if arr[key].shape != (n,):
            fail(f"shape {list(arr[key].shape)}: [{n}] expected (one per box)", key)
    labels, scores = arr[label_key], arr[score_key]
    if labels.dtype.kind not in "iu" or (n and (labels.min() < 0 or labels.max() > NUM_OBJECTS)):
        fail(f"expected integer labels in 0..{NUM_OBJECTS}", label_key)
    if scores.dtype.kind != "f" or not np.all((scores >= 0) & (scores <= 1)):
        fail("expected float scores in [0, 1]", score_key)


def _check_pairs(arr: dict, n: int, num_frames: int, fail) -> None:
    pairs, frame = arr["pair_idx"], arr["im_idx"]
    p = len(pairs) if pairs.ndim else 0  # a 0-d array has no length: its shape () is refused below
    if pairs.shape != (p, 2) or pairs.dtype.kind not in "iu" or (p and (pairs.min() < 0 or pairs.max() >= n)):
        fail(f"shape {list(pairs.shape)}: [P, 2] integer indices into the {n} boxes expected", "pair_idx")
    if frame.shape != (p,) or frame.dtype.kind not in "fiu" or not np.all(np.isfinite(frame)):
        fail(f"shape {list(frame.shape)}: [{p}] frame positions expected (one per pair)", "im_idx")
    if p and (np.any(frame != np.floor(frame)) or frame.min() < 0 or frame.max() >= num_frames):
        fail(f"a frame position that is not an integer in 0..{num_frames - 1} (the video's scored frames)", "im_idx")


def _array(obj: dict, key: str, path: str, video: str) -> np.ndarray:
    if key not in obj:
        raise InputError("missing", path=path, image_id=f"video {video}", field=key)
    value = obj[key]
    if isinstance(value, LazyTensor):
        return value.numpy()
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value
    raise InputError(f"expected a tensor or array, got {type(value).__name__}", path=path, image_id=f"video {video}",
                     field=key)  # fmt: skip


def _softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax in the logits' own dtype (float32 for a float32 tensor), as ``torch.nn.functional.softmax``:
    ``exp(x - max) / sum``."""
    shifted = logits - logits.max(axis=1, keepdims=True) if len(logits) else logits
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)
