"""Settings of the simulated models (backbones and methods): plain dataclasses, so that the configuration
schema can check them without importing the simulator. What each field does: ``simulate.models``."""

from __future__ import annotations

from dataclasses import dataclass

METHODS = ("baseline", "reweight", "tde", "dlfe", "rtpb_cb", "nice")
# Not a row of the paper: the pairs and objects its PKO-only row is read from (`pko.pko_only_from`). The paper's
# PKO-only "only utilizes the statistical prior"; its recall nearly doubles from K = 20 to 100 where a prior put on
# the baseline's relatedness stays flat, so it ranked its pairs with less of a relation model's confidence than
# the baseline's: the baseline's output, its background column blurred by ``ranking_noise`` (docs/decisions.md).
PKO_SOURCE = "pko_source"
SIMULATED_METHODS = (*METHODS, PKO_SOURCE)


@dataclass(frozen=True)
class Backbone:
    """Visual-evidence strength of a simulated backbone; object-recognition quality for SGCls/SGDet."""

    name: str
    strength: float = 4.33
    confusion: float = 4.33
    noise: float = 1.25
    background_shift: float = 1.25
    feature_bias: float = 0.5
    pair_confidence: float = 1.5
    # Rare predicates are learnt from few samples, so a model sees them less clearly: the true and
    # confusable evidence of predicate c is scaled by (π_c / max π)^evidence_frequency_slope.
    evidence_frequency_slope: float = 0.071
    # Pairs show their relation more or less clearly (occlusion, size, viewpoint): a pair's true and
    # confusable evidence is multiplied by exp(σ·N(0, 1) − σ²/2), σ = clarity_spread (mean 1).
    clarity_spread: float = 0.65
    # Scale of the saved logits. A network's logits are not log-probabilities, so a prior added to them
    # (PKO) moves them more or less; the scale changes no prediction of the model itself.
    logit_scale: float = 0.84
    label_accuracy: float = 0.79
    # Detectors recognise frequent classes better: logit(accuracy of class c) = logit(label_accuracy)
    # + label_frequency_slope · (log f_c − E[log f]), and a wrong label is drawn by class frequency.
    label_frequency_slope: float = 1.5
    detection_rate: float = 0.97
    box_jitter: float = 0.08
    false_detections: float = 6.0
    # SGDet: a detector is not equally sure of every right detection; a correctly labelled one scores
    # U(detection_score_floor, 1), a wrong one U(0.05, 0.6). A lower floor ranks some true pairs lower (the triplet
    # score is the product of both objects' scores), so R@20 falls further below R@100, as in the paper's SGDet rows.
    detection_score_floor: float = 0.5
    unannotated: float = 1.2


@dataclass(frozen=True)
class MethodParams:
    """How strongly each simulated debiasing method acts (see the module docstring): the fraction of the
    log prior removed by ``reweight`` (loss re-weighting acts as a partial logit adjustment), of the bias-only
    logits removed by ``tde``, of the log label-frequency estimate removed by ``dlfe`` and of the log
    effective number removed by ``rtpb_cb`` (with its β); NICE's tempering exponent γ (0: counts spread evenly
    over a confusable set, 1: no correction) and the fraction of its corrected log prior removed."""

    reweight_alpha: float = 0.7
    tde_alpha: float = 0.7
    # TDE's counterfactual blanks the visual context, whose head bias is mostly global: beside ``tde_alpha`` × the
    # bias-only logits, the share of the log prior (log π) it removes as well (0: the bias-only logits only).
    tde_prior_alpha: float = 0.0
    dlfe_alpha: float = 1.0
    rtpb_alpha: float = 0.8
    rtpb_beta: float = 0.9999
    nice_gamma: float = 0.01
    # NICE's relabelled training also moves tail samples out of the background and re-weights what it relabels, so
    # its classifier loses more of the head bias than the corrected counts alone say: the fraction of the corrected
    # log prior (log π') its logits lose, as ``reweight_alpha`` does with log π (0: the corrected counts only).
    nice_alpha: float = 0.0
    dlfe_images: int = 1000
    # A debiased classifier's confidence says less about *which pairs* are related (its probabilities are
    # flattened towards the tail on every pair): the method's predicate columns get one N(0, ranking_noise)
    # offset per pair, drawn from a stream of the method's own. It leaves the predicted predicate of a pair alone
    # and spreads the ranking of pairs, so R@20 falls further below R@100, as in the paper's Tables 2-3.
    ranking_noise: float = 0.0
    # A method trained on corrected or re-weighted labels (NICE, Reweight, DLFE, RTPB) learns features that tell a
    # pair's confusable predicates apart better than the baseline's: it loses this share of the confusable evidence
    # (the ``confusion`` term), so it can gain mean recall without giving up as much recall as the prior shift alone
    # costs (0: the baseline's features; 1: confusable predicates get no evidence). TDE reuses the baseline's model.
    discrimination: float = 0.0


def method_settings(sim: dict, backbone: str, task: str) -> dict[str, MethodParams]:
    """Each method's settings for one backbone and task: ``sim["methods"]`` (every model's defaults) updated by
    ``sim["fitted"][backbone][task][method]`` (``scripts/fit_vg150_simulation.py`` writes them), for every method in
    :data:`SIMULATED_METHODS`. ``sim`` is ``conf/simulation/default.yaml`` as a plain dict."""
    fitted = (sim.get("fitted") or {}).get(backbone, {}).get(task, {})
    return {m: MethodParams(**{**sim["methods"], **(fitted.get(m) or {})}) for m in SIMULATED_METHODS}
