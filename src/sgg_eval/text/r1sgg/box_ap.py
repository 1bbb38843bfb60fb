"""R1-SGG's COCO box AP of the answers' objects (``--protocol r1sgg``; its ``SggEvaluator`` with pycocotools), as
``det_mAP@50`` (its printed "AP50") and ``det_mAP``: the COCO API's rules (``metrics.box_ap``) on what R1-SGG
hands it:

- the answered images only (its gathered file's ids), every GT object of them; ties between images (every kept
  object scores 1) in the order of the ids sorted as text, as ``np.unique`` sorts R1-SGG's string ids;
- every kept object, score 1, its box as R1-SGG passes it: float32, made ``x, y, w, h`` in float32; GT boxes as
  written, ``w = x2 - x1``;
- a placeholder's single object (label 0, score 0) is no VG150 class (left out) but is PSG's ``person``: a
  detection at score 0 that matches nothing (its box is uninitialised memory there);
- its GT annotations are numbered from 0 in file order, and the COCO API takes a match to annotation 0 for no
  match: the detection that takes the first object of the first GT row (when that image is answered) counts as
  a false positive, and that box stays taken.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.metrics.box_ap import average_precision, match


def r1sgg_box_ap(rows: list, answers: dict, psg: bool) -> tuple[float, float]:
    """``(det_mAP, det_mAP@50)`` of ``answers`` (image id -> ``MappedAnswer``, None for a failure) on the GT
    ``rows`` (``RowImage``, in file order); NaN when the answered images have no GT object."""
    answered = [img for img in rows if img.image_id in answers]
    key = {image_id: float(i) for i, image_id in enumerate(sorted(img.image_id for img in answered))}
    first = next((img.image_id for img in rows if len(img.boxes)), None)
    gt, det, void = [np.zeros((0, 6))], [np.zeros((0, 7))], [np.zeros(0, bool)]
    for img in answered:
        b = img.boxes
        gt.append(np.column_stack([np.full(len(b), key[img.image_id]), b[:, :2], b[:, 2:] - b[:, :2], img.labels]))
        flag = np.zeros(len(b), bool)
        flag[:1] = img.image_id == first
        void.append(flag)
        answer = answers[img.image_id]
        if answer is not None and not answer.placeholder:
            f = answer.boxes.astype(np.float32)
            xywh = np.column_stack([f[:, :2], f[:, 2:] - f[:, :2]]).astype(np.float64)
            ones = np.ones(len(f))
            det.append(np.column_stack([np.full(len(f), key[img.image_id]), xywh, answer.labels, ones]))
        elif psg:
            det.append(np.array([[key[img.image_id], -1e6, -1e6, 0.0, 0.0, 1, 0.0]]))
    matched = match(np.vstack(gt), np.vstack(det), np.concatenate(void))
    if not matched.n_gt.any():
        return float("nan"), float("nan")
    return average_precision([matched])
