"""SIMULATED model outputs for the simulated benchmark: backbones × methods × tasks, saved as logits.

Per predicted pair, logits over ``[background, 1..C]`` are

    visual = N(0, noise) + strength · [c is a true predicate of the pair]
             + correlated · [c shares a group with a true predicate]      (``PREDICATE_GROUPS``)
             + feature_bias · log π_c                                     (head-biased features)
             ± background_shift on column 0 (down for related pairs, up for unrelated ones)
             + N(0, pair_confidence) shared by a pair's predicate columns  (per-pair confidence)
    freq   = log P(c | subject class, object class) from the training statistics, background counted as
             in Motifs' frequency bias (smoothed by +1)

and the methods are ``baseline = visual + freq`` (frequency-biased, Motifs-like), ``reweight = baseline -
log π_c`` (logit adjustment by the predicate prior π), ``tde = baseline - (freq + feature_bias · log π)``
(the counterfactual: the bias-only logits subtracted). Spreading evidence over correlated predicates is what makes IMR and mR
disagree (paper Fig. 2). Tasks: PredCls uses the GT objects; SGCls keeps GT boxes and predicts labels with
confusion; SGDet misses objects, jitters boxes (IoUs spread around 0.5), adds false detections and scores
every ordered pair of detections. Relations are written sorted by the GC triplet score.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import numpy as np

from sgg_eval.data.simulate import PREDICATE_GROUPS
from sgg_eval.data.store import SplitStore, write_predictions
from sgg_eval.data.types import GTImage, PredictionMeta, PredImage
from sgg_eval.metrics.engine import softmax
from sgg_eval.stats import TrainingStats

METHODS = ("baseline", "reweight", "tde")


@dataclass(frozen=True)
class Backbone:
    """Visual-evidence strength of a simulated backbone; object-recognition quality for SGCls/SGDet."""

    name: str
    strength: float = 2.0
    correlated: float = 0.9
    noise: float = 1.0
    background_shift: float = 1.0
    feature_bias: float = 0.6
    pair_confidence: float = 1.5
    label_accuracy: float = 0.6
    detection_rate: float = 0.75
    box_jitter: float = 0.18
    false_detections: float = 3.0


def frequency_bias(stats: TrainingStats) -> np.ndarray:
    """``log P(c | s, o)`` over ``[background, 1..C]`` for every class pair, ``[C_obj+1, C_obj+1, C+1]``."""
    counts = stats.triplet_counts.astype(np.float64).copy()
    counts[:, :, 0] = stats.background_counts
    counts += 1.0
    return np.log(counts / counts.sum(axis=2, keepdims=True))


def _objects(rng, gt: GTImage, task: str, bb: Backbone, n_classes: int):
    """Predicted boxes, labels, scores and, per prediction, the GT object it came from (-1: false)."""
    n = len(gt.labels)
    if task == "predcls":
        return gt.boxes.copy(), gt.labels.copy(), np.ones(n, np.float32), np.arange(n)
    if task == "sgcls":
        source = np.arange(n)
        boxes = gt.boxes.copy()
    else:
        source = np.flatnonzero(rng.random(n) < bb.detection_rate)
        wh = (gt.boxes[source, 2:] - gt.boxes[source, :2] + 1).repeat(2, axis=0).reshape(-1, 4)
        boxes = gt.boxes[source] + rng.normal(0, bb.box_jitter, size=(len(source), 4)) * wh
        k = rng.poisson(bb.false_detections)
        xy = rng.uniform(0, 1, size=(k, 2)) * [gt.width * 0.8, gt.height * 0.8]
        extra = np.column_stack([xy, xy + rng.uniform(0.05, 0.3, size=(k, 2)) * [gt.width, gt.height]])
        boxes = np.concatenate([boxes, extra])
        source = np.concatenate([source, np.full(k, -1)])
        boxes[:, 0::2] = np.clip(boxes[:, 0::2], 0, gt.width - 1)
        boxes[:, 1::2] = np.clip(boxes[:, 1::2], 0, gt.height - 1)
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 1)
    correct = (source >= 0) & (rng.random(len(source)) < bb.label_accuracy)
    labels = rng.integers(1, n_classes + 1, size=len(source))
    labels[correct] = gt.labels[source[correct]]
    scores = np.where(correct, rng.uniform(0.5, 1.0, len(source)), rng.uniform(0.05, 0.6, len(source)))
    return boxes.astype(np.float32), labels, scores.astype(np.float32), source


def simulate_image(rng, gt: GTImage, task: str, bb: Backbone, freq: np.ndarray, log_prior: np.ndarray,
                   groups: list[list[int]], method: str) -> PredImage:
    """One image's output for ``method``. Every random draw happens before the method is applied, so the
    methods of one random stream share objects, pairs and visual evidence."""
    n_pred = freq.shape[2] - 1
    boxes, labels, scores, source = _objects(rng, gt, task, bb, freq.shape[0] - 1)
    q = len(labels)
    a, b = np.nonzero(~np.eye(q, dtype=bool))
    pairs = np.column_stack([a, b])
    vis = rng.normal(0, bb.noise, size=(len(pairs), n_pred + 1))
    related = np.zeros(len(pairs), dtype=bool)
    if len(pairs) and len(gt.rels):
        # GT relations between the GT objects the two predictions came from
        key = source[a] * (1 << 20) + source[b]
        valid = (source[a] >= 0) & (source[b] >= 0)
        for s, o, p in gt.rels:
            hit = np.flatnonzero(valid & (key == s * (1 << 20) + o))
            vis[hit, p] += bb.strength
            related[hit] = True
            for g in groups:
                if p in g:
                    others = [c for c in g if c != p]
                    vis[np.ix_(hit, others)] += bb.correlated
    vis[:, 0] += np.where(related, -bb.background_shift, bb.background_shift)
    # Confidence varies from pair to pair (occlusion, size, context): one offset per pair on every predicate
    # column. It leaves each pair's predicted predicate alone but spreads the ranking of pairs.
    vis[:, 1:] += rng.normal(0, bb.pair_confidence, size=(len(pairs), 1))
    # Visual features of a real backbone are themselves head-biased (feature_bias · log π); the
    # counterfactual (bias-only) logits TDE subtracts hold that bias and the frequency prior.
    vis[:, 1:] += bb.feature_bias * log_prior[None, :]
    fb = freq[labels[a], labels[b]] if len(pairs) else np.zeros((0, n_pred + 1))
    baseline = vis + fb
    bias_only = fb.copy()
    bias_only[:, 1:] += bb.feature_bias * log_prior[None, :]
    if method == "baseline":
        z = baseline
    elif method == "reweight":
        z = baseline.copy()
        z[:, 1:] -= log_prior[None, :]
    elif method == "tde":
        z = baseline - bias_only
    else:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    # the ranking keeps float64 probabilities: stored order is by the GC triplet score
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    triple = p[:, 1:].max(axis=1) * scores[a] * scores[b] if len(pairs) else np.zeros(0)
    order = np.argsort(-triple, kind="stable")
    return PredImage(gt.image_id, boxes, labels, scores, pairs[order], z[order].astype(np.float32))


def simulate_models(split_path: str | os.PathLike, stats: TrainingStats, backbone: Backbone, task: str,
                    outputs: dict[str, str | os.PathLike], *, seed: int = 0, score_kind: str = "logits",
                    score_dtype: str = "float16") -> int:
    """Write one prediction store per method in ``outputs`` (method -> path) for ``task``; deterministic."""
    freq = frequency_bias(stats)
    prior = stats.predicate_counts[1:].astype(np.float64) + 1.0
    log_prior = np.log(prior / prior.sum())
    names = stats.vocab.predicate_classes
    groups = [[names.index(p) + 1 for p in g] for g in PREDICATE_GROUPS if all(p in names for p in g)]
    task_index = ("predcls", "sgcls", "sgdet").index(task)
    backbone_key = sum(ord(ch) for ch in backbone.name)

    with SplitStore(split_path) as split:
        def stream(method: str) -> Iterator[PredImage]:
            # Every method replays the same random stream, so they share objects and visual evidence.
            rng = np.random.default_rng([seed, task_index, backbone_key])
            for gt in split:
                img = simulate_image(rng, gt, task, backbone, freq, log_prior, groups, method)
                if score_kind == "probabilities":
                    img.rel_scores = softmax(img.rel_scores)
                yield img

        count = 0
        for method, path in outputs.items():
            meta = PredictionMeta(task, score_kind, split.vocab, f"{backbone.name}_{method}", True,
                                  f"SIMULATED by sgg_eval.data.simulate_models (seed={seed})",
                                  {"simulated": True, "backbone": backbone.name, "method": method,
                                   "backbone_params": asdict(backbone)})
            count = write_predictions(path, meta, stream(method), score_dtype=score_dtype)
        return count
