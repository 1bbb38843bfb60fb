"""Every metric of the engine against the loop-based reference (tests/reference_metrics.py), on randomised
inputs for all three tasks with the documented edge cases: duplicate GT rows, two predicates on one pair, IoU
exactly 0.5 and just below, same-label objects, score ties, images with no predicted pair or no GT."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import FULL, random_case, small_vocab
from reference_metrics import reference_evaluate

from sgg_eval.data.stats import compute_stats
from sgg_eval.metrics.engine import evaluate
from sgg_eval.metrics.options import EvalOptions

VOCAB = small_vocab(6, 5)
N_IMAGES = 400 if FULL else 80


def _cases(task, seed, ties=True):
    rng = np.random.default_rng(seed)
    return [random_case(rng, VOCAB, task, i, ties=ties) for i in range(N_IMAGES)]


# the means over images, which the loop computes as ours is defined (exact sum, rounded once, divided): equal
# to the bit; the rest (means over predicates, weighted means) are summed in another order, to 1e-12
BITWISE = re.compile(r"(R|ngR|zR|ng-zR|PR)@\d+|R@\d+x|InstR")


def _compare(ours, ref):
    exact = 0
    for name, expected in ref.items():
        got = ours["metrics"][name]
        if expected is None:
            assert got is None, name
        else:
            assert got is not None, name
            assert abs(got - expected) <= 1e-12, (name, got, expected)
            if BITWISE.fullmatch(name):
                assert got == expected, (name, got.hex(), expected.hex())
                exact += 1
    assert exact >= 10


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
@pytest.mark.parametrize("protocol", ["reference", "strict"])
@pytest.mark.parametrize("seed", [1, 2])
def test_engine_matches_loop_reference(task, protocol, seed):
    cases = _cases(task, seed)
    stats = compute_stats([g for g, _ in cases[: N_IMAGES // 2]], VOCAB, [g for g, _ in cases])
    zs = stats.zeroshot_triplets
    opts = EvalOptions(task=task, protocol=protocol, tau=0.5)
    ours = evaluate(
        iter(cases),
        VOCAB,
        opts,
        triplet_counts=stats.triplet_counts,
        num_pairs=stats.num_pairs,
        zeroshot=zs,
        zeroshot_source="computed",
    )
    ref, evaluated = reference_evaluate(
        cases,
        VOCAB.num_predicates,
        task,
        protocol=protocol,
        tau=0.5,
        zeroshot=zs,
        triplet_counts=stats.triplet_counts,
        num_pairs=stats.num_pairs,
    )
    assert ours["counts"]["images_evaluated"] == evaluated
    c = ours["counts"]
    assert c["images_input"] == c["images_evaluated"] + c["images_skipped_no_gt"] + c["images_skipped_no_pred"]
    if protocol == "reference":
        assert c["images_skipped_no_pred"] > 0  # the edge case is exercised
    else:
        assert c["images_skipped_no_pred"] == 0
    _compare(ours, ref)


@pytest.mark.parametrize("task", ["predcls", "sgdet"])
def test_stored_order_and_logits(task):
    cases = _cases(task, 7, ties=False)
    for gt, pred in cases:  # turn probabilities into logits: the engine must softmax them back
        pred.rel_scores = np.log(pred.rel_scores.astype(np.float64)) + 3.0
    ours = evaluate(iter(cases), VOCAB, EvalOptions(task=task, order="stored", score_kind="logits"))
    ref, _ = reference_evaluate(cases, VOCAB.num_predicates, task, order="stored", score_kind="logits")
    ref = {k: v for k, v in ref.items() if not k.startswith(("zR", "ng-zR", "wR_tr", "wIMR", "ng-wIMR"))}
    for name, expected in ref.items():
        got = ours["metrics"][name]
        if expected is None:
            assert got is None, name
        else:
            assert abs(got - expected) <= 1e-9, (name, got, expected)


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
def test_imr_variants_on_crowded_images(task):
    """Two predicates and up to 14 objects (up to 182 pairs): far more than K = 10/20/50 triplets are predicted
    as each predicate, so IMR's per-predicate top K and ng-IMR's all-pairs top K both truncate."""
    vocab = small_vocab(4, 2)
    rng = np.random.default_rng(11)
    cases = [random_case(rng, vocab, task, i, max_objects=14) for i in range(30 if not FULL else 120)]
    stats = compute_stats([g for g, _ in cases], vocab)
    ours = evaluate(iter(cases), vocab, EvalOptions(task=task, tau=0.5), num_pairs=stats.num_pairs)
    ref, _ = reference_evaluate(cases, vocab.num_predicates, task, tau=0.5, num_pairs=stats.num_pairs)
    for name in [f"{p}{m}@{k}" for p in ("", "ng-") for m in ("IMR", "wIMR") for k in (10, 20, 50)]:
        assert abs(ours["metrics"][name] - ref[name]) <= 1e-12, (name, ours["metrics"][name], ref[name])
    # the cut-offs bind: K changes the value, and the two variants differ
    assert ours["metrics"]["IMR@10"] < ours["metrics"]["IMR@50"]
    assert ours["metrics"]["IMR@10"] != ours["metrics"]["ng-IMR@10"]


def test_tau_zero_equals_imr_exactly():
    cases = _cases("predcls", 3)
    stats = compute_stats([g for g, _ in cases], VOCAB)
    res = evaluate(iter(cases), VOCAB, EvalOptions(task="predcls", tau=0.0), num_pairs=stats.num_pairs)
    for k in (10, 20, 50):
        assert res["metrics"][f"wIMR@{k}"] == res["metrics"][f"IMR@{k}"]
        assert res["metrics"][f"ng-wIMR@{k}"] == res["metrics"][f"ng-IMR@{k}"]


def test_missing_statistics_give_null_with_reason():
    res = evaluate(iter(_cases("sgcls", 4)), VOCAB, EvalOptions(task="sgcls"))
    assert res["metrics"]["wIMR@20"] is None and res["metrics"]["wR_tr@5"] is None and res["metrics"]["zR@20"] is None
    assert any("wIMR needs" in n for n in res["notes"]) and any("zero-shot" in n for n in res["notes"])
    assert res["metrics"]["InstR"] is None and res["metrics"]["R@20"] is not None


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
def test_f1_is_the_harmonic_mean_of_the_same_runs_r_and_mr(task):
    """Issue 12: F1@K = 2·R·mR / (R + mR) of the same JSON (ng-F1 from ngR and ng-mR), 0 when both are 0."""
    m = evaluate(iter(_cases(task, 3)), VOCAB, EvalOptions(task=task))["metrics"]
    for k in (20, 50, 100):
        for f1, r, mr in ((f"F1@{k}", f"R@{k}", f"mR@{k}"), (f"ng-F1@{k}", f"ngR@{k}", f"ng-mR@{k}")):
            assert m[r] > 0 and m[f1] == pytest.approx(2 * m[r] * m[mr] / (m[r] + m[mr]), rel=1e-15)
    none = evaluate(iter([]), VOCAB, EvalOptions(task=task))["metrics"]
    assert none["F1@50"] is None and none["ng-F1@50"] is None  # no image evaluated: null with a reason
    from sgg_eval.metrics.reduce import f1_score

    assert f1_score(0.0, 0.0) == 0.0 and f1_score(0.5, 0.0) == 0.0 and f1_score(0.3, 0.3) == pytest.approx(0.3)


@pytest.mark.parametrize("task", ["sgdet", "sgcls"])
@pytest.mark.parametrize("iou_threshold", [0.3, 0.7, 1.0])
def test_iou_threshold_is_the_matchers(task, iou_threshold):
    """The engine's matcher, its InstR and every recall use ``iou_threshold``, as the loop reference does; on
    SGDet it moves the numbers (the fixtures hold boxes at IoU exactly 0.5 and just below), on SGCls (GT
    boxes) it cannot."""
    cases = _cases(task, 11)
    ours = evaluate(iter(cases), VOCAB, EvalOptions(task=task, iou_threshold=iou_threshold))
    ref, _ = reference_evaluate(cases, VOCAB.num_predicates, task, iou_threshold=iou_threshold)
    _compare(ours, ref)
    at_half = evaluate(iter(cases), VOCAB, EvalOptions(task=task))["metrics"]
    moved = [k for k, v in ours["metrics"].items() if v != at_half[k]]
    if task == "sgdet":
        assert {"R@50", "InstR"} <= set(moved), moved
        assert not [k for k in moved if k.startswith("det_mAP")]  # COCO's thresholds, not this one
    else:
        assert moved == []
    assert ours["iou_threshold"] == iou_threshold


def test_every_option_is_read():
    """Each field of EvalOptions changes the document when changed: a field nothing reads must not exist.
    A new field fails here until it is given an alternative value below."""
    from dataclasses import fields, replace

    from sgg_eval.metrics.informative import Informative
    from sgg_eval.metrics.openvocab import OpenVocab

    cases = _cases("sgdet", 12)
    for gt, pred in cases[::3]:
        pred.pairs = pred.pairs[:0]  # images without predicted pairs: the protocols differ on them
        pred.rel_scores = pred.rel_scores[:0]
    for gt, _ in cases:
        gt.boxes[:, 2] += gt.width / 4  # past the border: clip_gt clips them
    base = EvalOptions(task="sgdet", score_kind="probabilities")
    novel = tuple(range(1, VOCAB.num_objects + 1, 2))
    alternatives = {
        "task": "sgcls",
        "protocol": "strict",
        "order": "stored",
        "score_kind": "logits",
        "tau": 0.0,
        "ng_limit": 3,
        "iou_threshold": 0.7,
        "openvocab": {"protocol": "vs3", "openvocab": OpenVocab("vs3", "ovd", novel, (), "odd", "test")},
        "clip_gt": True,
        "longtail": tuple(i % 3 for i in range(VOCAB.num_predicates)),
        "informative": Informative(
            {str(g.image_id): ["a b c"] for g, _ in cases}, "exact", VOCAB.object_classes, VOCAB.predicate_classes
        ),  # fmt: skip
        "box_iou": "sgg_benchmark",
    }
    assert {f.name for f in fields(EvalOptions)} == set(alternatives) | {"per_image", "per_image_ids"}
    stats = compute_stats([g for g, _ in cases], VOCAB, [g for g, _ in cases])

    def run(opts):
        return evaluate(iter(cases), VOCAB, opts, triplet_counts=stats.triplet_counts, num_pairs=stats.num_pairs)[
            "metrics"
        ]

    reference = run(base)
    for name, value in alternatives.items():
        changed = run(replace(base, **(value if isinstance(value, dict) else {name: value})))
        assert changed != reference, name
    records = []  # per_image changes no number: it hands the images' graphs out
    evaluate(iter(cases), VOCAB, replace(base, per_image=5), on_records=records.extend)
    assert len(records) == sum(1 for g, p in cases if len(g.rels) and len(p.pairs))
    assert all(len(r["predicted"]) <= 5 for r in records) and any(len(r["predicted"]) == 5 for r in records)
    ids = frozenset(r["image"] for r in records[::2])
    some = []
    evaluate(iter(cases), VOCAB, replace(base, per_image=5, per_image_ids=ids), on_records=some.extend)
    assert some == records[::2]
