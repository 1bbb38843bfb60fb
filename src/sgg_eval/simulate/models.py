"""SIMULATED model outputs for the simulated benchmark: backbones × methods × tasks, saved as logits.

Per predicted pair, a backbone's *visual* logits over ``[background, 1..C]`` are

    visual = N(0, noise) + strength · [c is a true predicate of the pair]
             + confusion · [c is visually confusable with a true predicate]   (``confusable_sets``)
             + feature_bias · log π_c                                          (head-biased features)
             ± background_shift on column 0 (down for related pairs, up for unrelated ones)
             + N(0, pair_confidence) shared by a pair's predicate columns      (per-pair confidence)

where the two evidence terms of predicate c are scaled by (π_c / max π)^evidence_frequency_slope (rare
predicates are learnt less well) and by a per-pair clarity exp(σ·N(0,1) − σ²/2). A method's output logits
are ``logit_scale`` × its logits (the scale a prior added later, PKO, competes with).

*Confusable* predicates are the members of a group of correlated predicates (``PREDICATE_GROUPS``) and a
specific predicate's generic parent (*parked on* → *on*, *made of* → *of*; ``GENERIC_PARENT``), in both
directions: VG annotators label the same visual situation either way, which is why frequency-biased models
score high R@K and debiasing trades R@K for mR@K (paper Fig. 2). The methods (``METHODS``) turn the visual
logits into a model's output, each after the published method it imitates (``docs/decisions.md``):

- ``baseline`` = visual + log P(c | subject class, object class) (Motifs' frequency bias, background counted);
- ``reweight`` = baseline − log π_c (logit adjustment by the training predicate prior);
- ``tde``      = baseline − bias-only logits (counterfactual: the frequency bias and the feature bias removed)
                 − ``tde_prior_alpha`` · log π_c;
- ``dlfe``     = baseline − log ĉ_c, ĉ_c the baseline's mean probability of the true predicate on the
  validation split's related pairs (DLFE's label-frequency estimate);
- ``rtpb_cb``  = baseline − log E_c, E_c = (1 − β^{N_c}) / (1 − β) the effective number of training samples
  (the class-balanced resistance bias of RTPB(CB), removed at inference);
- ``nice``     = visual + log P'(c | s, o) from label-corrected training counts: within every confusable set,
  samples move from frequent to rare members (counts tempered by ``nice_gamma``), as NICE relabels noisy
  head-predicate samples; the features' head bias is learnt from the corrected labels too
  (``feature_bias · log π'`` replaces ``feature_bias · log π``), and ``nice_alpha`` · log π' is removed.

- ``pko_source`` = baseline, its background column blurred by ``ranking_noise`` (below): no row of the paper, the
  pairs and objects its PKO-only row is read from (``params.PKO_SOURCE``; PKO-only replaces the predicate columns).

Every method but the baseline may add ``ranking_noise``: one N(0, σ) offset per pair on its predicate columns,
which spreads the ranking of pairs and leaves each pair's predicted predicate alone, and ``discrimination``: the
share of the confusable evidence its features do not have, ``z −= discrimination · confusion term`` (a method trained
on corrected or re-weighted labels tells a pair's confusable predicates apart better than the baseline's features;
``params.MethodParams``).
Each model's settings are ``params.method_settings``: the defaults, or what the fit to the paper wrote for its
backbone, task and method.

Tasks: PredCls uses the GT objects; SGCls keeps GT boxes and predicts labels with confusion; SGDet misses
objects, jitters boxes, adds false detections and scores every ordered pair of detections. An object's score is
U(0.5, 1) if its label is right and U(0.05, 0.6) if not, but a right detection's in SGDet is
U(``detection_score_floor``, 1). Relations are written sorted by the GC triplet score.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace

import numpy as np

from sgg_eval.core.tasks import PREDCLS, TASKS, task_spec
from sgg_eval.data.stats import TrainingStats
from sgg_eval.data.store import SplitStore, write_predictions
from sgg_eval.data.types import GTImage, PredictionMeta, PredImage
from sgg_eval.metrics.ranking.candidates import softmax
from sgg_eval.simulate.params import METHODS, PKO_SOURCE, SIMULATED_METHODS, Backbone, MethodParams  # noqa: F401
from sgg_eval.simulate.predicate_roles import GENERIC_PARENT, PREDICATE_GROUPS

TASK_INDEX = {name: i for i, name in enumerate(TASKS)}  # seeds each task's stream


@dataclass(frozen=True)
class Priors:
    """Everything the methods need besides an image's visual evidence. ``freq``/``freq_nice``:
    ``[C_obj+1, C_obj+1, C+1]`` log P(c | s, o); the others ``[C]`` over predicates 1..C."""

    freq: np.ndarray
    freq_nice: np.ndarray
    log_prior: np.ndarray
    log_prior_nice: np.ndarray  # the predicate prior of NICE's corrected labels
    log_effective: np.ndarray
    confusable: np.ndarray  # [C+1, C+1] bool: column c is confusable with true predicate r (row)
    object_share: np.ndarray  # [C_obj+1] training frequency of each object class (index 0 = 0)
    log_dlfe: np.ndarray | None = None


def _log_conditional(counts: np.ndarray, background: np.ndarray) -> np.ndarray:
    counts = counts.astype(np.float64).copy()
    counts[:, :, 0] = background
    counts += 1.0
    return np.log(counts / counts.sum(axis=2, keepdims=True))


def frequency_bias(stats: TrainingStats) -> np.ndarray:
    """``log P(c | s, o)`` over ``[background, 1..C]`` for every class pair, ``[C_obj+1, C_obj+1, C+1]``."""
    return _log_conditional(stats.triplet_counts, stats.background_counts)


def confusable_sets(names: tuple[str, ...]) -> np.ndarray:
    """``[C+1, C+1]`` bool, symmetric: predicates sharing a group, and a predicate with its generic parent."""
    idx = {n: i + 1 for i, n in enumerate(names)}
    out = np.zeros((len(names) + 1, len(names) + 1), dtype=bool)
    for group in PREDICATE_GROUPS:
        ids = [idx[p] for p in group if p in idx]
        out[np.ix_(ids, ids)] = True
    for child, parent in GENERIC_PARENT.items():
        if child in idx and parent in idx:
            out[idx[child], idx[parent]] = out[idx[parent], idx[child]] = True
    np.fill_diagonal(out, False)
    return out


def corrected_counts(counts: np.ndarray, confusable: np.ndarray, gamma: float) -> np.ndarray:
    """NICE-like label correction of ``A[s, o, p]``: within each predicate's confusable set (itself included),
    a class pair's counts are tempered to ``A^γ`` and rescaled to the set's total, moving samples from
    frequent to rare members. Sets overlap, so each predicate takes the mean of its sets' corrections."""
    a = counts.astype(np.float64)
    out = np.zeros_like(a)
    for p in range(1, a.shape[2]):
        members = np.flatnonzero(confusable[p]).tolist() + [p]
        total = a[:, :, members].sum(axis=2)
        tempered = a[:, :, members] ** gamma
        norm = tempered.sum(axis=2)
        share = np.divide(tempered[:, :, -1], norm, out=np.zeros_like(total), where=norm > 0)
        out[:, :, p] = share * total
    return out


def method_priors(stats: TrainingStats, mp: MethodParams) -> Priors:
    names = stats.vocab.predicate_classes
    confusable = confusable_sets(names)
    n = stats.predicate_counts[1:].astype(np.float64)
    prior = n + 1.0
    effective = (1.0 - mp.rtpb_beta**n) / (1.0 - mp.rtpb_beta) + 1.0
    nice = corrected_counts(stats.triplet_counts, confusable, mp.nice_gamma)
    prior_nice = nice.sum(axis=(0, 1))[1:] + 1.0
    return Priors(
        freq=frequency_bias(stats),
        freq_nice=_log_conditional(nice, stats.background_counts),
        log_prior=np.log(prior / prior.sum()),
        log_prior_nice=np.log(prior_nice / prior_nice.sum()),
        log_effective=np.log(effective / effective.sum()),
        confusable=confusable,
        object_share=stats.object_counts / stats.object_counts.sum(),
    )


def _label_accuracy(bb: Backbone, share: np.ndarray) -> np.ndarray:
    """Per-class probability that an object of that class is labelled correctly (``[C_obj+1]``)."""
    log_f = np.log(np.maximum(share, 1e-12))
    centred = log_f - np.sum(share * log_f)  # centred on the typical object, which is a frequent class
    logit = np.log(bb.label_accuracy / (1 - bb.label_accuracy)) + bb.label_frequency_slope * centred
    return 1.0 / (1.0 + np.exp(-logit))


def _objects(rng, gt: GTImage, task: str, bb: Backbone, share: np.ndarray):
    """Predicted boxes, labels, scores and, per prediction, the GT object it came from (-1: false)."""
    n = len(gt.labels)
    if task_spec(task).gt_labels:
        return gt.boxes.copy(), gt.labels.copy(), np.ones(n, np.float32), np.arange(n)
    if task_spec(task).gt_boxes:
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
    accuracy = _label_accuracy(bb, share)[gt.labels[source]]
    correct = (source >= 0) & (rng.random(len(source)) < accuracy)
    labels = rng.choice(len(share), size=len(source), p=share)
    labels[correct] = gt.labels[source[correct]]
    floor = 0.5 if task_spec(task).gt_boxes else bb.detection_score_floor  # SGCls: a classifier's label scores
    scores = np.where(correct, rng.uniform(floor, 1.0, len(source)), rng.uniform(0.05, 0.6, len(source)))
    return boxes.astype(np.float32), labels, scores.astype(np.float32), source


@dataclass
class Evidence:
    """One image's predicted objects, all ordered pairs and their visual logits ``[P, C+1]``."""

    boxes: np.ndarray
    labels: np.ndarray
    scores: np.ndarray
    pairs: np.ndarray
    visual: np.ndarray
    true_predicates: np.ndarray  # [R, 2] (pair row, GT predicate) for pairs that carry a GT relation
    confusing: np.ndarray  # [P, C+1] the part of ``visual`` a pair's confusable (not true) predicates got


def visual_evidence(rng, gt: GTImage, task: str, bb: Backbone, priors: Priors) -> Evidence:
    """Every random draw of one image; the methods only transform it, so they share objects and evidence."""
    n_pred = priors.freq.shape[2] - 1
    boxes, labels, scores, source = _objects(rng, gt, task, bb, priors.object_share)
    q = len(labels)
    a, b = np.nonzero(~np.eye(q, dtype=bool))
    pairs = np.column_stack([a, b]).astype(np.int64)
    vis = rng.normal(0, bb.noise, size=(len(pairs), n_pred + 1))
    true = np.zeros((0, 2), dtype=np.int64)
    if len(pairs) and len(gt.rels):
        # GT relations between the GT objects the two predictions came from (several per pair possible)
        pos = np.full((len(gt.labels), len(gt.labels)), -1, dtype=np.int64)
        ok = (source[a] >= 0) & (source[b] >= 0)
        pos[source[a][ok], source[b][ok]] = np.flatnonzero(ok)
        rows = pos[gt.rels[:, 0], gt.rels[:, 1]]
        true = np.unique(np.column_stack([rows, gt.rels[:, 2]])[rows >= 0], axis=0)
    onehot = np.zeros((len(pairs), n_pred + 1), dtype=bool)
    onehot[true[:, 0], true[:, 1]] = True
    # VG annotations are sparse: about ``unannotated`` × M further object pairs hold a relation nobody
    # labelled. They look related (predicate drawn from the class pair's training distribution), so they
    # compete with the GT rows in every ranking, as unlabelled true relations do in real images.
    free = np.flatnonzero((source[a] >= 0) & (source[b] >= 0) & ~onehot.any(axis=1)) if len(pairs) else a
    n_hidden = min(len(free), int(rng.poisson(bb.unannotated * len(gt.rels))))
    if n_hidden:
        rows = rng.choice(free, size=n_hidden, replace=False)
        gl = gt.labels[source[pairs[rows]]]
        p = np.exp(priors.freq[gl[:, 0], gl[:, 1], 1:])
        cum = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
        preds = 1 + np.minimum((cum < rng.random((n_hidden, 1))).sum(axis=1), n_pred - 1)
        hidden = np.column_stack([rows, preds])
        onehot[rows, preds] = True
    else:
        hidden = np.zeros((0, 2), dtype=np.int64)
    confused = np.zeros_like(onehot)
    for r, p in np.concatenate([true, hidden]):
        confused[r] |= priors.confusable[p]
    # Evidence fades for predicates seen rarely in training and varies in clarity from pair to pair, so
    # removing a head bias (the debiasing methods) or adding a class prior (PKO) recovers the tail only
    # partly, as on VG, instead of revealing a tail the features already separate cleanly.
    clarity = np.exp(bb.clarity_spread * rng.normal(size=(len(pairs), 1)) - bb.clarity_spread**2 / 2)
    fade = np.exp(bb.evidence_frequency_slope * (priors.log_prior - priors.log_prior.max()))
    scale = clarity * fade[None, :]
    confusing = np.zeros_like(vis)  # kept apart: a method's ``discrimination`` removes a share of it
    confusing[:, 1:] = scale * (bb.confusion * (confused & ~onehot))[:, 1:]
    vis[:, 1:] += scale * (bb.strength * onehot + bb.confusion * (confused & ~onehot))[:, 1:]
    related = onehot.any(axis=1)
    vis[:, 0] += np.where(related, -bb.background_shift, bb.background_shift)
    # Confidence varies from pair to pair (occlusion, size, context): one offset per pair on every predicate
    # column. It leaves each pair's predicted predicate alone but spreads the ranking of pairs.
    vis[:, 1:] += rng.normal(0, bb.pair_confidence, size=(len(pairs), 1))
    # Visual features of a real backbone are themselves head-biased (feature_bias · log π); the
    # counterfactual (bias-only) logits TDE subtracts hold that bias and the frequency prior.
    vis[:, 1:] += bb.feature_bias * priors.log_prior[None, :]
    return Evidence(boxes, labels, scores, pairs, vis, true, confusing)


def method_logits(method: str, ev: Evidence, priors: Priors, bb: Backbone, mp: MethodParams) -> np.ndarray:
    """The output logits ``[P, C+1]`` of ``method`` (see the module docstring) on one image's evidence."""
    n_pred = priors.freq.shape[2] - 1
    s, o = ev.labels[ev.pairs[:, 0]], ev.labels[ev.pairs[:, 1]]
    fb = priors.freq[s, o] if len(ev.pairs) else np.zeros((0, n_pred + 1))
    z = ev.visual + fb
    if method in ("baseline", PKO_SOURCE):
        return z
    if method == "reweight":
        z[:, 1:] -= mp.reweight_alpha * priors.log_prior
    elif method == "tde":
        z -= mp.tde_alpha * fb
        z[:, 1:] -= (mp.tde_alpha * bb.feature_bias + mp.tde_prior_alpha) * priors.log_prior
    elif method == "dlfe":
        if priors.log_dlfe is None:
            raise ValueError("dlfe needs the label-frequency estimate (estimate_label_frequency)")
        z[:, 1:] -= mp.dlfe_alpha * priors.log_dlfe
    elif method == "rtpb_cb":
        z[:, 1:] -= mp.rtpb_alpha * priors.log_effective
    elif method == "nice":
        # trained on the corrected labels: their frequency bias, and a feature bias learnt from their prior
        z = ev.visual + (priors.freq_nice[s, o] if len(ev.pairs) else fb)
        z[:, 1:] += bb.feature_bias * (priors.log_prior_nice - priors.log_prior)
        if mp.nice_alpha:
            z[:, 1:] -= mp.nice_alpha * priors.log_prior_nice
    else:
        raise ValueError(f"method must be one of {SIMULATED_METHODS}, got {method!r}")
    if mp.discrimination:
        z -= mp.discrimination * ev.confusing
    return z


def simulate_image(
    rng,
    gt: GTImage,
    task: str,
    bb: Backbone,
    priors: Priors,
    method: str,
    mp: MethodParams = MethodParams(),
    noise_rng=None,
) -> PredImage:
    """One image's output for ``method``, relations sorted by the GC triplet score (float64, stable).
    ``noise_rng`` draws the method's ranking noise (``MethodParams.ranking_noise``; needed when it is above 0):
    a stream of its own, so that every method still shares ``rng``'s objects and evidence."""
    ev = visual_evidence(rng, gt, task, bb, priors)
    z = method_logits(method, ev, priors, bb, mp)
    if mp.ranking_noise > 0 and len(z):
        offset = noise_rng.normal(0, mp.ranking_noise, size=(len(z), 1))
        if method == PKO_SOURCE:  # PKO-only keeps only its source's background column: the offset goes there
            z[:, :1] -= offset
        else:
            z[:, 1:] += offset
    z = bb.logit_scale * z
    p = np.exp(z - z.max(axis=1, keepdims=True)) if len(z) else z
    if len(z):
        p /= p.sum(axis=1, keepdims=True)
    a, b = ev.pairs[:, 0], ev.pairs[:, 1]
    triple = p[:, 1:].max(axis=1) * ev.scores[a] * ev.scores[b] if len(z) else np.zeros(0)
    order = np.argsort(-triple, kind="stable")
    return PredImage(gt.image_id, ev.boxes, ev.labels, ev.scores, ev.pairs[order], z[order].astype(np.float32))


def estimate_label_frequency(images, priors: Priors, bb: Backbone, mp: MethodParams, seed: int) -> np.ndarray:
    """DLFE's estimate: per predicate, the baseline's mean probability of the true predicate on the related
    pairs of ``images`` (PredCls objects, as in training); log, normalised. Unseen predicates get the mean."""
    rng = np.random.default_rng([seed, 99, sum(ord(ch) for ch in bb.name)])
    n_pred = priors.freq.shape[2] - 1
    total, count = np.zeros(n_pred + 1), np.zeros(n_pred + 1)
    for i, gt in enumerate(images):
        if i >= mp.dlfe_images:
            break
        ev = visual_evidence(rng, gt, PREDCLS.name, bb, priors)
        if len(ev.true_predicates) == 0:
            continue
        prob = softmax(bb.logit_scale * method_logits("baseline", ev, priors, bb, mp)).astype(np.float64)
        rows, preds = ev.true_predicates[:, 0], ev.true_predicates[:, 1]
        total += np.bincount(preds, weights=prob[rows, preds], minlength=n_pred + 1)
        count += np.bincount(preds, minlength=n_pred + 1)
    seen = count[1:] > 0
    est = np.divide(total[1:], count[1:], out=np.zeros(n_pred), where=seen)
    est[~seen] = est[seen].mean() if seen.any() else 1.0
    return np.log(est / est.sum())


def _priors_of(
    settings: dict[str, MethodParams],
    methods: list[str],
    stats: TrainingStats,
    backbone: Backbone,
    seed: int,
    val_path: str | os.PathLike | None,
) -> dict:
    """Each of ``methods``' priors; DLFE's with its label frequencies estimated on the validation split."""
    priors, shared = {}, {}
    for method in methods:
        mp = settings[method]
        # the priors read two settings only: computed once per distinct pair (0.1 s each at VG150's size)
        key = (mp.rtpb_beta, mp.nice_gamma)
        priors[method] = shared[key] = shared.get(key) or method_priors(stats, mp)
        if method == "dlfe":
            if val_path is None:
                raise ValueError("the dlfe method needs the validation split (val_path)")
            with SplitStore(val_path) as val:
                estimate = estimate_label_frequency(val, priors[method], backbone, mp, seed)
            priors[method] = replace(priors[method], log_dlfe=estimate)
    return priors


def simulate_models(
    split_path: str | os.PathLike,
    stats: TrainingStats,
    backbone: Backbone,
    task: str,
    outputs: dict[str, str | os.PathLike],
    *,
    seed: int = 0,
    score_kind: str = "logits",
    score_dtype: str = "float16",
    val_path: str | os.PathLike | None = None,
    methods: MethodParams | dict[str, MethodParams] = MethodParams(),
) -> int:
    """Write one prediction store per method in ``outputs`` (method -> path) for ``task``; deterministic.
    ``methods``: the settings of every method, or each method's own (``params.method_settings``). ``val_path`` (the
    validation split) is needed by ``dlfe``, which estimates label frequencies on it."""
    settings = methods if isinstance(methods, dict) else dict.fromkeys(outputs, methods)
    priors = _priors_of(settings, list(outputs), stats, backbone, seed, val_path)
    backbone_key = sum(ord(ch) for ch in backbone.name)

    with SplitStore(split_path) as split:

        def stream(method: str) -> Iterator[PredImage]:
            # Every method replays the same random stream, so they share objects and visual evidence; its
            # ranking noise has a stream of its own.
            rng = np.random.default_rng([seed, TASK_INDEX[task], backbone_key])
            stream_key = 1 + SIMULATED_METHODS.index(method)
            noise_rng = np.random.default_rng([seed, TASK_INDEX[task], backbone_key, stream_key])
            for gt in split:
                img = simulate_image(rng, gt, task, backbone, priors[method], method, settings[method], noise_rng)
                if score_kind == "probabilities":
                    img.rel_scores = softmax(img.rel_scores)
                yield img

        count = 0
        for method, path in outputs.items():
            meta = PredictionMeta(
                task,
                score_kind,
                split.vocab,
                f"{backbone.name}_{method}",
                True,
                f"SIMULATED by sgg_eval.simulate.models (seed={seed})",
                {
                    "simulated": True,
                    "backbone": backbone.name,
                    "method": method,
                    "backbone_params": asdict(backbone),
                    "method_params": asdict(settings[method]),
                },
            )
            count = write_predictions(path, meta, stream(method), score_dtype=score_dtype)
        return count
