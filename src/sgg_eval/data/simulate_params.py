"""Settings of the simulated models (backbones and methods): plain dataclasses, so that the configuration
schema can check them without importing the simulator. What each field does: ``simulate_models``."""

from __future__ import annotations

from dataclasses import dataclass

METHODS = ("baseline", "reweight", "tde", "dlfe", "rtpb_cb", "nice")


@dataclass(frozen=True)
class Backbone:
    """Visual-evidence strength of a simulated backbone; object-recognition quality for SGCls/SGDet."""

    name: str
    strength: float = 3.0
    confusion: float = 3.0
    noise: float = 1.0
    background_shift: float = 1.25
    feature_bias: float = 0.6
    pair_confidence: float = 1.5
    label_accuracy: float = 0.8
    # Detectors recognise frequent classes better: logit(accuracy of class c) = logit(label_accuracy)
    # + label_frequency_slope · (log f_c − E[log f]), and a wrong label is drawn by class frequency.
    label_frequency_slope: float = 1.5
    detection_rate: float = 0.95
    box_jitter: float = 0.08
    false_detections: float = 3.0
    unannotated: float = 1.2


@dataclass(frozen=True)
class MethodParams:
    """How strongly each simulated debiasing method acts (see the module docstring): the fraction of the
    log prior removed by ``reweight`` (loss re-weighting acts as a partial logit adjustment), of the bias-only
    logits removed by ``tde``, of the log label-frequency estimate removed by ``dlfe`` and of the log
    effective number removed by ``rtpb_cb`` (with its β); NICE's tempering exponent γ (0: counts spread evenly over a confusable set, 1: no correction)."""

    reweight_alpha: float = 1.0
    tde_alpha: float = 0.6
    dlfe_alpha: float = 1.0
    rtpb_alpha: float = 1.0
    rtpb_beta: float = 0.9999
    nice_gamma: float = 0.15
    dlfe_images: int = 1000
