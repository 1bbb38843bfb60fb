"""SIMULATED panoptic SGG models: SGBench submissions (a ZIP of ``triplets.json`` and one TIFF of instance
masks per image) for the test images of ``simulate.psg_world``.

SIMULATED OUTPUTS. Each method is a detector plus a relation ranker (``conf/simulation/psg.yaml``):

- **Detector.** A GT segment is found (a mask of its class with IoU ≥ 0.5) when a per-segment uniform draw,
  shared by every method, falls below ``detect_related`` (segments in a relation: they are the salient ones)
  or ``detect_other``. Two-stage detectors (IMP-, MOTIFS-, VCTree-, GPSNet-like) output a panoptic map:
  non-overlapping masks, the found segments exactly, plus ``false_detections`` missed segments given a wrong
  class. One-stage methods (PSGTR-, PSGFormer-, Pair-Net-, HiLo-like) output query masks: each found segment
  grown by a pixel into its neighbours (masks overlap), plus ``false_detections`` random rectangles. Methods
  that name the same detector share its every mask and label, so they tie on InstR and mR@∞.
- **Ranker.** Over every ordered pair of predicted instances (a, b) and predicate p:
  ``pair(a, b) = pair_strength · [a, b is a GT pair] + N(0, 1)`` and
  ``logit(a, b, p) = predicate_strength · [p is a GT predicate of a, b] + frequency_bias · log f_p + Gumbel``,
  with f_p the predicate's frequency in the world. ``triplets`` keep each pair's best predicate, pairs ranked
  by ``pair + logit`` (the first ``triplets``); ``ng_triplets`` rank every (pair, predicate) by
  ``ng_pair_weight · pair + logit`` (the first ``ng_triplets``). ``frequency_bias`` is the long-tail bias
  debiasing methods fight: it trades R@K against mR@K.
- **What a model does not know.** A real model scores most of the triplets it knows near the top of its list
  and never finds the rest, so published recall is nearly flat in K. Here a GT pair is known with probability
  ``pair_recall``; an unknown one sinks below every other pair (``pair - SINK``), which caps pair recall. A GT
  predicate is known with probability ``predicate_recall``; an unknown one gets no ``predicate_strength`` and
  competes with the other predicates of its pair on bias and noise, which sets PRank. A pair that is no GT
  pair is as confident as a known one, and sure of one predicate, with probability ``false_pair_rate`` (an
  unannotated relation, or a hallucinated one): these take top ranks from the GT triplets, which sets R@1×
  apart from R@20. The defaults (1.0, 1.0, an ``ng_pair_weight`` of 1.0 and a ``false_pair_rate`` of 0) are
  the ranker without these knobs.

The noise of image i is drawn once for every method (common random numbers), so the methods' differences come
from their settings, not from chance. ``scripts/fit_psg_simulation.py`` fits each method's ranker to the
SGBench paper's tables.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from dataclasses import dataclass

import numpy as np

from sgg_eval.simulate.psg_world import SCALES, PsgWorld, WorldDraws, mask_box, test_image

MAX_FALSE = 16  # false-detection slots drawn per image (a detector uses its first false_detections)
SINK = 8.0  # an unknown GT pair's score falls this far: 8 sd of the pair noise, below every other pair


@dataclass(frozen=True)
class PsgDetector:
    overlapping: bool
    detect_related: float
    detect_other: float
    false_detections: int


@dataclass(frozen=True)
class PsgMethod:
    detector: str
    pair_strength: float
    predicate_strength: float
    frequency_bias: float
    triplets: int = 100
    ng_triplets: int = 300
    pair_recall: float = 1.0
    predicate_recall: float = 1.0
    ng_pair_weight: float = 1.0
    false_pair_rate: float = 0.0


class _Draws:
    """One image's ranker noise, shared by every method. The draws the knobs added come after the older ones,
    so the default knobs give the submissions they gave before."""

    def __init__(self, noise: np.random.Generator, shape: tuple[int, int, int]):
        self.pair_noise = noise.standard_normal(shape[:2])
        self.gumbel = noise.gumbel(size=shape)
        self.known_u = noise.uniform(size=shape)
        self.pair_u = noise.uniform(size=shape[:2])


def _grown(mask: np.ndarray) -> np.ndarray:
    """The mask grown one pixel down and right (a query mask spilling into its neighbours)."""
    out = mask.copy()
    out[1:] |= mask[:-1]
    out[:, 1:] |= mask[:, :-1]
    return out


def _instances(det: PsgDetector, ids, seg_ids, classes, found, rng_false, n_classes) -> tuple[list, list, list]:
    """Masks, labels and GT slot (-1: false) of the predicted instances, in slot order."""
    masks, labels, slots = [], [], []
    for g, seg in enumerate(seg_ids):
        if found[g]:
            m = ids == seg
            if det.overlapping:
                grown = _grown(m)
                m = grown if m.sum() / grown.sum() >= 0.5 else m
            masks.append(m), labels.append(int(classes[g])), slots.append(g)
    h, w = ids.shape
    boxes = rng_false.uniform(size=(MAX_FALSE, 4))
    wrong = rng_false.integers(1, n_classes, size=MAX_FALSE)
    if det.overlapping:  # random query masks
        for k in range(det.false_detections):
            y, x = int(boxes[k, 0] * (h - 8)), int(boxes[k, 1] * (w - 8))
            m = np.zeros((h, w), dtype=bool)
            m[y : y + 8 + int(boxes[k, 2] * h / 2), x : x + 8 + int(boxes[k, 3] * w / 2)] = True
            masks.append(m), labels.append(int(rng_false.integers(n_classes))), slots.append(len(seg_ids) + k)
    else:  # missed segments of the panoptic map, with a wrong class
        for k, g in enumerate(np.flatnonzero(~found)[: det.false_detections]):
            masks.append(ids == seg_ids[g]), labels.append(int((classes[g] + wrong[k]) % n_classes))
            slots.append(len(seg_ids) + k)  # a slot of its own: it stands for no GT segment
    return masks, labels, slots


def _rank(method: PsgMethod, slots, truth, draws: _Draws, log_freq) -> tuple[list, list]:
    """``triplets`` and ``ng_triplets`` over the predicted instances (positions in slot order)."""
    slots = np.asarray(slots)
    n = len(slots)
    if n < 2:
        return [], []
    sub = np.ix_(slots, slots)
    is_pair = truth.any(axis=2)[sub]
    known = draws.pair_u[sub] < method.pair_recall
    # a GT pair: known (pair_strength) or sunk; another pair: now and then as confident as a known one
    confident = ~is_pair & (draws.pair_u[sub] < method.false_pair_rate)
    pair = np.where(known, method.pair_strength, -SINK) * is_pair + method.pair_strength * confident
    pair += draws.pair_noise[sub]
    known_u = draws.known_u[sub]
    boost = method.predicate_strength * (truth[sub] & (known_u < method.predicate_recall))
    if confident.any():  # a confident false pair is sure of one predicate too (its least draw: any of them)
        picked = known_u.argmin(axis=2)
        a, b = np.nonzero(confident)
        boost[a, b, picked[a, b]] = method.predicate_strength
    logit = boost + method.frequency_bias * log_freq + draws.gumbel[sub]
    diagonal = np.arange(n), np.arange(n)
    total = method.ng_pair_weight * pair[:, :, None] + logit
    total[diagonal] = -np.inf
    flat = total.reshape(-1)
    k = min(method.ng_triplets, n * (n - 1) * len(log_freq))
    top = np.argpartition(-flat, k - 1)[:k]
    top = top[np.lexsort((top, -flat[top]))]
    a, b, p = np.unravel_index(top, total.shape)
    ng = np.stack([a, b, p], axis=1).tolist()
    if method.ng_pair_weight != 1.0:
        total = pair[:, :, None] + logit
        total[diagonal] = -np.inf
    best = total.max(axis=2).reshape(-1)
    best_p = total.argmax(axis=2).reshape(-1)
    k = min(method.triplets, n * (n - 1))
    top = np.argpartition(-best, k - 1)[:k]
    top = top[np.lexsort((top, -best[top]))]
    a, b = np.unravel_index(top, (n, n))
    return np.stack([a, b, best_p[top]], axis=1).tolist(), ng


def _write(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    """A member with a fixed timestamp: the same submission gives the same bytes."""
    zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, compress_type=zipfile.ZIP_DEFLATED)


def _tiff(masks: list, shape: tuple[int, int]) -> bytes:
    import tifffile

    out = io.BytesIO()
    h, w = shape
    stack = np.array(masks, dtype=np.uint8).reshape(len(masks), h, w)
    # 3 or 4 layers are one planar RGB(A) page, as tifffile (sgbench's writer) stores them
    layout = {"photometric": "rgb", "planarconfig": "separate"} if len(masks) in (3, 4) else {}
    tifffile.imwrite(out, stack, compression="zlib", **layout)
    return out.getvalue()


def write_psg_models(
    world: PsgWorld,
    detectors: dict[str, PsgDetector],
    methods: dict[str, PsgMethod],
    out: dict[str, str | os.PathLike],
    *,
    seed: int = 0,
) -> None:
    """Write the submission ZIP ``out[name]`` of every method in ``methods`` (by name) for the test images of
    ``world``. Deterministic: the same settings give byte-identical ZIPs."""
    draw = WorldDraws(world)
    n_classes = draw.n_classes
    log_freq = np.log(draw.pred_p)
    zips = {name: zipfile.ZipFile(out[name], "w", zipfile.ZIP_DEFLATED) for name in methods}
    docs = {name: [] for name in methods}
    try:
        for i in range(SCALES[world.scale][1]):
            entry, ids = test_image(world, draw, i)
            seg_ids = np.array([s["id"] for s in entry["segments_info"]])
            classes = np.array([s["category_id"] for s in entry["segments_info"]])
            n_gt = len(seg_ids)
            truth = np.zeros((n_gt + MAX_FALSE, n_gt + MAX_FALSE, len(log_freq)), dtype=bool)
            related = np.zeros(n_gt, dtype=bool)
            for s, o, p in entry["relations"]:
                truth[s, o, p] = related[s] = related[o] = True
            noise = np.random.default_rng([seed, world.seed, 3, i])
            draw_u = noise.uniform(size=n_gt)
            draws = _Draws(noise, truth.shape)
            for name, method in methods.items():
                det = detectors[method.detector]
                found = draw_u < np.where(related, det.detect_related, det.detect_other)
                rng_false = np.random.default_rng([seed, world.seed, 4, i, sorted(detectors).index(method.detector)])
                masks, labels, slots = _instances(det, ids, seg_ids, classes, found, rng_false, n_classes)
                triplets, ng = _rank(method, slots, truth, draws, log_freq)
                seg = f"masks/{entry['image_id']}.tiff"
                _write(zips[name], seg, _tiff(masks, ids.shape))
                docs[name].append(
                    {
                        "id": entry["image_id"],
                        "seg_filename": seg,
                        "annotation": [{"bbox": mask_box(m), "category": c} for m, c in zip(masks, labels)],
                        "triplets": triplets,
                        "ng_triplets": ng,
                    }
                )
        for name in methods:
            doc = {"version": 1, "simulated": True, "images": docs[name]}
            _write(zips[name], "triplets.json", json.dumps(doc, separators=(",", ":")).encode())
    finally:
        for zf in zips.values():
            zf.close()
