"""Misuse detectors: signs that a file is evaluated under the wrong task, leaks ground truth, or is not what it
declares. A number computed that way is wrong however exact the metric code is, so the evaluation says so.

:func:`image_signals` counts a few cheap facts per evaluated image (summed over blocks like the image counts);
:func:`misuse_warnings` turns the totals into warnings for the document's ``notes``. Every threshold is a share
of the evaluated images (or objects, or score rows), so one odd image never fires a warning:

- **wrong task**: PredCls/SGCls outputs carry the GT boxes; predicted boxes unlike them in most images mean
  detector outputs (SGDet) evaluated as PredCls/SGCls; boxes equal to the GT boxes in nearly every image of an
  SGDet evaluation mean PredCls/SGCls outputs (GT boxes) scored as detection; **not PredCls/SGCls boxes**:
  fewer images than that with other boxes are named (how many, the first image), since those images are
  matched by IoU as in SGDet;
- **GT-label leak** (SGCls): predicted object labels equal the GT labels on nearly every object;
- **GT-pair leak** (SGCls, SGDet): the candidate pairs are exactly the GT subject-object pairs in nearly
  every image, where a model must rank every pair it proposes;
- **not probabilities**: a file that declares probabilities has score rows with negative values or not
  summing to 1 (logits would be ranked as if they were probabilities);
- **too few candidates**: fewer than 100 candidate pairs where the image's objects allow more, so R@100 and
  mR@100 are capped below what the model could reach.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.arrays.rowwise import row_reduce
from sgg_eval.core.defaults import IOU_THRESHOLD, RECALL_KS
from sgg_eval.core.tasks import task_spec
from sgg_eval.metrics.iou import sgb_iou_matrix
from sgg_eval.metrics.names import metric_name

SUMMED_KEYS = (
    "signal_images",
    "boxes_are_gt",
    "label_objects",
    "labels_are_gt",
    "pairs_are_gt",
    "score_rows",
    "score_rows_not_probabilities",
    "few_candidates",
)
# the id of the first evaluated image (in file order) whose boxes are not the GT boxes, None if none: kept from
# the first block that has one, where the summed keys add up (:func:`merge_signal`)
FIRST_BOXES_NOT_GT = "first_boxes_not_gt"
SIGNAL_KEYS = (*SUMMED_KEYS, FIRST_BOXES_NOT_GT)
BOX_TOLERANCE = 1.0  # pixels: GT boxes saved by a model may be rounded or rescaled and back
MOST, NEARLY_ALL = 0.5, 0.9
LABEL_LEAK = 0.99  # SGCls label accuracy real models do not reach
NOT_PROBABILITIES = 0.01  # share of checked score rows
FEW = 0.1  # share of images with capped candidates
ROWS_CHECKED = 32  # score rows checked per image (the first ones): a systematic kind shows in a sample
SUM_TOLERANCE = 1e-2
K_MAX = max(RECALL_KS)  # the largest K of R@K: fewer candidates cap it
WARNING = "WARNING "  # every detector's note starts with it


def empty_signals() -> dict:
    return {**dict.fromkeys(SUMMED_KEYS, 0), FIRST_BOXES_NOT_GT: None}


def _plain(image_id):
    """An image id as JSON writes it (a store may hand out numpy integers)."""
    return int(image_id) if isinstance(image_id, np.integer) else image_id


def merge_signal(totals: dict, key: str, value) -> None:
    """Add a later block's ``value`` of ``key`` to ``totals`` (blocks merge in file order)."""
    if key == FIRST_BOXES_NOT_GT:
        totals[key] = value if totals[key] is None else totals[key]
    else:
        totals[key] += value


def _pairs_are_gt(gt, pred, boxes_are_gt: bool) -> bool:
    """The distinct candidate pairs are exactly the distinct GT pairs (objects matched by index when the
    boxes are the GT boxes, else by IoU >= 0.5)."""
    gt_pairs = np.unique(gt.rels[:, :2], axis=0)
    cand = np.unique(pred.pairs, axis=0)
    if len(cand) != len(gt_pairs):
        return False
    if boxes_are_gt:
        return bool(np.array_equal(cand, gt_pairs))
    near = sgb_iou_matrix(pred.boxes, gt.boxes) >= np.float32(IOU_THRESHOLD)  # [pred object, GT object]
    # match[c, g]: candidate pair c overlaps GT pair g on both ends
    match = near[cand[:, 0]][:, gt_pairs[:, 0]] & near[cand[:, 1]][:, gt_pairs[:, 1]]
    return bool(match.any(axis=1).all() and match.any(axis=0).all())


def image_signals(signals: dict[str, int], gt, pred, task: str, score_kind: str) -> None:
    """Add one evaluated image's facts to ``signals`` (``gt`` has relations, ``pred`` at least one pair)."""
    spec = task_spec(task)
    signals["signal_images"] += 1
    n_gt, n_pred = len(gt.labels), len(pred.labels)
    boxes_are_gt = (
        n_pred == n_gt and n_gt > 0 and bool(np.all(np.abs(pred.boxes.astype(np.float64) - gt.boxes) <= BOX_TOLERANCE))
    )
    signals["boxes_are_gt"] += boxes_are_gt
    if not boxes_are_gt and signals[FIRST_BOXES_NOT_GT] is None:
        signals[FIRST_BOXES_NOT_GT] = _plain(gt.image_id)
    if spec.labels_on_gt_boxes and boxes_are_gt:
        signals["label_objects"] += n_gt
        signals["labels_are_gt"] += int(np.count_nonzero(pred.labels == gt.labels))
    if spec.predicts_labels and len(pred.pairs) <= 2 * len(gt.rels):  # a leak proposes few pairs
        signals["pairs_are_gt"] += _pairs_are_gt(gt, pred, boxes_are_gt)
    if score_kind == "probabilities" and pred.rel_scores.size:
        rows = np.asarray(pred.rel_scores[:ROWS_CHECKED], dtype=np.float32)  # float16 arithmetic is slow
        bad = (rows.min(axis=1) < -1e-6) | (np.abs(rows.sum(axis=1, dtype=np.float64) - 1.0) > SUM_TOLERANCE)
        signals["score_rows"] += len(rows)
        signals["score_rows_not_probabilities"] += int(np.count_nonzero(bad))
    objects = n_gt if spec.gt_labels else n_pred
    signals["few_candidates"] += len(pred.pairs) < min(K_MAX, objects * (objects - 1))


def block_signals(signals: dict[str, int], images: list, task: str, score_kind: str) -> None:
    """:func:`image_signals` of every (GT, prediction) of ``images`` at once: the same sums, from array
    operations over the block (the rare GT-pair-leak test, on images proposing few pairs, stays per image)."""
    if not images:
        return
    spec = task_spec(task)
    gts, preds = [g for g, _ in images], [p for _, p in images]
    n_gt = np.array([len(g.labels) for g in gts], dtype=np.int64)
    n_pred = np.array([len(p.labels) for p in preds], dtype=np.int64)
    signals["signal_images"] += len(images)
    boxes_are_gt = _boxes_are_gt(signals, gts, preds, n_gt, n_pred, spec.labels_on_gt_boxes)
    signals["boxes_are_gt"] += int(boxes_are_gt.sum())
    if not boxes_are_gt.all() and signals[FIRST_BOXES_NOT_GT] is None:
        signals[FIRST_BOXES_NOT_GT] = _plain(gts[int(np.argmin(boxes_are_gt))].image_id)
    n_pairs = np.array([len(p.pairs) for p in preds], dtype=np.int64)
    if spec.predicts_labels:
        n_rels = np.array([len(g.rels) for g in gts], dtype=np.int64)
        for i in np.flatnonzero(n_pairs <= 2 * n_rels).tolist():  # a leak proposes few pairs
            signals["pairs_are_gt"] += _pairs_are_gt(gts[i], preds[i], bool(boxes_are_gt[i]))
    if score_kind == "probabilities":
        _score_rows(signals, preds)
    objects = n_gt if spec.gt_labels else n_pred
    signals["few_candidates"] += int(np.count_nonzero(n_pairs < np.minimum(K_MAX, objects * (objects - 1))))


def _boxes_are_gt(signals: dict, gts: list, preds: list, n_gt, n_pred, labels_on_gt_boxes: bool) -> np.ndarray:
    """Per image, whether its predicted boxes are the GT boxes (within ``BOX_TOLERANCE``); with
    ``labels_on_gt_boxes``, the label counts of those images are added to ``signals``."""
    same = np.flatnonzero((n_pred == n_gt) & (n_gt > 0))  # images whose boxes may be the GT boxes
    boxes_are_gt = np.zeros(len(gts), dtype=bool)
    if not len(same):
        return boxes_are_gt
    counts = n_gt[same]
    predicted = np.concatenate([preds[i].boxes for i in same]).astype(np.float64)
    close = np.all(np.abs(predicted - np.concatenate([gts[i].boxes for i in same])) <= BOX_TOLERANCE, axis=1)
    image = np.repeat(np.arange(len(same)), counts)
    boxes_are_gt[same] = np.bincount(image, weights=~close, minlength=len(same)) == 0
    if labels_on_gt_boxes:
        equal = np.concatenate([preds[i].labels for i in same]) == np.concatenate([gts[i].labels for i in same])
        gt_boxes = boxes_are_gt[same][image]
        signals["label_objects"] += int(counts[boxes_are_gt[same]].sum())
        signals["labels_are_gt"] += int(np.count_nonzero(equal & gt_boxes))
    return boxes_are_gt


def _score_rows(signals: dict, preds: list) -> None:
    """The first ``ROWS_CHECKED`` score rows of each image: how many are not probability rows."""
    firsts = [p.rel_scores[:ROWS_CHECKED] for p in preds if p.rel_scores.size]
    if firsts:
        rows = np.concatenate(firsts).astype(np.float32, copy=False)  # float16 arithmetic is slow
        bad = (row_reduce(np.minimum, rows) < -1e-6) | (
            np.abs(row_reduce(np.add, rows, dtype=np.float64) - 1.0) > SUM_TOLERANCE
        )
        signals["score_rows"] += len(rows)
        signals["score_rows_not_probabilities"] += int(np.count_nonzero(bad))


def misuse_warnings(signals: dict[str, int], task: str) -> list[str]:
    """The warnings the totals call for, each saying what was seen and what to check."""
    spec = task_spec(task)
    n = signals["signal_images"]
    if n == 0:
        return []
    out = []
    gt_boxes = signals["boxes_are_gt"]
    first = signals[FIRST_BOXES_NOT_GT]
    if spec.gt_boxes and gt_boxes < MOST * n:
        out.append(
            f"{WARNING}wrong task? predicted boxes differ from the GT boxes in {n - gt_boxes} of {n} images; "
            f"{task} outputs carry the GT boxes, so this looks like detector (SGDet) outputs: check --task"
        )
    elif spec.gt_boxes and gt_boxes < n:
        out.append(
            f"{WARNING}not {task} boxes: predicted boxes differ from the GT boxes (by more than {BOX_TOLERANCE:g} "
            f"px) in {n - gt_boxes} of {n} images, the first image {first}; {task} outputs carry the GT boxes, "
            "so those images are matched by IoU as in SGDet and their numbers are not the file's "
            f"{task} numbers: check the file"
        )
    if spec.detects and gt_boxes >= NEARLY_ALL * n:
        out.append(
            f"{WARNING}wrong task? predicted boxes are the GT boxes in {gt_boxes} of {n} images: this looks "
            "like PredCls/SGCls outputs (GT boxes) scored as detection: check --task"
        )
    objects = signals["label_objects"]
    if spec.labels_on_gt_boxes and objects and signals["labels_are_gt"] >= LABEL_LEAK * objects:
        out.append(
            f"{WARNING}GT-label leak? predicted object labels equal the GT labels on "
            f"{signals['labels_are_gt']} of {objects} objects: SGCls must predict them (PredCls outputs, "
            "or GT labels copied into the predictions?)"
        )
    if spec.predicts_labels and signals["pairs_are_gt"] >= NEARLY_ALL * n:
        out.append(
            f"{WARNING}GT-pair leak? the candidate pairs are exactly the GT pairs in {signals['pairs_are_gt']} "
            f"of {n} images: {task} must rank every pair it proposes, not the annotated ones"
        )
    rows = signals["score_rows"]
    if rows and signals["score_rows_not_probabilities"] >= NOT_PROBABILITIES * rows:
        out.append(
            f"{WARNING}not probabilities? {signals['score_rows_not_probabilities']} of {rows} checked score "
            "rows have negative values or do not sum to 1, but the file declares probabilities (logits "
            "are ranked wrongly as probabilities)"
        )
    if signals["few_candidates"] >= FEW * n:
        out.append(
            f"{WARNING}too few candidates: {signals['few_candidates']} of {n} images have fewer than {K_MAX} "
            f"candidate pairs where their objects allow more, so {metric_name('R', K_MAX)} and "
            f"{metric_name('mR', K_MAX)} are capped"
        )
    return out


def warning_summary(notes: list[str]) -> str:
    """One line for the terminal: how many warnings the evaluation's notes hold, and what they say ("" if
    none)."""
    warnings = [note[len(WARNING) :] for note in notes if note.startswith(WARNING)]
    if not warnings:
        return ""
    return f"{len(warnings)} warning{'s' if len(warnings) > 1 else ''} (also in the JSON's notes): " + " | ".join(
        warnings
    )
