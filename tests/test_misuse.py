"""Misuse detectors (issue 12): each fires on an eval_results.pytorch file built to trigger it, and every
detector stays silent on clean files of all three tasks. Files go through `sgg-eval evaluate`, so the notes
of the JSON and the terminal summary line are both checked."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_case, small_vocab
from torch_writer import eval_results_object, save_zip

from sgg_eval.cli import main
from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.metrics.misuse import FIRST_BOXES_NOT_GT, SUMMED_KEYS, block_signals, empty_signals, image_signals

NUM_OBJECTS, NUM_PREDICATES = 150, 50  # eval_results files without --gt are VG150
N_IMAGES = 30


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def _gt(rng, i):
    n = int(rng.integers(5, 12))
    xy = rng.integers(0, 400, size=(n, 2))
    boxes = np.column_stack([xy, xy + rng.integers(30, 90, size=(n, 2))]).astype(np.float32)
    m = int(rng.integers(3, 7))
    s = rng.integers(0, n, size=m)
    rels = np.column_stack([s, (s + rng.integers(1, n, size=m)) % n, rng.integers(1, NUM_PREDICATES + 1, size=m)])
    return GTImage(i, 500, 500, boxes, rng.integers(1, NUM_OBJECTS + 1, size=n), rels)


def _pred(rng, gt, task, *, gt_labels=False, gt_pairs=False, sigmoid=False, max_pairs=None, false_detections=True):
    """A model's output for ``gt``: GT boxes for PredCls/SGCls, shifted boxes plus two false detections for
    SGDet; labels right 70% of the time (SGCls/SGDet); every ordered pair of its objects, softmax scores.
    The keywords make one kind of misuse: GT labels, GT pairs only, sigmoid scores, a cap on the pairs."""
    n = len(gt.labels)
    boxes, labels = gt.boxes.copy(), gt.labels.copy()
    if task != "predcls" and not gt_labels:
        wrong = rng.random(n) < 0.3
        labels[wrong] = labels[wrong] % NUM_OBJECTS + 1
    if task == "sgdet":
        boxes = boxes + rng.integers(2, 6, size=boxes.shape).astype(np.float32)  # IoU stays well above 0.5
    if task == "sgdet" and false_detections:
        extra = np.array([[0, 0, 20, 20], [470, 470, 499, 499]], dtype=np.float32)
        boxes, labels = np.vstack([boxes, extra]), np.concatenate([labels, [1, 2]])
    q = len(labels)
    if gt_pairs:
        pairs = np.unique(gt.rels[:, :2], axis=0)
    else:
        pairs = np.array([(a, b) for a in range(q) for b in range(q) if a != b])
    if max_pairs is not None:
        pairs = pairs[:max_pairs]
    raw = rng.normal(size=(len(pairs), NUM_PREDICATES + 1)).astype(np.float32)
    # per-class sigmoids: in [0, 1], rows not summing to 1
    scores = 1 / (1 + np.exp(-raw)) if sigmoid else _softmax(raw)
    return PredImage(gt.image_id, boxes, labels, rng.random(q).astype(np.float32), pairs, scores.astype(np.float32))


def _evaluate(tmp_path, capsys, task, evaluated_as=None, **kw):
    rng = np.random.default_rng(7)
    cases = []
    for i in range(N_IMAGES):
        gt = _gt(rng, i)
        cases.append((gt, _pred(rng, gt, task, **kw)))
    path = tmp_path / f"{task}_eval_results.pytorch"
    save_zip(eval_results_object(cases), path)
    out = tmp_path / "m.json"
    capsys.readouterr()
    assert main(["evaluate", str(path), "--task", evaluated_as or task, "--jobs", "1", "-o", str(out)]) == 0
    warnings = [n for n in json.loads(out.read_text())["notes"] if n.startswith("WARNING")]
    return warnings, capsys.readouterr().err


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
def test_clean_files_raise_no_warning(tmp_path, capsys, task):
    warnings, err = _evaluate(tmp_path, capsys, task)
    assert warnings == [] and "warning" not in err


TRIGGERS = {
    "sgdet_as_sgcls": (dict(task="sgdet", evaluated_as="sgcls"), "wrong task? predicted boxes differ"),
    # PredCls pairs index the GT objects, so a detector's extra objects make the file refused outright
    # (tests/test_bad_inputs.py); with as many detections as GT objects it is evaluated, and warned about
    "sgdet_as_predcls": (
        dict(task="sgdet", evaluated_as="predcls", false_detections=False),
        "wrong task? predicted boxes differ",
    ),
    "predcls_as_sgdet": (dict(task="predcls", evaluated_as="sgdet"), "wrong task? predicted boxes are the GT boxes"),
    "sgcls_label_leak": (dict(task="sgcls", gt_labels=True), "GT-label leak?"),
    "sgcls_pair_leak": (dict(task="sgcls", gt_pairs=True), "GT-pair leak?"),
    "sgdet_pair_leak": (dict(task="sgdet", gt_pairs=True), "GT-pair leak?"),
    # (negative values are refused by the reader; sigmoid scores in [0, 1] pass it and are caught here)
    "sigmoids_declared_probabilities": (dict(task="predcls", sigmoid=True), "not probabilities?"),
    "too_few_candidates": (dict(task="sgcls", max_pairs=12), "too few candidates"),
}


@pytest.mark.parametrize("case", sorted(TRIGGERS))
def test_each_detector_fires_on_its_trigger_file(tmp_path, capsys, case):
    kw, expected = TRIGGERS[case]
    warnings, err = _evaluate(tmp_path, capsys, **kw)
    assert len([w for w in warnings if expected in w]) == 1, warnings
    assert expected in err and "warning" in err  # the terminal summary line


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
@pytest.mark.parametrize("score_kind", ["probabilities", "logits"])
def test_block_signals_are_the_sums_of_image_signals(task, score_kind):
    """On random blocks with the documented edge cases, plus images whose predictions are the GT objects and
    pairs (the leak signals fire), images without pairs, float16 and non-normalised scores."""
    vocab = small_vocab(6, 5)
    rng = np.random.default_rng(len(task) + len(score_kind))
    for _ in range(8):
        images = []
        for i in range(int(rng.integers(1, 40))):
            gt, pred = random_case(rng, vocab, task, i)
            kind = rng.integers(0, 4)
            if kind == 0 and len(gt.rels):  # a leak: the GT objects and exactly the GT pairs
                pred.boxes, pred.labels = gt.boxes.copy(), gt.labels.copy()
                pred.obj_scores = np.ones(len(gt.labels), np.float32)
                pred.pairs = np.unique(gt.rels[:, :2], axis=0)
                pred.rel_scores = rng.random((len(pred.pairs), 6)).astype(np.float32)
            elif kind == 1:
                pred.rel_scores = pred.rel_scores.astype(np.float16)
            images.append((gt, pred))
        want, got = empty_signals(), empty_signals()
        for gt, pred in images:
            image_signals(want, gt, pred, task, score_kind)
        block_signals(got, images, task, score_kind)
        assert got == want
        assert all(type(v) is int for k, v in got.items() if k in SUMMED_KEYS)
        assert got[FIRST_BOXES_NOT_GT] is None or type(got[FIRST_BOXES_NOT_GT]) is int


@pytest.mark.parametrize("task", ["predcls", "sgcls"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_few_images_with_other_boxes_are_named_once(tmp_path, capsys, task, jobs):
    """PredCls/SGCls outputs carry the GT boxes; a file where a few images have other boxes (fewer than half:
    no 'wrong task') is scored by IoU there. One warning names how many and the first image in file order,
    whatever the number of processes."""
    rng = np.random.default_rng(11)
    moved = {13, 21, 40}  # image ids (file order), the first of them in the second block with --jobs 2
    cases = []
    for i in range(60):
        gt = _gt(rng, i)
        pred = _pred(rng, gt, task)
        if i in moved:
            pred.boxes = pred.boxes + np.float32(3)
        cases.append((gt, pred))
    path = tmp_path / "moved.pytorch"
    save_zip(eval_results_object(cases), path)
    out = tmp_path / "m.json"
    capsys.readouterr()
    assert main(["evaluate", str(path), "--task", task, "--jobs", jobs, "-o", str(out)]) == 0
    warnings = [n for n in json.loads(out.read_text())["notes"] if n.startswith("WARNING")]
    err = capsys.readouterr().err
    assert len(warnings) == 1 and f"not {task} boxes" in warnings[0], warnings
    assert "in 3 of 60 images, the first image 13" in warnings[0], warnings[0]
    assert err.count(f"not {task} boxes") == 1


def test_blind_replace_warns_of_boxes_that_are_not_the_gt_boxes(tmp_path, capsys):
    from sgg_eval.data.stats import compute_stats, write_stats
    from sgg_eval.data.types import Vocabulary

    rng = np.random.default_rng(12)
    cases = []
    for i in range(30):
        gt = _gt(rng, i)
        pred = _pred(rng, gt, "predcls")
        if i == 5:
            pred.boxes = pred.boxes + np.float32(4)
        cases.append((gt, pred))
    path = tmp_path / "moved.pytorch"
    save_zip(eval_results_object(cases), path)
    vocab = Vocabulary(
        tuple(f"o{i}" for i in range(1, NUM_OBJECTS + 1)), tuple(f"p{i}" for i in range(1, NUM_PREDICATES + 1))
    )
    gts = [g for g, _ in cases]
    write_stats(tmp_path / "stats.h5", compute_stats(gts, vocab, gts))
    capsys.readouterr()
    args = ["blind-replace", str(path), "--stats", str(tmp_path / "stats.h5"), "--task", "predcls", "--max-n", "1"]
    assert main([*args, "-o", str(tmp_path / "b.json")]) == 0
    err = capsys.readouterr().err
    assert err.count("not predcls boxes") == 1 and "the first image 5" in err, err
    assert any("not predcls boxes" in n for n in json.loads((tmp_path / "b.json").read_text())["notes"])


def test_the_first_image_is_kept_from_the_first_block_that_has_one():
    from sgg_eval.metrics.misuse import merge_signal

    totals = empty_signals()
    for block in (None, 7, 3, None):  # blocks in file order: the second block's first image wins
        merge_signal(totals, FIRST_BOXES_NOT_GT, block)
        merge_signal(totals, "boxes_are_gt", 2)
    assert totals[FIRST_BOXES_NOT_GT] == 7 and totals["boxes_are_gt"] == 8
