"""STTran's Action Genome scoring (video.sttran, video.ag_metrics) against the slow loop reference written from the
rules (tests/ag_reference.py), on random inputs with the edge cases, and on the worked example whose numbers
STTran's own code printed (docs/action_genome.md)."""

from __future__ import annotations

import random

import ag_reference
import numpy as np
import pytest

from sgg_eval.metrics.iou import oed_iou, sttran_iou
from sgg_eval.video.ag_annotations import AGSplit
from sgg_eval.video.ag_beyond import TrainingFacts, _triplet_keys, beyond_protocol
from sgg_eval.video.ag_metrics import Relations, recalls
from sgg_eval.video.sttran import CONSTRAINTS, FramePredictions, FrameTruth, first_hits, ranked_triplets


def random_frames(rng: np.random.Generator, frames: int, ties: bool) -> tuple[FrameTruth, FramePredictions]:
    boxes, labels, box_offsets, rels, rel_offsets = [], [], [0], [], [0]
    for _ in range(frames):
        n = int(rng.integers(2, 6))
        base = rng.uniform(0, 80, (n, 2))
        fb = np.c_[base, base + rng.uniform(5, 60, (n, 2))]
        if rng.random() < 0.3:
            fb[-1] = fb[-2]  # a duplicate object
        fl = np.r_[1, rng.integers(2, 6, n - 1)]
        boxes.extend(fb)
        labels.extend(fl)
        fr = []
        for m in range(1, n):
            fr.append((0, m, int(rng.integers(1, 4))))
            fr.extend((m, 0, int(p)) for p in rng.integers(4, 10, int(rng.integers(0, 3))))
            fr.extend((0, m, int(p)) for p in rng.integers(10, 27, int(rng.integers(0, 3))))
        rels.extend(fr)
        box_offsets.append(len(labels))
        rel_offsets.append(len(rels))
    truth = FrameTruth(np.asarray(boxes, np.float64), np.asarray(labels), np.asarray(box_offsets),
                       np.asarray(rels, np.int32), np.asarray(rel_offsets))  # fmt: skip
    # predictions: the GT boxes (some moved to an IoU exactly 0.5 or just under), extra boxes, pairs of any frame
    pb = truth.boxes.copy()
    exact = rng.random(len(pb)) < 0.2
    pb[exact, 3] = pb[exact, 1] + (pb[exact, 3] - pb[exact, 1] + 1) / 2 - 1  # half the height: IoU exactly 0.5
    extra = rng.uniform(0, 120, (frames, 4))
    extra[:, 2:] += extra[:, :2]
    pb = np.vstack([pb, extra]).astype(np.float32).astype(np.float64)
    pl = np.r_[truth.labels, rng.integers(1, 6, frames)]
    if rng.random() < 0.5:
        pl = np.where(rng.random(len(pl)) < 0.15, rng.integers(1, 6, len(pl)), pl)
    grid = 4 if ties else 1 << 20
    scores = (np.ceil(rng.uniform(0.05, 1, len(pb)) * grid) / grid).astype(np.float32)
    pairs, pair_frame = [], []
    for f in range(frames):
        b0, b1 = truth.box_offsets[f], truth.box_offsets[f + 1]
        for m in range(b0 + 1, b1):
            if rng.random() < 0.85:
                pairs.append((b0, m))
                pair_frame.append(f)
        if rng.random() < 0.2:
            pairs.append((b0, len(truth.boxes) + int(rng.integers(frames))))  # an extra box, maybe another frame's
            pair_frame.append(f)
    p = len(pairs)

    def dist(width):
        d = np.ceil(rng.uniform(0, 1, (p, width)) * grid) / grid
        d[rng.random((p, width)) < 0.1] = 0.0
        d[rng.random((p, width)) < 0.05] = np.float32(0.9)
        return d.astype(np.float32)

    att = rng.dirichlet(np.ones(3), p).astype(np.float32)
    if ties:
        att = (np.round(att * 4) / 4).astype(np.float32)
    att[rng.random(p) < 0.05, :2] = 0  # an attention row STTran's semi drops
    pred = FramePredictions(pb, pl.astype(np.int64), scores, np.asarray(pairs, np.int64).reshape(-1, 2),
                            np.asarray(pair_frame, np.int64), att, dist(6), dist(17))  # fmt: skip
    return truth, pred


@pytest.mark.parametrize("constraint", CONSTRAINTS)
@pytest.mark.parametrize("ties", [False, True])
def test_first_hits_equal_the_slow_reference(constraint, ties):
    rng = np.random.default_rng(7 + ties)
    for _ in range(12):
        truth, pred = random_frames(rng, int(rng.integers(1, 7)), ties)
        threshold = 0.5 if ties else 0.9  # with ties, scores of exactly 0.5 meet the threshold
        fast = first_hits(truth, ranked_triplets(pred, constraint, threshold), pred).ours
        slow = ag_reference.first_hits(truth, pred, constraint, threshold)
        assert fast.tolist() == slow
        got = recalls(fast, truth.rels, truth.rel_offsets)
        want = ag_reference.metrics(slow, truth.rels, truth.rel_offsets)
        assert got.keys() == want.keys()
        for key in got:
            assert got[key] == pytest.approx(want[key], abs=1e-15), key


@pytest.mark.parametrize("constraint", ["with", "no"])
def test_oeds_matching_equals_the_slow_reference(constraint):
    """OED's evaluator is STTran's lines with DETR's IoU (no +1): the same reference with that IoU; the boxes
    moved to STTran's IoU of exactly 0.5 miss here, so the two differ."""
    rng = np.random.default_rng(17)
    differ = 0
    for _ in range(10):
        truth, pred = random_frames(rng, int(rng.integers(1, 6)), False)
        triplets = ranked_triplets(pred, constraint)
        fast = first_hits(truth, triplets, pred, iou=oed_iou).ours
        assert fast.tolist() == ag_reference.first_hits(truth, pred, constraint, overlap=ag_reference.iou_oed)
        differ += int(np.sum(fast != first_hits(truth, triplets, pred).ours))
    assert differ


@pytest.mark.parametrize("constraint", CONSTRAINTS)
def test_every_tie_order_lies_in_the_range(constraint):
    """STTran's sort may put tied triplets in any order: the first-hit rank of every GT relation under 25 random
    tie orders lies between the best and the worst rank sgg-eval gives it, and so does sgg-eval's own; without
    ties the three are one."""
    rng, shuffle = np.random.default_rng(11), random.Random(5)
    moved = 0
    for _ in range(10):
        truth, pred = random_frames(rng, int(rng.integers(1, 5)), True)
        hits = first_hits(truth, ranked_triplets(pred, constraint, 0.5), pred)
        assert np.all(hits.best <= hits.ours) and np.all(hits.ours <= hits.worst)
        for _ in range(25):
            ref = np.array(ag_reference.first_hits(truth, pred, constraint, 0.5, shuffle))
            assert np.all(hits.best <= ref) and np.all(ref <= hits.worst)
            moved += int(np.sum(ref != hits.ours))
    assert moved  # the tie orders did change ranks, so the bounds were tested
    if constraint != "no":  # (no: the matrix's zero entries always tie)
        truth, pred = random_frames(rng, 4, False)
        for d in (pred.attention, pred.spatial, pred.contacting):
            d[:] = rng.uniform(0.01, 1, d.shape)  # no zero and no repeated score: no tie
        hits = first_hits(truth, ranked_triplets(pred, constraint), pred)
        assert np.array_equal(hits.best, hits.ours) and np.array_equal(hits.worst, hits.ours)


def test_a_semi_threshold_is_strict_and_compared_in_float64():
    rng = np.random.default_rng(3)
    truth, pred = random_frames(rng, 3, False)
    pred.spatial[:] = np.float32(0.9)  # 0.89999998 in float64: below STTran's 0.9
    pred.contacting[:] = np.float32(0.9)
    triplets = ranked_triplets(pred, "semi", 0.9)
    assert not np.any(triplets.predicate > 3)
    assert len(ranked_triplets(pred, "semi", 0.89).predicate) > len(triplets.predicate)
    pred.spatial[:] = pred.contacting[:] = 0.5  # exactly the threshold: out
    assert not np.any(ranked_triplets(pred, "semi", 0.5).predicate > 3)


def test_a_row_of_zeros_predicts_column_0_under_with():
    """argmax over the 26 columns of a spatial row whose 6 scores are 0: column 0, looking_at, object -> person."""
    rng = np.random.default_rng(4)
    truth, pred = random_frames(rng, 1, False)
    pred.spatial[:] = 0.0
    triplets = ranked_triplets(pred, "with")
    spatial_rows = triplets.subject != pred.pairs[0, 0]
    assert spatial_rows.any() and np.all(triplets.predicate[spatial_rows] == 1)
    assert np.all(triplets.score[spatial_rows] == 0)


def _worked_example() -> tuple[FrameTruth, FramePredictions]:
    """docs/action_genome.md, "A worked example": one frame, 7 GT triplets."""
    boxes = np.array([[0, 0, 99, 99], [10, 10, 49, 49], [50, 50, 89, 89]], np.float64)
    # predicates 1..26: looking_at 1, not_looking_at 2, beneath 5, in_front_of 6, holding 15, not_contacting 18,
    # touching 22
    rels = np.array([[0, 1, 1], [1, 0, 6], [0, 1, 15], [0, 1, 22], [0, 2, 2], [2, 0, 5], [0, 2, 18]], np.int32)
    truth = FrameTruth(boxes, np.array([1, 11, 32]), np.array([0, 3]), rels, np.array([0, 7]))
    spatial = np.full((2, 6), 0.1, np.float32)
    spatial[0, 2], spatial[0, 3] = 0.95, 0.92  # in_front_of, behind
    spatial[1] = 0.2
    spatial[1, 1] = 0.6  # beneath
    contacting = np.full((2, 17), 0.05, np.float32)
    contacting[0, 5], contacting[0, 12] = 0.97, 0.85  # holding, touching
    contacting[1] = 0.1
    contacting[1, 8] = 0.93  # not_contacting
    logits = np.array([[2, 0, 0], [0, 1, 0]], np.float32)
    e = np.exp(logits - logits.max(1, keepdims=True))
    pred = FramePredictions(boxes, np.array([1, 11, 32]), np.ones(3, np.float32), np.array([[0, 1], [0, 2]]),
                            np.array([0, 0]), (e / e.sum(1, keepdims=True)).astype(np.float32), spatial,
                            contacting)  # fmt: skip
    return truth, pred


@pytest.mark.parametrize(("constraint", "hits"), [("with", 6), ("semi", 5), ("no", 7)])
def test_the_worked_example_gives_what_sttrans_code_printed(constraint, hits):
    truth, pred = _worked_example()
    got = recalls(first_hits(truth, ranked_triplets(pred, constraint), pred).ours, truth.rels, truth.rel_offsets)
    assert all(got[f"R@{k}"] == hits / 7 for k in (10, 20, 50, 100))


def test_iou_exactly_at_the_threshold_hits():
    gt = np.array([10, 20, 109, 79], np.float64)
    assert sttran_iou(gt, np.array([10, 20, 109, 49.0])) == 0.5
    assert oed_iou(gt, np.array([10, 20, 109, 49.0])) == 2871 / 5841  # no +1: a miss at 0.5
    assert oed_iou(gt, np.array([10, 20, 109, 49.5])) == 0.5
    assert np.isnan(oed_iou(np.zeros(4), np.zeros(4)))  # a zero union: NaN, which meets no threshold
    assert sttran_iou(gt, np.array([10, 20, 109, 48.0])) == 29 / 60
    assert sttran_iou(gt, np.array([200, 200, 300, 300.0])) == 0.0


def test_the_two_mean_recalls_differ_as_documented():
    """A predicate with 2 GT in frame 1 (1 hit) and 1 in frame 2 (1 hit): 2/3 pooled, (1/2 + 1)/2 per frame."""
    rels = np.array([[0, 1, 1], [0, 2, 1], [0, 1, 1]], np.int32)
    first = np.array([0, 100, 0], np.int16)
    got = recalls(first, rels, np.array([0, 2, 3]))
    assert got["mR_pooled@10"] == (2 / (3 + 1e-10)) / 26
    assert got["mR_per_frame@10"] == pytest.approx(0.75 / 26, abs=1e-17)
    assert got["R@10"] == (0.5 + 1.0) / 2


def test_a_triplet_the_no_cut_may_drop_counts_only_at_best():
    """The worked example with touching's score 0: (person, touching, A) is then only among the zero entries,
    which tie at the 100 cut (52 non-zero of 156): sgg-eval's stable cut keeps it, STTran's sort may drop it."""
    truth, pred = _worked_example()
    pred.contacting[0, 12] = 0.0
    hits = first_hits(truth, ranked_triplets(pred, "no"), pred)
    touching = 3  # the GT row (0, 1, 22)
    assert hits.ours[touching] < 100 and hits.best[touching] < 100 and hits.worst[touching] == 100


@pytest.mark.parametrize("constraint", CONSTRAINTS)
def test_sgg_evals_own_family_equals_its_definitions(constraint):
    """beyond_protocol (IMR's ranks among the triplets of one predicate, zR over the training split's triplets,
    wIMR's n_c^tau weights, head/body/tail) against the slow loop written from the definitions; frames with more
    than 100 triplets, so IMR reads past STTran's 100."""
    rng = np.random.default_rng(23)
    before = 0
    for trial in range(6):
        truth, pred = random_frames(rng, int(rng.integers(2, 6)), trial % 2 == 1)
        hits = first_hits(truth, ranked_triplets(pred, constraint, 0.5), pred)
        imr_slow = ag_reference.first_hits_imr(truth, pred, constraint, 0.5)
        assert hits.imr.tolist() == imr_slow
        assert np.all(hits.imr <= hits.ours)  # a triplet's rank in its predicate is at most its rank
        before += int(np.sum(hits.imr < hits.ours))
        frames = len(truth.box_offsets) - 1
        split = AGSplit(
            "test",
            ["v"],
            [str(f) for f in range(frames)],
            np.zeros(frames, np.int32),
            truth.boxes,
            truth.labels,
            truth.box_offsets,
            truth.rels,
            truth.rel_offsets,
            np.full((frames, 2), 500.0),
        )
        keys = _triplet_keys(split)
        train_keys = np.unique(keys[rng.random(len(keys)) < 0.6])  # the rest are zero-shot
        counts = rng.integers(0, 50, 26)
        relations = Relations(truth.rels, truth.rel_offsets)
        _, pooled, per_frame = relations.recalls(hits.ours)
        got = beyond_protocol(hits, relations, split, tuple(f"p{i}" for i in range(26)),
                              TrainingFacts(train_keys, counts), (pooled, per_frame), tau=0.5)["metrics"]  # fmt: skip
        labels = 37  # the keys' radix: object labels 0..36
        train = {(int(k // labels // 27), int(k // labels % 27), int(k % labels)) for k in train_keys}
        want = ag_reference.beyond(hits.ours.tolist(), imr_slow, truth, train, counts, 0.5)
        assert got.keys() == want.keys()
        for key in got:
            if want[key] is None:
                assert got[key] is None, key
            else:
                assert got[key] == pytest.approx(want[key], abs=1e-15), key
    assert before  # IMR's ranks are not R@K's


def test_imr_reads_past_the_100th_triplet():
    """The worked example behind 40 pairs on a stray box scored above every one of its triplets: under with, its
    triplets rank past 100 (R@100 misses them all) but each is still among the first of its predicate."""
    truth, pred = _worked_example()
    rng = np.random.default_rng(2)
    extra = 40
    pred.boxes = np.vstack([pred.boxes, [[200, 200, 260, 260]]])
    pred.labels, pred.scores = np.r_[pred.labels, 5], np.r_[pred.scores, np.float32(1)]
    pred.pairs = np.vstack([pred.pairs, np.tile([0, 3], (extra, 1))])
    pred.pair_frame = np.r_[pred.pair_frame, np.zeros(extra, int)]
    for name, width in (("attention", 3), ("spatial", 6), ("contacting", 17)):
        high = rng.uniform(0.98, 1, (extra, width)).astype(np.float32)
        setattr(pred, name, np.vstack([getattr(pred, name), high]))
    hits = first_hits(truth, ranked_triplets(pred, "with"), pred)
    assert np.all(hits.ours == 100) and np.sum(hits.imr < 100) == 6
    assert hits.imr.tolist() == ag_reference.first_hits_imr(truth, pred, "with")
