"""Detector box mAP for SGDet (issue 12): equal to the COCO library run directly on the same boxes (the
conversion written here independently), right on a case computed by hand, null for PredCls and SGCls."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from conftest import random_case, small_vocab
from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.metrics.engine import EvalOptions, evaluate

VOCAB = small_vocab(6, 5)


def _coco_directly(cases, num_classes):
    """COCO box AP by the library itself, from the issue's conventions: every image, xywh with w = x2 - x1,
    area = w·h, iscrowd 0, one category per class, the object score, maxDets 100."""
    from faster_coco_eval import COCO, COCOeval_faster

    annotations, detections = [], []
    for gt, pred in cases:
        for box, label in zip(gt.boxes, gt.labels):
            x1, y1, x2, y2 = map(float, box)
            annotations.append({"id": len(annotations) + 1, "image_id": gt.image_id, "category_id": int(label),
                                "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1), "iscrowd": 0})
        for box, label, score in zip(pred.boxes, pred.labels, pred.obj_scores):
            x1, y1, x2, y2 = map(float, box)
            detections.append({"image_id": gt.image_id, "category_id": int(label), "bbox": [x1, y1, x2 - x1, y2 - y1],
                               "score": float(score)})
    dataset = {"images": [{"id": gt.image_id} for gt, _ in cases], "annotations": annotations,
               "categories": [{"id": c} for c in range(1, num_classes + 1)]}
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(dataset)
        ev = COCOeval_faster(coco_gt, coco_gt.loadRes(detections), "bbox")
        ev.params.maxDets = [1, 10, 100]
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return float(ev.stats[1]), float(ev.stats[0])


@pytest.mark.parametrize("jobs", [1, 2])
def test_det_map_equals_the_coco_library_run_directly(jobs):
    rng = np.random.default_rng(5)
    cases = [random_case(rng, VOCAB, "sgdet", i) for i in range(300)]  # copies, IoU 0.5 and just below, misses
    assert any(len(gt.rels) == 0 for gt, _ in cases)  # images without relations count for detection
    m = evaluate(iter(cases), VOCAB, EvalOptions(task="sgdet"), jobs=jobs)["metrics"]
    ap50, ap = _coco_directly(cases, VOCAB.num_objects)
    assert 0 < ap < ap50 < 1
    assert m["det_mAP@50"] == ap50 and m["det_mAP"] == ap


def _image(i, gt_box, gt_label, det_box, det_label, score=0.9):
    gt = GTImage(i, 200, 200, np.array([gt_box], np.float32), np.array([gt_label]), np.array([[0, 0, 1]])[:0])
    pred = PredImage(i, np.array([det_box], np.float32), np.array([det_label]), np.array([score], np.float32),
                     np.zeros((0, 2), np.int64), np.zeros((0, VOCAB.num_predicates + 1), np.float32))
    return gt, pred


def test_det_map_by_hand():
    # class 1: a perfect detection (AP 1 at every IoU threshold); class 2: IoU = 100·64 / (100·100) = 0.64,
    # a match at thresholds .50, .55, .60 and a miss at .65 ... .95: AP@50 = 1, AP = 3/10
    cases = [_image(0, [0, 0, 100, 100], 1, [0, 0, 100, 100], 1),
             _image(1, [0, 0, 100, 100], 2, [0, 0, 100, 64], 2)]
    m = evaluate(iter(cases), VOCAB, EvalOptions(task="sgdet"))["metrics"]
    assert m["det_mAP@50"] == pytest.approx(1.0, abs=1e-12)
    assert m["det_mAP"] == pytest.approx((1.0 + 0.3) / 2, abs=1e-12)  # classes without GT are left out
    wrong_label = [_image(0, [0, 0, 100, 100], 1, [0, 0, 100, 100], 3)]
    assert evaluate(iter(wrong_label), VOCAB, EvalOptions(task="sgdet"))["metrics"]["det_mAP@50"] == 0.0


@pytest.mark.parametrize("task", ["predcls", "sgcls"])
def test_det_map_is_null_with_a_reason_outside_sgdet(task):
    rng = np.random.default_rng(1)
    doc = evaluate(iter([random_case(rng, VOCAB, task, i) for i in range(10)]), VOCAB, EvalOptions(task=task))
    assert doc["metrics"]["det_mAP@50"] is None and doc["metrics"]["det_mAP"] is None
    assert any("detector mAP is defined for SGDet only" in n for n in doc["notes"])
