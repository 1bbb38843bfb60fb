"""Scene-Graph-Benchmark.pytorch ``eval_results.pytorch``: ``{'groundtruths': [BoxList], 'predictions': [BoxList]}``.

GT BoxList fields: ``labels``, ``relation_tuple`` [M, 3] (s, o, p). Prediction fields: ``pred_labels``,
``pred_scores``, ``rel_pair_idxs`` [P, 2], ``pred_rel_scores`` [P, C + 1] (softmax incl. background), stored
sorted by the GC triplet score: evaluate with ``order='stored'``. Images are numbered by list position.
Tensors stay memory-mapped until an image is converted, so the file is streamed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from sgg_eval.data.vg150_facts import vg150_vocabulary
from sgg_eval.data.types import GTImage, PredImage, Vocabulary
from sgg_eval.errors import InputError
from sgg_eval.formats.torchfile import BoxListStandIn, LazyTensor, load


def _array(box: BoxListStandIn, name: str, path: str, index: int) -> np.ndarray:
    fields = box.extra_fields if isinstance(box.extra_fields, dict) else {}
    if name == "bbox":
        value = box.bbox
    elif name in fields:
        value = fields[name]
    else:
        raise InputError("missing BoxList field", path=path, image_id=index, field=name)
    if not isinstance(value, LazyTensor):
        raise InputError(f"expected a tensor, got {type(value).__name__}", path=path, image_id=index, field=name)
    try:
        return value.numpy()
    except InputError as exc:
        raise InputError(str(exc), path=path, image_id=index, field=name) from None


def _xyxy(box: BoxListStandIn, path: str, index: int) -> np.ndarray:
    b = _array(box, "bbox", path, index)
    if b.size == 0:
        return np.zeros((0, 4), dtype=np.float32)
    if b.ndim != 2 or b.shape[1] != 4 or b.dtype.kind not in "fiu":
        raise InputError(f"shape {list(b.shape)} dtype {b.dtype}, expected [n, 4] numbers", path=path,
                         image_id=index, field="bbox")
    b = b.astype(np.float32)
    if box.mode == "xywh":  # maskrcnn_benchmark: x2 = x1 + w - 1
        b = np.column_stack([b[:, :2], b[:, :2] + b[:, 2:] - 1])
    elif box.mode != "xyxy":
        raise InputError(f"unknown box mode {box.mode!r}", path=path, image_id=index, field="mode")
    return b


def read_eval_results(path: str | os.PathLike, vocab: Vocabulary | None = None
                      ) -> tuple[Vocabulary, int, Iterator[tuple[GTImage, PredImage]]]:
    """Vocabulary, image count and a generator of (GT, prediction) pairs. Without ``vocab``, a file with
    50 predicates is taken to be VG150 (the embedded names)."""
    loaded = EvalResults(path, vocab)
    return loaded.vocab, len(loaded), loaded.pairs()


class EvalResults:
    """An ``eval_results.pytorch`` parsed once (tensors stay memory-mapped); ``pairs()`` streams it, again
    and again if needed, without re-reading the file."""

    def __init__(self, path: str | os.PathLike, vocab: Vocabulary | None = None):
        self.path = os.fspath(path)
        obj = load(self.path)
        if not isinstance(obj, dict) or "groundtruths" not in obj or "predictions" not in obj:
            raise InputError("expected a dict with 'groundtruths' and 'predictions'", path=self.path)
        self.gts, self.preds = obj["groundtruths"], obj["predictions"]
        if not isinstance(self.gts, (list, tuple)) or not isinstance(self.preds, (list, tuple)):
            raise InputError("'groundtruths' and 'predictions' must be lists of BoxLists", path=self.path)
        if len(self.gts) != len(self.preds):
            raise InputError(f"{len(self.gts)} groundtruths but {len(self.preds)} predictions", path=self.path)
        for i, b in enumerate(list(self.gts) + list(self.preds)):
            if not isinstance(b, BoxListStandIn):
                raise InputError("entry is not a BoxList", path=self.path, image_id=i % max(1, len(self.gts)))
        if vocab is None:
            width = _array(self.preds[0], "pred_rel_scores", self.path, 0).shape[-1] if len(self.preds) else 51
            if width != 51:
                raise InputError(f"{width - 1} predicates: not VG150, pass the vocabulary (e.g. --gt or --stats)",
                                 path=self.path, field="pred_rel_scores")
            vocab = vg150_vocabulary()
        self.vocab = vocab

    def __len__(self) -> int:
        return len(self.gts)

    def pairs(self) -> Iterator[tuple[GTImage, PredImage]]:
        return self.read(0, len(self))

    def read(self, start: int, stop: int) -> Iterator[tuple[GTImage, PredImage]]:
        """Images at positions ``start:stop``: random access, so each ``--jobs`` worker reads its own block
        from the parsed file (inherited on fork) instead of receiving the arrays through a pipe."""
        return _pairs(self.path, self.gts, self.preds, self.vocab, range(start, min(stop, len(self))))


def _size(box: BoxListStandIn, path: str, index: int) -> tuple[int, int]:
    size = box.size
    if not size:
        return 0, 0
    if (not isinstance(size, (tuple, list)) or len(size) != 2
            or not all(isinstance(v, (int, float)) and np.isfinite(v) and v >= 0 for v in size)):
        raise InputError(f"image size {size!r:.60}, expected (width, height)", path=path, image_id=index,
                         field="size")
    return int(size[0]), int(size[1])


def _pairs(path, gts, preds, vocab: Vocabulary, positions: range) -> Iterator[tuple[GTImage, PredImage]]:
    """Images by position; each GT and prediction is validated (shapes, ranges, finite values) as read."""
    for i in positions:
        g, p = gts[i], preds[i]
        width, height = _size(g, path, i)
        gt = GTImage(i, width, height, _xyxy(g, path, i), _array(g, "labels", path, i),
                     _array(g, "relation_tuple", path, i))
        pred = PredImage(i, _xyxy(p, path, i), _array(p, "pred_labels", path, i), _array(p, "pred_scores", path, i),
                         _array(p, "rel_pair_idxs", path, i), _array(p, "pred_rel_scores", path, i))
        try:
            gt.validate(vocab, f"{path} (groundtruths)", i)
        except InputError as exc:
            raise exc.renamed(_GT_FIELDS) from None
        try:
            pred.validate(vocab, f"{path} (predictions)", i, probabilities=True)  # softmax outputs
        except InputError as exc:
            raise exc.renamed(_PRED_FIELDS) from None
        yield gt, pred


# our field names -> the BoxList field names of the file, for error messages
_GT_FIELDS = {"boxes": "bbox", "rels": "relation_tuple"}
_PRED_FIELDS = {"boxes": "bbox", "labels": "pred_labels", "obj_scores": "pred_scores", "pairs": "rel_pair_idxs",
                "rel_scores": "pred_rel_scores"}
