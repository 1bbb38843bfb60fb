"""``batch_is_valid`` answers exactly what validating every image of the batch answers: on random batches
(every task, empty images, images without pairs) and with one defect planted at random in one image, of
every kind the per-image checks know, including values just inside and just outside each bound."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_case, small_vocab

from sgg_eval.core import tuning
from sgg_eval.core.errors import InputError
from sgg_eval.data.batch_checks import batch_is_valid
from sgg_eval.data.types import PROBABILITY_SLACK, GTImage, PredImage

VOCAB = small_vocab(6, 5)


@pytest.fixture(params=["concatenated", "array_by_array", "keeping_row_maxima"])
def check(request, monkeypatch):
    """``batch_is_valid`` of a batch, with its arrays checked concatenated; array by array, as large ones are;
    or keeping the row maxima of every score matrix, as evaluation asks for SGDet's. Keeping them, a batch that
    passes must hold, for every float32 matrix without -0.0 (the one valid value with the sign bit), its row
    maxima over predicates 1.., equal to a loop's."""
    if request.param == "array_by_array":
        monkeypatch.setattr(tuning, "CONCATENATED", 0)
    keep = request.param == "keeping_row_maxima"
    if keep:
        monkeypatch.setattr(tuning, "MAXIMA_ROWS", 1)

    def run(cases, probabilities: bool) -> bool:
        answer = batch_is_valid(
            [g for g, _ in cases], [p for _, p in cases], VOCAB, probabilities=probabilities, keep_row_maxima=keep
        )
        for _, pred in cases if keep and answer and probabilities else ():
            scores, kept = pred.rel_scores, pred.row_maxima()
            if len(pred.pairs) and scores.dtype == np.float32 and not np.signbit(scores).any():
                want = np.array([max(row[1:]) for row in scores.tolist()], dtype=np.float32)
                assert kept is not None and kept.dtype == np.float32
                np.testing.assert_array_equal(kept, want)
            else:
                assert kept is None
        return answer

    return run


def _each_is_valid(cases, probabilities: bool) -> bool:
    """The definition: every image passes its own validate."""
    try:
        for gt, pred in cases:
            gt.validate(VOCAB, "f")
            pred.validate(VOCAB, "f", probabilities=probabilities)
    except InputError:
        return False
    return True


# the largest float32 whose float64 value is at most 1 + slack, found by stepping (not by the code's own rule)
_LAST_INSIDE = np.float32(1.0)
while float(np.nextafter(_LAST_INSIDE, np.float32(np.inf))) <= 1.0 + PROBABILITY_SLACK:
    _LAST_INSIDE = np.nextafter(_LAST_INSIDE, np.float32(np.inf))


def _set(array: np.ndarray, value, at: int = -1) -> np.ndarray:
    out = np.array(array, copy=True)
    if out.size:
        out.flat[at] = value
    return out


DEFECTS = {  # name -> (image part, field, change); some are harmless at the bound (both sides must agree)
    "gt_box_nan": ("gt", "boxes", lambda a: _set(a, np.nan)),
    "gt_box_inf": ("gt", "boxes", lambda a: _set(a, np.inf)),
    "gt_box_flipped": ("gt", "boxes", lambda a: a[:, [2, 1, 0, 3]] if len(a) else a),
    "gt_box_zero_width": ("gt", "boxes", lambda a: a[:, [0, 1, 0, 3]] if len(a) else a),
    "gt_label_zero": ("gt", "labels", lambda a: _set(a, 0)),
    "gt_label_max": ("gt", "labels", lambda a: _set(a, VOCAB.num_objects)),
    "gt_label_too_big": ("gt", "labels", lambda a: _set(a, VOCAB.num_objects + 1)),
    "gt_labels_short": ("gt", "labels", lambda a: a[:-1]),
    "gt_labels_float": ("gt", "labels", lambda a: a.astype(np.float32) + 0.5),
    "gt_rel_index_last": ("gt", "rels", lambda a: a),
    "gt_rel_index_out": ("gt", "rels", lambda a: _set(a[:, [2, 1, 0]], 99)[:, [2, 1, 0]]),
    "gt_rel_index_negative": ("gt", "rels", lambda a: _set(a[:, [2, 1, 0]], -1)[:, [2, 1, 0]]),
    "gt_rel_index_at_count": ("gt", "rels", None),  # one past the last object: set in _planted
    "gt_predicate_zero": ("gt", "rels", lambda a: _set(a, 0)),
    "gt_predicate_too_big": ("gt", "rels", lambda a: _set(a, VOCAB.num_predicates + 1)),
    "gt_rels_transposed": ("gt", "rels", lambda a: a.T),
    "pred_box_nan": ("pred", "boxes", lambda a: _set(a, np.nan)),
    "pred_label_too_big": ("pred", "labels", lambda a: _set(a, VOCAB.num_objects + 1)),
    "obj_score_nan": ("pred", "obj_scores", lambda a: _set(a, np.nan)),
    "obj_score_huge": ("pred", "obj_scores", lambda a: _set(a, 3e38)),
    "obj_score_negative": ("pred", "obj_scores", lambda a: _set(a, -0.25)),
    "obj_score_negative_zero": ("pred", "obj_scores", lambda a: _set(a, np.float32(-0.0))),
    "obj_scores_long": ("pred", "obj_scores", lambda a: np.append(a, np.float32(0.5))),
    "pair_negative": ("pred", "pairs", lambda a: _set(a, -1)),
    "pair_last": ("pred", "pairs", lambda a: a),
    "pair_out": ("pred", "pairs", lambda a: _set(a, 1000)),
    "pair_at_count": ("pred", "pairs", None),  # one past the last object: set in _planted
    "pairs_three_columns": ("pred", "pairs", lambda a: np.column_stack([a, a[:, :1]]) if len(a) else a),
    "score_nan": ("pred", "rel_scores", lambda a: _set(a, np.nan)),
    "score_first_nan": ("pred", "rel_scores", lambda a: _set(a, np.nan, 0)),  # the first row's background
    "score_first_above": ("pred", "rel_scores", lambda a: _set(a, 1.5, 0)),
    "score_negative": ("pred", "rel_scores", lambda a: _set(a, -1e-4)),
    "score_one_plus_slack": ("pred", "rel_scores", lambda a: _set(a, np.float32(1.0 + PROBABILITY_SLACK / 2))),
    "score_above_slack": ("pred", "rel_scores", lambda a: _set(a, 1.0 + 2 * PROBABILITY_SLACK)),
    # the float32 values either side of 1 + slack, -0.0 (valid), infinities and a NaN with its sign bit set:
    # the bounds of the one-pass check over the bits
    "score_last_float_inside": ("pred", "rel_scores", lambda a: _set(a, _LAST_INSIDE)),
    "score_first_float_outside": ("pred", "rel_scores", lambda a: _set(a, np.nextafter(_LAST_INSIDE, np.inf))),
    "score_negative_zero": ("pred", "rel_scores", lambda a: _set(a, np.float32(-0.0))),
    "score_inf": ("pred", "rel_scores", lambda a: _set(a, np.inf)),
    "score_minus_inf": ("pred", "rel_scores", lambda a: _set(a, -np.inf)),
    "score_negative_nan": ("pred", "rel_scores", lambda a: _set(a, -np.float32(np.nan))),
    "score_logit": ("pred", "rel_scores", lambda a: _set(a, 4.2)),
    "scores_wide": ("pred", "rel_scores", lambda a: np.column_stack([a, a[:, :1]]) if len(a) else a),
    "scores_short": ("pred", "rel_scores", lambda a: a[:-1]),
}


def _planted(cases, rng, name):
    part, field, change = DEFECTS[name]
    i = int(rng.integers(len(cases)))
    gt, pred = cases[i]
    if change is None:  # an index one past the image's last object
        count = len(gt.labels) if part == "gt" else len(pred.boxes)
        change = (lambda a: _set(a[:, [2, 1, 0]], count)[:, [2, 1, 0]]) if part == "gt" else (lambda a: _set(a, count))
    if part == "gt":
        fields = dict(boxes=gt.boxes, labels=gt.labels, rels=gt.rels)
        fields[field] = change(getattr(gt, field))
        gt = GTImage(gt.image_id, gt.width, gt.height, **fields)
    else:
        fields = dict(
            boxes=pred.boxes,
            labels=pred.labels,
            obj_scores=pred.obj_scores,
            pairs=pred.pairs,
            rel_scores=pred.rel_scores,
        )
        fields[field] = change(getattr(pred, field))
        pred = PredImage(pred.image_id, **fields)
    return cases[:i] + [(gt, pred)] + cases[i + 1 :]


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
@pytest.mark.parametrize("seed", range(4))
def test_random_batches_agree_with_image_by_image_validation(task, seed, check):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        cases = [random_case(rng, VOCAB, task, i) for i in range(int(rng.integers(1, 12)))]
        for probabilities in (True, False):
            assert check(cases, probabilities) == _each_is_valid(cases, probabilities)


@pytest.mark.parametrize("name", DEFECTS)
def test_every_planted_defect_gets_the_same_answer(name, check):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    answers = set()
    for _ in range(25):
        cases = _planted([random_case(rng, VOCAB, "sgdet", i) for i in range(int(rng.integers(1, 8)))], rng, name)
        want = _each_is_valid(cases, True)
        answers.add(want)
        assert check(cases, True) == want
    if name not in (
        "gt_label_max",
        "gt_rel_index_last",
        "pair_last",
        "score_one_plus_slack",
        "gt_box_zero_width",
        "obj_score_huge",
        "obj_score_negative_zero",
        "score_last_float_inside",
        "score_negative_zero",
    ):
        assert False in answers  # the defect did land in a checked place at least once
