"""Simulated model outputs and the paper's findings on the default simulated benchmark (issue 8).

The findings are asserted, so they can fail, with the backbone and method parameters of ``conf/``: every
debiasing method raises mR@K over its baseline; PKO raises mR@K, IMR@K and wIMR@K of the baseline and lowers
its R@K; PKO-only has the lowest R@K of all rows, wIMR below its IMR and the best or second-best IMR@K of all
rows; wIMR > IMR for baselines; the baselines lie within ±25% of the paper's published row on every column;
blind replacement's mR@100 rises with N. CI runs PredCls with one backbone; SGG_EVAL_FULL=1 runs every task
and both backbones.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import FULL

from sgg_eval.boxes.evaluate import run_evaluation
from sgg_eval.boxes.pko import PKOParams, blind_replacement, pko_predictions
from sgg_eval.boxes.sources import open_predictions
from sgg_eval.boxes.splits import build_splits, build_stats
from sgg_eval.data.stats import read_stats
from sgg_eval.data.types import GTImage
from sgg_eval.pipeline.catalogue import SIMULATION_FILE
from sgg_eval.report.agreement import agreement
from sgg_eval.simulate.models import (
    METHODS,
    Backbone,
    MethodParams,
    Priors,
    _objects,
    method_logits,
    simulate_image,
    simulate_models,
    visual_evidence,
)
from sgg_eval.simulate.params import PKO_SOURCE, SIMULATED_METHODS, method_settings
from sgg_eval.simulate.world import SimParams, SimulatedWorld

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

CONF = Path(__file__).resolve().parents[1] / "conf"
SIM = yaml.safe_load((CONF / SIMULATION_FILE).read_text())
TASKS = ("predcls", "sgcls", "sgdet") if FULL else ("predcls",)
BACKBONES = tuple(
    Backbone(name, **SIM["backbones"][name]) for name in (("sim_motifs", "sim_vctree") if FULL else ("sim_motifs",))
)
PAPER_NAME = {"sim_motifs": "Motifs", "sim_vctree": "VCTree"}
DEBIASING = tuple(m for m in METHODS if m != "baseline")
KS = (20, 50, 100)
IMR_KS = (10, 20, 50)
PAPER_COLUMNS = [f"{m}@{k}" for m in ("R", "mR") for k in KS] + [f"{m}@{k}" for m in ("IMR", "wIMR") for k in IMR_KS]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("simbench")
    build_splits(
        SimulatedWorld(SimParams(**SIM["world"])),  # the pipeline's world: conf/simulation/default.yaml's
        {"train": root / "train.h5", "val": root / "val.h5", "test": root / "test.h5"},
    )
    build_stats(root / "train.h5", root / "test.h5", root / "stats.h5")
    stats = read_stats(root / "stats.h5")
    results = {}
    for bb in BACKBONES:
        for task in TASKS:
            outs = {m: root / f"{bb.name}_{m}_{task}.h5" for m in SIMULATED_METHODS}
            simulate_models(
                root / "test.h5",
                stats,
                bb,
                task,
                outs,
                val_path=root / "val.h5",
                methods=method_settings(SIM, bb.name, task),
            )
            base = open_predictions(str(outs["baseline"]), gt=str(root / "test.h5"))
            # PKO-only reads the pairs of its source (conf/pko: pko_only_from), which is no row of the tables
            source = open_predictions(str(outs.pop(PKO_SOURCE)), gt=str(root / "test.h5"))
            outs["pko"] = root / f"{bb.name}_pko_{task}.h5"
            outs["pko_only"] = root / f"{bb.name}_pkoonly_{task}.h5"
            pko_predictions(base, task, stats, outs["pko"], PKOParams())
            pko_predictions(source, task, stats, outs["pko_only"], PKOParams(), only=True)
            for m, path in outs.items():
                results[bb.name, task, m] = run_evaluation(
                    str(path), task, gt=str(root / "test.h5"), stats=str(root / "stats.h5")
                )["metrics"]
    return root, stats, results


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_debiasing_methods_trade_recall_for_mean_recall(bench, task):
    _, _, res = bench
    for bb in BACKBONES:
        base = res[bb.name, task, "baseline"]
        for m in DEBIASING:
            for k in KS:
                assert res[bb.name, task, m][f"mR@{k}"] > base[f"mR@{k}"], (bb.name, task, m, k)
                assert res[bb.name, task, m][f"R@{k}"] < base[f"R@{k}"], (bb.name, task, m, k)


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_pko_raises_mr_imr_wimr_and_lowers_recall(bench, task):
    _, _, res = bench
    for bb in BACKBONES:
        base, pko = res[bb.name, task, "baseline"], res[bb.name, task, "pko"]
        for k in KS:
            assert pko[f"mR@{k}"] > base[f"mR@{k}"]
            assert pko[f"R@{k}"] < base[f"R@{k}"], (bb.name, task, k)
        for k in IMR_KS:
            assert pko[f"IMR@{k}"] > base[f"IMR@{k}"] and pko[f"wIMR@{k}"] > base[f"wIMR@{k}"]


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_pko_only_has_the_lowest_recall_and_wimr_below_imr(bench, task):
    _, _, res = bench
    for bb in BACKBONES:
        only = res[bb.name, task, "pko_only"]
        others = [res[bb.name, task, m] for m in (*METHODS, "pko")]
        for k in KS:
            assert only[f"R@{k}"] < min(o[f"R@{k}"] for o in others), (bb.name, task, k)
            assert only[f"mR@{k}"] > res[bb.name, task, "baseline"][f"mR@{k}"]
        for k in IMR_KS:
            assert only[f"wIMR@{k}"] < only[f"IMR@{k}"]
            assert only[f"IMR@{k}"] > res[bb.name, task, "baseline"][f"IMR@{k}"]


# SGCls fails this finding under SGG_EVAL_FULL=1 since the methods were fitted to the paper (checked at e14115b): the
# paper's PKO-only is second by IMR@10 (20.5), the simulated one is 20% under it (16.4) and eighth. Its IMR is the
# world's anchor law (docs/decisions.md, "Why issue 70 stays open"; the blur of its source, fitted to its mR, leaves
# IMR where it was); strict, so a fix is seen.
_PKO_ONLY_IMR_OFF = pytest.mark.xfail(strict=True, reason="PKO-only's SGCls IMR@10 is 20% under the paper's (issue 70)")


@pytest.mark.slow
@pytest.mark.parametrize("task", [pytest.param(t, marks=_PKO_ONLY_IMR_OFF) if t == "sgcls" else t for t in TASKS])
def test_pko_only_imr_is_best_or_second_best(bench, task):
    _, _, res = bench
    rows = [v for (bb, t, m), v in res.items() if t == task and not (m == "pko_only" and bb != "sim_motifs")]
    only = res["sim_motifs", task, "pko_only"]
    for k in IMR_KS:
        above = sum(r[f"IMR@{k}"] > only[f"IMR@{k}"] for r in rows)
        assert above <= 1, (task, k, above)


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_wimr_above_imr_for_baselines(bench, task):
    _, _, res = bench
    for bb in BACKBONES:
        for k in IMR_KS:
            base = res[bb.name, task, "baseline"]
            assert base[f"wIMR@{k}"] > base[f"IMR@{k}"]


def _published() -> dict:
    text = resources.files("sgg_eval.data").joinpath("resources/published/li2022_tables.csv").read_text("utf-8")
    rows = csv.DictReader(ln for ln in text.splitlines() if ln and not ln.startswith("#"))
    return {(r["task"], r["backbone"], r["method"]): r for r in rows}


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_baselines_within_25_percent_of_the_paper(bench, task):
    _, _, res = bench
    pub = _published()
    for bb in BACKBONES:
        ours, paper = res[bb.name, task, "baseline"], pub[task, PAPER_NAME[bb.name], "Baseline"]
        for col in PAPER_COLUMNS:
            rel = 100 * ours[col] / float(paper[col]) - 1
            assert abs(rel) <= 0.25, (bb.name, task, col, 100 * ours[col], paper[col])


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_the_fitted_methods_sit_near_the_paper(bench, task):
    """Issue 70's fit (conf/simulation/default.yaml, `fitted`): of each backbone's 60 method cells (five debiasing
    methods × 12 columns), at least 45 within ±20% of the paper (the fit left 52 to 59 per backbone and task; the
    unfitted settings left 24 to 41)."""
    _, _, res = bench
    pub = _published()
    for bb in BACKBONES:
        # the paper's name of each model: what its file in conf/model declares
        label = {m: yaml.safe_load((CONF / "model" / f"{bb.name}_{m}.yaml").read_text())["method"] for m in DEBIASING}
        cells = [(col, float(pub[task, PAPER_NAME[bb.name], label[m]][col]), 100 * res[bb.name, task, m][col])
                 for m in DEBIASING for col in PAPER_COLUMNS]  # fmt: skip
        within, _ = agreement(cells)  # the caption's count: |ours - published| <= 20% of published
        assert len(cells) == 60 and within >= 45, (bb.name, task, within)


@pytest.mark.slow
def test_blind_replacement_raises_mean_recall_with_n(bench):
    root, stats, _ = bench
    source = open_predictions(str(root / "sim_motifs_baseline_predcls.h5"), gt=str(root / "test.h5"))
    rows, warnings = blind_replacement(source, stats, "predcls", max_n=6 if FULL else 3)
    assert warnings == []  # the simulated outputs carry the GT boxes
    values = [r["mR@100"] for r in rows]
    assert values[-1] > values[0]
    assert np.corrcoef(np.arange(len(values)), values)[0, 1] > 0.8  # rises overall
    assert rows[1]["predicate"] == "flying in" and rows[1]["num_type_pairs"] == 2


def test_simulated_outputs_are_deterministic(tmp_path):
    build_splits(
        SimulatedWorld(SimParams(scale="tiny")),
        {"train": tmp_path / "train.h5", "test": tmp_path / "test.h5"},
    )
    build_stats(tmp_path / "train.h5", tmp_path / "test.h5", tmp_path / "stats.h5")
    stats = read_stats(tmp_path / "stats.h5")
    build_splits(SimulatedWorld(SimParams(scale="tiny")), {"val": tmp_path / "val.h5"})
    for run in ("a", "b"):
        simulate_models(
            tmp_path / "test.h5",
            stats,
            Backbone("sim_motifs"),
            "sgdet",
            {m: tmp_path / f"{run}_{m}.h5" for m in METHODS},
            val_path=tmp_path / "val.h5",
        )
    for m in METHODS:
        assert (tmp_path / f"a_{m}.h5").read_bytes() == (tmp_path / f"b_{m}.h5").read_bytes()
    from sgg_eval.data.store import PredictionStore

    with PredictionStore(tmp_path / "a_baseline.h5") as s:
        assert s.meta.simulated and "SIMULATED" in s.meta.source and s.meta.score_kind == "logits"
        img = next(iter(s))
        z = img.rel_scores.astype(np.float64)
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        triple = p[:, 1:].max(1) * img.obj_scores[img.pairs[:, 0]] * img.obj_scores[img.pairs[:, 1]]
        assert np.all(np.diff(triple) <= 1e-3)  # stored sorted by the GC triplet score (float16 rounding aside)


# --- the simulated evidence itself (fast): each knob does what its docstring says --------------------------


def _tiny_priors(log_prior):
    """Priors for 4 object classes and 3 predicates with no frequency bias and no confusable predicates
    except 1 <-> 2, so the visual evidence can be read off the logits."""
    c_obj, c_pred = 4, len(log_prior)
    confusable = np.zeros((c_pred + 1, c_pred + 1), dtype=bool)
    confusable[1, 2] = confusable[2, 1] = True
    flat = np.zeros((c_obj + 1, c_obj + 1, c_pred + 1))
    return Priors(
        freq=flat,
        freq_nice=flat,
        log_prior=np.asarray(log_prior, dtype=np.float64),
        log_prior_nice=np.asarray(log_prior, dtype=np.float64),
        log_effective=np.zeros(c_pred),
        confusable=confusable,
        object_share=np.array([0.0, 0.25, 0.25, 0.25, 0.25]),
    )


def _tiny_image():
    boxes = np.array([[0, 0, 10, 10], [5, 5, 20, 20], [30, 30, 40, 40], [35, 35, 50, 50]], dtype=np.float32)
    return GTImage(1, 64, 64, boxes, np.array([1, 2, 3, 4]), np.array([[0, 1, 1], [2, 3, 3]]))


QUIET = dict(noise=0.0, pair_confidence=0.0, feature_bias=0.0, background_shift=0.0, unannotated=0.0)


def test_rare_predicates_get_faded_evidence():
    log_prior = np.log([0.9, 0.09, 0.01])
    bb = Backbone("t", strength=4.0, confusion=2.0, clarity_spread=0.0, evidence_frequency_slope=0.5, **QUIET)
    ev = visual_evidence(np.random.default_rng(0), _tiny_image(), "predcls", bb, _tiny_priors(log_prior))
    row = {tuple(p): i for i, p in enumerate(ev.pairs.tolist())}
    head, tail = ev.visual[row[0, 1]], ev.visual[row[2, 3]]
    # predicate 1 is the most frequent: full strength; its confusable predicate 2 gets confusion, faded by
    # (0.09 / 0.9)^0.5; the tail predicate 3 gets strength faded by (0.01 / 0.9)^0.5
    assert head[1] == pytest.approx(4.0) and head[2] == pytest.approx(2.0 * 0.1**0.5) and head[3] == 0
    assert tail[3] == pytest.approx(4.0 * (0.01 / 0.9) ** 0.5) and tail[1] == tail[2] == 0
    assert np.all(ev.visual[[i for p, i in row.items() if p not in ((0, 1), (2, 3))]] == 0)


def test_clarity_scales_a_pairs_true_and_confusable_evidence_together():
    bb = Backbone("t", strength=4.0, confusion=2.0, clarity_spread=0.8, evidence_frequency_slope=0.0, **QUIET)
    factors, rng = [], np.random.default_rng(12345)
    for _ in range(1000):
        ev = visual_evidence(rng, _tiny_image(), "predcls", bb, _tiny_priors(np.log([0.5, 0.3, 0.2])))
        head = ev.visual[[tuple(p) for p in ev.pairs.tolist()].index((0, 1))]
        assert head[2] / head[1] == pytest.approx(0.5)
        factors.append(head[1] / 4.0)
    # exp(σZ − σ²/2): log-factors have spread σ and mean −σ²/2, so the factor's mean is 1 and ``strength``
    # keeps its meaning (bounds: 3 standard errors of 1,000 draws)
    assert np.std(np.log(factors)) == pytest.approx(0.8, abs=0.06)
    assert np.mean(np.log(factors)) == pytest.approx(-0.32, abs=0.08)


def test_discrimination_removes_that_share_of_the_confusable_evidence():
    """``discrimination`` d: a debiasing method's logits lose d × the evidence a pair's confusable (not true)
    predicates got, and nothing else (the true predicate's, the background column); the baseline has the
    baseline's features, d = 0 leaves every method as it was, and d = 1 leaves no confusable evidence."""
    log_prior = np.log([0.5, 0.3, 0.2])
    bb = Backbone("t", strength=4.0, confusion=3.0, clarity_spread=0.0, evidence_frequency_slope=0.0, **QUIET)
    priors = _tiny_priors(log_prior)
    ev = visual_evidence(np.random.default_rng(0), _tiny_image(), "predcls", bb, priors)
    row = {tuple(p): i for i, p in enumerate(ev.pairs.tolist())}
    # pair (0, 1) is related by predicate 1, whose confusable predicate 2 got ``confusion``; nothing else did
    assert ev.confusing[row[0, 1]].tolist() == [0.0, 0.0, 3.0, 0.0] and ev.visual[row[0, 1], 2] == 3.0
    assert np.count_nonzero(ev.confusing) == 1
    for method in ("reweight", "tde", "dlfe", "rtpb_cb", "nice"):
        priors_m = replace(priors, log_dlfe=log_prior)
        plain = method_logits(method, ev, priors_m, bb, MethodParams())
        for d in (0.0, 0.4, 1.0):
            z = method_logits(method, ev, priors_m, bb, MethodParams(discrimination=d))
            np.testing.assert_allclose(z, plain - d * ev.confusing)
        assert method_logits(method, ev, priors_m, bb, MethodParams(discrimination=1.0))[row[0, 1], 2] == pytest.approx(
            plain[row[0, 1], 2] - 3.0
        )
    base = method_logits("baseline", ev, priors, bb, MethodParams(discrimination=0.7))
    assert np.array_equal(base, method_logits("baseline", ev, priors, bb, MethodParams()))


def test_detection_score_floor_spreads_the_scores_of_right_detections_in_sgdet_only():
    """SGDet: a correctly labelled detection scores U(detection_score_floor, 1), a wrong one U(0.05, 0.6) as before;
    SGCls (GT boxes, a classifier's labels) keeps U(0.5, 1) whatever the floor. Read on 3,000 draws of four objects,
    every one detected, nearly every one labelled right (label_accuracy near 1, no frequency slope)."""
    share = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0])  # a wrong label is class 5, which no object has
    gt = _tiny_image()

    def scores(task: str, floor: float) -> tuple[np.ndarray, np.ndarray]:
        bb = Backbone("t", detection_score_floor=floor, detection_rate=1.0, false_detections=0.0,
                      label_accuracy=0.999, label_frequency_slope=0.0)  # fmt: skip
        rng, right, wrong = np.random.default_rng(7), [], []
        for _ in range(3000):
            _, labels, s, source = _objects(rng, gt, task, bb, share)
            ok = labels == gt.labels[source]
            right.append(s[ok])
            wrong.append(s[~ok])
        return np.concatenate(right), np.concatenate(wrong)

    right, wrong = scores("sgdet", 0.1)
    assert right.min() >= 0.1 and right.min() < 0.101 and right.max() < 1.0
    assert right.mean() == pytest.approx(0.55, abs=0.01) and np.all((wrong >= 0.05) & (wrong < 0.6))
    right, _ = scores("sgdet", 0.5)
    assert right.min() >= 0.5 and right.mean() == pytest.approx(0.75, abs=0.01)
    for floor in (0.1, 0.9):
        right, _ = scores("sgcls", floor)
        assert right.min() >= 0.5 and right.mean() == pytest.approx(0.75, abs=0.01)


def test_logit_scale_scales_the_saved_logits_and_changes_no_prediction():
    priors = _tiny_priors(np.log([0.5, 0.3, 0.2]))
    out = {}
    for scale in (1.0, 0.5):
        bb = Backbone("t", logit_scale=scale)
        img = simulate_image(np.random.default_rng(3), _tiny_image(), "predcls", bb, priors, "baseline")
        out[scale] = {tuple(p): z for p, z in zip(img.pairs.tolist(), img.rel_scores.astype(np.float64))}
    assert out[1.0].keys() == out[0.5].keys()
    for pair, z in out[1.0].items():
        np.testing.assert_allclose(out[0.5][pair], 0.5 * z, rtol=1e-6, atol=1e-6)
        assert np.argmax(out[0.5][pair]) == np.argmax(z)


def test_nice_learns_its_feature_bias_from_the_corrected_labels():
    """NICE trains on relabelled samples: beside its frequency bias, the features' head bias follows the
    corrected predicate prior, so nice − baseline = feature_bias · (log π' − log π) on every predicate column
    when both frequency biases are equal (flat here), and the background column is untouched."""
    log_prior, log_nice = np.log([0.7, 0.2, 0.1]), np.log([0.4, 0.35, 0.25])
    priors = replace(_tiny_priors(log_prior), log_prior_nice=log_nice)
    bb = Backbone("t", feature_bias=0.6)
    ev = visual_evidence(np.random.default_rng(0), _tiny_image(), "predcls", bb, priors)
    base = method_logits("baseline", ev, priors, bb, MethodParams())
    nice = method_logits("nice", ev, priors, bb, MethodParams())
    assert np.allclose(nice[:, 1:] - base[:, 1:], 0.6 * (log_nice - log_prior)[None, :])
    assert np.array_equal(nice[:, 0], base[:, 0])


def test_ranking_noise_moves_pairs_not_their_predicates():
    """``ranking_noise`` adds one N(0, σ) offset per pair to the predicate columns (before ``logit_scale``): each
    pair keeps its predicted predicate and the differences between its predicate logits, the background column is
    untouched, the offsets have spread σ, and with σ = 0 no draw is made (the output is the noiseless one)."""
    priors, bb = _tiny_priors(np.log([0.5, 0.3, 0.2])), Backbone("t", logit_scale=0.5)

    def logits(sigma: float, noise_rng) -> dict:
        img = simulate_image(np.random.default_rng(3), _tiny_image(), "predcls", bb, priors, "reweight",
                             MethodParams(ranking_noise=sigma), noise_rng)  # fmt: skip
        return {tuple(p): z for p, z in zip(img.pairs.tolist(), img.rel_scores.astype(np.float64))}

    quiet = logits(0.0, None)  # no stream needed: nothing is drawn
    offsets = []
    for seed in range(300):
        noisy = logits(2.0, np.random.default_rng(seed))
        assert noisy.keys() == quiet.keys()
        for pair, z in noisy.items():
            shift = z[1:] - quiet[pair][1:]
            np.testing.assert_allclose(shift, shift[0], atol=2e-3)  # float32 logits
            assert z[0] == quiet[pair][0] and np.argmax(z[1:]) == np.argmax(quiet[pair][1:])
            offsets.append(shift[0] / 0.5)
    assert np.std(offsets) == pytest.approx(2.0, rel=0.05)


def test_pko_source_is_the_baseline_with_its_background_column_blurred():
    """``pko_source`` (PKO-only's pairs, no row of the tables): the baseline's predicate columns exactly, and one
    N(0, σ) offset per pair taken off its background column (before ``logit_scale``), so its pairs are ranked with
    less of the baseline's relatedness; at σ = 0 nothing is drawn and it is the baseline's output."""
    priors, bb = _tiny_priors(np.log([0.5, 0.3, 0.2])), Backbone("t", logit_scale=0.5)

    def logits(method: str, sigma: float, noise_rng) -> dict:
        img = simulate_image(np.random.default_rng(3), _tiny_image(), "predcls", bb, priors, method,
                             MethodParams(ranking_noise=sigma), noise_rng)  # fmt: skip
        return {tuple(p): z for p, z in zip(img.pairs.tolist(), img.rel_scores.astype(np.float64))}

    base = logits("baseline", 0.0, None)
    assert logits(PKO_SOURCE, 0.0, None) == {p: pytest.approx(z) for p, z in base.items()}
    offsets = []
    for seed in range(300):
        blurred = logits(PKO_SOURCE, 2.0, np.random.default_rng(seed))
        assert blurred.keys() == base.keys()
        for pair, z in blurred.items():
            np.testing.assert_array_equal(z[1:], base[pair][1:])
            offsets.append((base[pair][0] - z[0]) / 0.5)
    assert np.std(offsets) == pytest.approx(2.0, rel=0.05) and abs(np.mean(offsets)) < 0.1


def test_fitted_settings_override_the_defaults_of_one_backbone_task_and_method():
    sim = {"methods": {"reweight_alpha": 0.7, "tde_alpha": 0.7},
           "fitted": {"sim_motifs": {"sgcls": {"tde": {"tde_alpha": 1.5, "ranking_noise": 0.4}}}}}  # fmt: skip
    fitted = method_settings(sim, "sim_motifs", "sgcls")
    assert set(fitted) == set(SIMULATED_METHODS)
    assert fitted["tde"] == MethodParams(reweight_alpha=0.7, tde_alpha=1.5, ranking_noise=0.4)
    assert fitted["reweight"] == MethodParams(reweight_alpha=0.7, tde_alpha=0.7)
    for backbone, task in (("sim_motifs", "predcls"), ("sim_vctree", "sgcls")):
        assert set(method_settings(sim, backbone, task).values()) == {MethodParams(reweight_alpha=0.7, tde_alpha=0.7)}


# --- issue 70's acceptance on the bench (SGG_EVAL_FULL=1: every task and backbone, the pipeline's 528 cells) --------


def _paper_table(res: dict):
    """The caption's table (``report.published.published_vs_reproduced``) of the bench's results: every model as its
    file in conf/model names it, each baseline's PKO row, and PKO-only on Motifs' ``pko_source`` (``conf/pko``)."""
    from sgg_eval.report.published import published_vs_reproduced

    results, entries = {}, []
    for (bb, task, m), metrics in res.items():
        if m == "pko_only" and bb != "sim_motifs":
            continue
        if m == "pko_only":
            entry, info = "pko_only", {"backbone": "-", "method": "PKO-only"}
        elif m == "pko":
            entry, info = f"{bb}_baseline_pko", {"backbone": PAPER_NAME[bb], "method": "PKO"}
        else:
            model = yaml.safe_load((CONF / "model" / f"{bb}_{m}.yaml").read_text())
            entry, info = f"{bb}_{m}", {"backbone": model["backbone"], "method": model["method"]}
        results[entry, task] = {"entry": info, "metrics": metrics}
        entries.append(entry)
    return published_vs_reproduced(results, sorted(set(entries)), simulated=True, tau=0.5)


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="the 528 cells need every task and backbone (SGG_EVAL_FULL=1)")
def test_issue_70_agreement_bars(bench):
    """Issue 70's acceptance, on the caption's own computation: at least 475 of the 528 cells within ±20% of Li et
    al.'s, no metric family's mean |relative difference| above 15%, at least 410 of the 420 method-versus-baseline
    directions agreeing, and the paper's order of the rows on R@50 and mR@50 in every (task, backbone) table, with
    and without the PKO-only row put in each. The bench is the pipeline's default run (seed 0, default scale), so
    these are its figures."""
    from sgg_eval.report.published import agreement_figures, broken_orders, order_figures

    table = _paper_table(bench[2])
    within, cells, means, agree, total = agreement_figures(table.rows)
    assert cells == 528 and within >= 475, within
    assert max(means.values()) <= 0.15, means
    assert total == 420 and agree >= 410, agree
    assert broken_orders(table.rows) == [] and broken_orders(table.rows, with_shared=True) == []
    assert order_figures(table.rows) == (12, 12, 12)
