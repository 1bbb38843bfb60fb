"""One image's ground truth and prediction from what a training loop holds, as :class:`GTImage` and
:class:`PredImage`: a dict of arrays, or a BoxList-like object (``.bbox`` and ``.get_field()``, as
Scene-Graph-Benchmark.pytorch's model returns and its ``eval_results.pytorch`` stores).

An array may be a numpy array, a torch tensor (on any device, with or without grad: ``.detach().cpu()
.numpy()``, found by duck typing, so torch is never imported here), or anything ``numpy.asarray`` takes
(``__array__``, lists). Arrays are converted, never reshaped: a wrong shape is refused by the validation, naming
the field as the user wrote it.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.formats.eval_results import GT_FIELDS, PRED_FIELDS

# the dict keys, and our fields -> the user's names in error messages
GT_KEYS = ("boxes", "labels", "relations", "image_size")
PRED_KEYS = ("boxes", "labels", "scores", "rel_pairs", "rel_scores")
GT_NAMES = {"rels": "relations"}
PRED_NAMES = {"obj_scores": "scores", "pairs": "rel_pairs"}
# the dict keys -> a BoxList's fields (Scene-Graph-Benchmark.pytorch), in the same order as the reader's
BOXLIST_GT = dict(zip(GT_KEYS, GT_FIELDS))
BOXLIST_PRED = dict(zip(PRED_KEYS, PRED_FIELDS))


def as_array(value, field: str, where: dict) -> np.ndarray:
    """``value`` as a numpy array (module docstring); an :class:`InputError` naming ``field`` if it is none."""
    if isinstance(value, np.ndarray):
        return value
    try:
        for step in ("detach", "cpu"):  # a torch tensor: off the graph, onto the host
            if callable(getattr(value, step, None)):
                value = getattr(value, step)()
        if callable(getattr(value, "numpy", None)):
            return np.asarray(value.numpy())
        out = np.asarray(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"not an array: {exc}", field=field, **where) from None
    if out.dtype == object:
        raise InputError(f"not an array of numbers ({type(value).__name__})", field=field, **where)
    return out


def is_boxlist(obj) -> bool:
    return hasattr(obj, "bbox") and callable(getattr(obj, "get_field", None))


def _boxlist_boxes(obj, where: dict) -> np.ndarray:
    """A BoxList's boxes as xyxy; ``xywh`` converted as maskrcnn_benchmark does (``x2 = x1 + w - 1``)."""
    boxes = as_array(obj.bbox, "bbox", where)
    mode = getattr(obj, "mode", "xyxy")
    if mode == "xywh" and boxes.ndim == 2 and boxes.shape[1] == 4:
        boxes = np.column_stack([boxes[:, :2], boxes[:, :2] + boxes[:, 2:] - 1])
    elif mode not in ("xyxy", "xywh"):
        raise InputError(f"unknown box mode {mode!r}", field="mode", **where)
    return boxes


def _boxlist_field(obj, name: str, where: dict) -> np.ndarray:
    try:
        value = obj.get_field(name)
    except KeyError:
        raise InputError("missing from the BoxList", field=name, **where) from None
    return as_array(value, name, where)


def _dict(obj, keys: tuple[str, ...], what: str, where: dict) -> dict:
    if not isinstance(obj, dict):
        raise InputError(f"expected a dict with {', '.join(keys)} or a BoxList, got {type(obj).__name__}", **where)
    unknown = sorted(set(obj) - set(keys))
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r} in the {what} (keys: {', '.join(keys)})", **where)
    return obj


def gt_image(obj, position: int, where: dict) -> GTImage:
    """The ground truth of image ``position``: ``{"boxes", "labels", "relations"}`` (optionally
    ``"image_size": (width, height)``), or a GT BoxList (``labels``, ``relation_tuple``)."""
    if is_boxlist(obj):
        width, height = getattr(obj, "size", (0, 0))
        boxes = _boxlist_boxes(obj, where)
        labels, rels = (_boxlist_field(obj, BOXLIST_GT[k], where) for k in ("labels", "relations"))
    else:
        d = _dict(obj, GT_KEYS, "ground truth", where)
        missing = [k for k in GT_KEYS[:3] if k not in d]
        if missing:
            raise InputError("missing from the ground truth", field=missing[0], **where)
        boxes, labels, rels = (as_array(d[k], k, where) for k in GT_KEYS[:3])
        width, height = d.get("image_size", (0, 0))
    return GTImage(position, int(width), int(height), boxes, labels, rels)


def pred_image(obj, gt: GTImage, gt_boxes: bool, position: int, where: dict) -> PredImage:
    """The prediction for image ``position``: ``{"boxes", "labels", "scores", "rel_pairs", "rel_scores"}``
    (``boxes`` may be left out where the task gives the GT boxes, ``gt_boxes``: then they are the GT's), or
    a prediction BoxList (``pred_labels``, ``pred_scores``, ``rel_pair_idxs``, ``pred_rel_scores``)."""
    if is_boxlist(obj):
        boxes = _boxlist_boxes(obj, where)
        fields = [_boxlist_field(obj, BOXLIST_PRED[k], where) for k in PRED_KEYS[1:]]
    else:
        d = _dict(obj, PRED_KEYS, "prediction", where)
        needed = PRED_KEYS[1:] if gt_boxes else PRED_KEYS
        missing = [k for k in needed if k not in d]
        if missing:
            raise InputError("missing from the prediction", field=missing[0], **where)
        boxes = as_array(d["boxes"], "boxes", where) if "boxes" in d else gt.boxes
        fields = [as_array(d[k], k, where) for k in PRED_KEYS[1:]]
    return PredImage(position, boxes, *fields)
