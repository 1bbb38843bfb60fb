"""Maelic/SGG-Benchmark's ``predictions.pth``: the list its inference saves with ``torch.save``, one dict of tensors per
test image in dataset order (``sgg_benchmark/engine/inference.py`` @ a664201), read without torch by the project's
restricted unpickler (``formats.torch``); docs/sgg_benchmark.md.

What a dict holds (its ``PostProcessor``, ``modeling/roi_heads/relation_head/inference.py``), ``N`` boxes, ``M`` pairs:

- ``boxes [N, 4]`` with ``mode`` ``'xyxy'`` or ``'xywh'`` (converted as its ``box_convert``:
  ``x2 = x + max(w - 1, 0)``), in the original image's pixels (the toolkit never rescales);
- ``pred_labels [N]`` (1-based classes) and ``pred_scores [N]``;
- ``rel_pair_idxs [M, 2]`` (subject, object) into the boxes, in rank order (its evaluator never sorts);
- ``pred_rel_scores [M, P + 1]``: the softmax over the predicates, column 0 the background.

Other keys (``pred_rel_labels``, ``image_size``, ``image_path``, a PredCls run's copied GT fields) are not read.
Image ``i`` of the list is image ``i`` of the split (the toolkit pairs them by position, and checks nothing); here
the list must have exactly one entry per image of the GT split store, which is refused otherwise.
"""

from __future__ import annotations

import os
import zipfile

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import PredImage, Vocabulary
from sgg_eval.formats.torch.reader import load
from sgg_eval.formats.torch.tensor_table import LazyTensor
from sgg_eval.io.archive import Archive

FORMAT = "sgg_benchmark"
MODES = ("xyxy", "xywh")
# the keys its evaluator reads, and what each must be (the messages name them)
KEYS = ("boxes", "pred_labels", "pred_scores", "rel_pair_idxs", "pred_rel_scores")
# a pickle's first opcodes when its top object is a list: PROTO 2, EMPTY_LIST
_LIST_PICKLE = b"\x80\x02]"


def is_prediction_list(path: str) -> bool:
    """Whether ``path`` is a ``torch.save`` zip file whose pickle holds a list at the top (SGG-Benchmark's
    ``predictions.pth``), not the dict of Scene-Graph-Benchmark's ``eval_results.pytorch``. Read through the one ZIP
    reader (``io.archive``); any file it cannot read is left to the eval_results reader, whose message names what
    is wrong."""
    try:
        archive = Archive(path)
        rows = archive.members.ending_with("data.pkl")  # as the torch reader finds it (formats.torch.layouts)
        return len(rows) == 1 and archive.head(int(rows[0]), len(_LIST_PICKLE)) == _LIST_PICKLE
    except (OSError, ValueError, InputError, zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, EOFError):
        return False


class SggBenchmarkPredictions:
    """The entries of a ``predictions.pth``, kept as tensor tokens (a few bytes each) until an image is read."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        entries = load(self.path)
        if not isinstance(entries, list):
            raise InputError(
                f"expected a list of per-image dicts (SGG-Benchmark's predictions.pth), got {type(entries).__name__}",
                path=self.path,
            )
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise InputError(f"expected a dict of tensors, got {type(entry).__name__}", path=self.path, position=i)
        self.entries = entries

    def __len__(self) -> int:
        return len(self.entries)

    def image(self, position: int, image_id, vocab: Vocabulary) -> PredImage:
        """Entry ``position`` as the prediction of GT image ``image_id``, checked: shapes, dtypes, finite values,
        ranges, probabilities, and the CRC-32 of every tensor read."""
        entry = self.entries[position]
        where = dict(path=self.path, image_id=image_id, position=position)
        arrays = {key: self._array(entry, key, where) for key in KEYS}
        mode = entry.get("mode", "xyxy")
        if mode not in MODES:
            raise InputError(f"box mode {mode!r:.40}, expected 'xyxy' or 'xywh'", field="mode", **where)
        boxes = arrays["boxes"]
        if boxes.ndim != 2 or boxes.shape[1:] != (4,) or boxes.dtype.kind not in "fiu":
            raise InputError(f"shape {list(boxes.shape)} dtype {boxes.dtype}: [N, 4] numbers expected",
                             field="boxes", **where)  # fmt: skip
        boxes = boxes.astype(np.float32)
        if mode == "xywh":  # its box_convert: x2 = x + clamp(w - 1, min=0), in float32
            boxes = np.concatenate([boxes[:, :2], boxes[:, :2] + np.maximum(boxes[:, 2:] - 1, 0)], axis=1)
        for key in ("pred_labels", "rel_pair_idxs"):
            if arrays[key].dtype.kind not in "iu":
                raise InputError(f"dtype {arrays[key].dtype}: integers expected", field=key, **where)
        for key in ("pred_scores", "pred_rel_scores"):
            if arrays[key].dtype.kind != "f":
                raise InputError(f"dtype {arrays[key].dtype}: floats expected", field=key, **where)
        pred = PredImage(image_id, boxes, arrays["pred_labels"].astype(np.int64), arrays["pred_scores"],
                         arrays["rel_pair_idxs"].astype(np.int64), arrays["pred_rel_scores"])  # fmt: skip
        try:
            pred.validate(vocab, self.path, position, probabilities=True)
        except InputError as exc:
            raise exc.renamed(NAMES) from None
        return pred

    def _array(self, entry: dict, key: str, where: dict) -> np.ndarray:
        if key not in entry:
            raise InputError("missing (SGG-Benchmark's evaluator reads it)", field=key, **where)
        value = entry[key]
        if not isinstance(value, LazyTensor):
            raise InputError(f"expected a tensor, got {type(value).__name__}", field=key, **where)
        try:
            value.table.check(np.array([value.index], dtype=np.int64))
            return np.asarray(value.numpy())
        except InputError as exc:
            raise InputError(exc.message, field=key, **where) from None


# our field names -> the file's, for error messages
NAMES = {
    "boxes": "boxes",
    "labels": "pred_labels",
    "obj_scores": "pred_scores",
    "pairs": "rel_pair_idxs",
    "rel_scores": "pred_rel_scores",
}
