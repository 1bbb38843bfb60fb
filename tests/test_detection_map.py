"""Detector box mAP for SGDet (issue 12): our array implementation (``metrics/box_ap.py``, issue 11) equals
the COCO library (faster-coco-eval) run directly on the same boxes, the conversion written here
independently, also on crowded images where COCO's tie and cap rules decide; right on a case computed by
hand; null for PredCls and SGCls."""

from __future__ import annotations

import contextlib
import io
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_case, small_vocab

from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.metrics.engine import evaluate
from sgg_eval.metrics.options import EvalOptions

VOCAB = small_vocab(6, 5)


def _coco_directly(cases, num_classes):
    """COCO box AP by the library itself, from the issue's conventions: every image, xywh with w = x2 - x1,
    area = w·h, iscrowd 0, one category per class, the object score, maxDets 100."""
    from faster_coco_eval import COCO, COCOeval_faster

    annotations, detections = [], []
    for gt, pred in cases:
        for box, label in zip(gt.boxes, gt.labels):
            x1, y1, x2, y2 = map(float, box)
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": gt.image_id,
                    "category_id": int(label),
                    "bbox": [x1, y1, x2 - x1, y2 - y1],
                    "area": (x2 - x1) * (y2 - y1),
                    "iscrowd": 0,
                }
            )
        for box, label, score in zip(pred.boxes, pred.labels, pred.obj_scores):
            x1, y1, x2, y2 = map(float, box)
            detections.append(
                {
                    "image_id": gt.image_id,
                    "category_id": int(label),
                    "bbox": [x1, y1, x2 - x1, y2 - y1],
                    "score": float(score),
                }
            )
    dataset = {
        "images": [{"id": gt.image_id} for gt, _ in cases],
        "annotations": annotations,
        "categories": [{"id": c} for c in range(1, num_classes + 1)],
    }
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
    # equal up to the order of a float sum (the mean over classes and thresholds)
    assert abs(m["det_mAP@50"] - ap50) <= 1e-12 and abs(m["det_mAP"] - ap) <= 1e-12


def _image(i, gt_box, gt_label, det_box, det_label, score=0.9):
    gt = GTImage(i, 200, 200, np.array([gt_box], np.float32), np.array([gt_label]), np.array([[0, 0, 1]])[:0])
    pred = PredImage(
        i,
        np.array([det_box], np.float32),
        np.array([det_label]),
        np.array([score], np.float32),
        np.zeros((0, 2), np.int64),
        np.zeros((0, VOCAB.num_predicates + 1), np.float32),
    )
    return gt, pred


def test_det_map_by_hand():
    # class 1: a perfect detection (AP 1 at every IoU threshold); class 2: IoU = 100·64 / (100·100) = 0.64,
    # a match at thresholds .50, .55, .60 and a miss at .65 ... .95: AP@50 = 1, AP = 3/10
    cases = [_image(0, [0, 0, 100, 100], 1, [0, 0, 100, 100], 1), _image(1, [0, 0, 100, 100], 2, [0, 0, 100, 64], 2)]
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


@pytest.mark.parametrize("seed", range(4))
def test_box_ap_follows_coco_where_its_rules_decide(seed):
    """Crowded classes (more than 100 detections of one class in an image: the cap), tied scores, duplicate
    GT boxes (equal IoU: the later GT box is taken), boxes at IoU exactly 0.5, and classes without GT."""
    from sgg_eval.metrics.box_ap import average_precision, coco_box_ap, match

    rng = np.random.default_rng(seed)
    cases = []
    for i in range(12):
        n = int(rng.integers(1, 8))
        xy = rng.integers(0, 50, size=(n, 2)).astype(np.float32)
        boxes = np.column_stack([xy, xy + rng.integers(4, 40, size=(n, 2))]).astype(np.float32)
        if n > 1:
            boxes[-1] = boxes[0]  # a duplicate GT box
        labels = rng.integers(1, 4, size=n)
        crowd = 120 if i % 4 == 0 else int(rng.integers(0, 30))
        pick = rng.integers(0, n, size=crowd)
        det = boxes[pick] + rng.integers(-3, 4, size=(crowd, 4)).astype(np.float32)
        det[:, 2:] = np.maximum(det[:, 2:], det[:, :2] + 1)
        w = boxes[pick, 2] - boxes[pick, 0]
        half = rng.random(crowd) < 0.2  # IoU exactly 0.5: twice as wide, same height
        det[half] = np.column_stack([boxes[pick, 0], boxes[pick, 1], boxes[pick, 0] + 2 * w, boxes[pick, 3]])[half]
        det_labels = np.where(rng.random(crowd) < 0.8, labels[pick], rng.integers(1, 6, size=crowd))
        scores = (rng.integers(1, 6, size=crowd) / 5).astype(np.float32)  # many ties
        gt = GTImage(100 - i, 200, 200, boxes, labels, np.zeros((0, 3), np.int64))  # ids not in file order
        cases.append(
            (
                gt,
                PredImage(
                    100 - i,
                    det,
                    det_labels,
                    scores,
                    np.zeros((0, 2), np.int64),
                    np.zeros((0, VOCAB.num_predicates + 1), np.float32),
                ),
            )
        )
    ap50, ap = _coco_directly(cases, VOCAB.num_objects)

    def rows(b):
        return np.column_stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]]).astype(np.float64)

    gt = np.vstack([np.column_stack([np.full(len(g.labels), g.image_id), rows(g.boxes), g.labels]) for g, _ in cases])
    det = np.vstack(
        [np.column_stack([np.full(len(p.labels), g.image_id), rows(p.boxes), p.labels, p.obj_scores]) for g, p in cases]
    )
    ours, ours50 = coco_box_ap(gt, det)
    assert 0 < ap < 1 and abs(ours50 - ap50) <= 1e-12 and abs(ours - ap) <= 1e-12
    # matched in blocks of images (as the workers do), in any order: the same AP, to the last bit (the tied
    # scores across images are ordered by image id, wherever an image's block falls)
    images = rng.permutation(np.unique(gt[:, 0]))
    groups = np.array_split(images, 4)
    parts = [match(gt[np.isin(gt[:, 0], g)], det[np.isin(det[:, 0], g)]) for g in groups[::-1]]
    assert average_precision(parts) == (ours, ours50)


def test_a_detection_equally_close_to_two_gt_boxes_takes_the_later_one():
    """COCO's tie rule decides here: d1 has IoU 90/110 with both A and B; d2 is A itself (IoU 1) and has IoU
    80/120 with B. Taking the later box B for d1 leaves A for d2: two true positives at IoU 0.70-0.80, where
    taking A would leave d2 a false positive."""
    from sgg_eval.metrics.box_ap import coco_box_ap

    boxes = np.array([[0, 0, 10, 10], [2, 0, 12, 10]], np.float32)  # A, B (xyxy)
    dets = np.array([[1, 0, 11, 10], [0, 0, 10, 10]], np.float32)
    gt = GTImage(0, 50, 50, boxes, np.array([1, 1]), np.zeros((0, 3), np.int64))
    pred = PredImage(
        0,
        dets,
        np.array([1, 1]),
        np.array([0.9, 0.8], np.float32),
        np.zeros((0, 2), np.int64),
        np.zeros((0, VOCAB.num_predicates + 1), np.float32),
    )
    ap50, ap = _coco_directly([(gt, pred)], VOCAB.num_objects)

    def xywh(b):
        return np.column_stack([b[:, :2], b[:, 2:] - b[:, :2]]).astype(np.float64)

    ours, ours50 = coco_box_ap(
        np.column_stack([[0, 0], xywh(boxes), [1, 1]]), np.column_stack([[0, 0], xywh(dets), [1, 1], [0.9, 0.8]])
    )
    # both found at 0.50 ... 0.80 (7 thresholds); at 0.85 ... 0.95 only d2 (rank 2): precision 1/2 up to recall 1/2
    by_hand = (7 * 1.0 + 3 * (51 * 0.5) / 101) / 10
    assert abs(ap - by_hand) <= 1e-12 and abs(ours - by_hand) <= 1e-12 and ours50 == ap50 == 1.0


def test_text_image_ids_order_as_text_and_give_the_same_map():
    """GQA's text ids: their float keys sort as the texts sort (COCO visits images by sorted id, which breaks
    score ties) and are distinct; cases renamed to text ids in the same order give the same mAP, any --jobs."""
    from sgg_eval.data.image_ids import image_order_key

    rng = np.random.default_rng(3)
    alphabet = list("0123456789abcdefghijklmnopqrstuvwxyz")
    texts = {"".join(rng.choice(alphabet, size=rng.integers(1, 11))) for _ in range(3000)} | {"9", "10", "n1", "n"}
    keys = {t: image_order_key(t) for t in texts}
    assert sorted(texts) == sorted(texts, key=keys.get) and len(set(keys.values())) == len(texts)
    cases = [random_case(rng, VOCAB, "sgdet", i) for i in range(120)]
    for _, pred in cases:
        pred.obj_scores = np.round(pred.obj_scores, 1).astype(np.float32)  # many score ties across images
    want = evaluate(iter(cases), VOCAB, EvalOptions(task="sgdet"), jobs=1)["metrics"]
    renamed = [(replace(g, image_id=f"n{i:04d}"), replace(p, image_id=f"n{i:04d}")) for i, (g, p) in enumerate(cases)]
    for jobs in (1, 2):
        got = evaluate(iter(renamed), VOCAB, EvalOptions(task="sgdet"), jobs=jobs)["metrics"]
        assert (got["det_mAP"], got["det_mAP@50"]) == (want["det_mAP"], want["det_mAP@50"])
    shuffled = [
        (replace(g, image_id=f"n{9999 - i}"), replace(p, image_id=f"n{9999 - i}")) for i, (g, p) in enumerate(cases)
    ]
    reversed_order = evaluate(iter(shuffled), VOCAB, EvalOptions(task="sgdet"), jobs=1)["metrics"]
    assert reversed_order["det_mAP"] != want["det_mAP"]  # the tie order follows the ids: the test can fail
