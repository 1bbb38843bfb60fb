"""The Open Images V6 protocol's own metrics, as PySGG's OI evaluator (the BGNN code, from NVIDIA's
ContrastiveLosses4VRD) computes them: R@K (micro, and per image), per-predicate AP with matching at IoU > 0.5,
wmAP_rel, wmAP_phr and score_wtd (docs/oiv6.md; the protocol's mR@K is the reference evaluator's, from the
engine). Every rule is stated once here.

Per image (:func:`image_records`):

- candidates: each predicted pair yields its ``PREDICATES_PER_PAIR`` (2) most probable predicates (background
  column dropped, no renormalisation), each scored ``s = (score_subject · score_object) · p_predicate`` in the
  scores' dtype (float32); all ``2P`` are ordered by ``s`` descending, the first ``TOP`` (100) kept, then those
  with ``s <= SCORE_FLOOR`` (1e-5, compared in the scores' dtype) dropped;
- a candidate hits a GT row when subject class, predicate and object class are equal and both boxes have
  IoU >= 0.5 (``metrics.iou.sgb_iou``: float32, +1 pixel); a GT row counts once, however many candidates hit it;
  ``hits_K`` = the GT rows hit by the first K candidates;
- for AP, a candidate's overlap with a GT row of its predicate is ``min(IoU_s, IoU_o)`` (rel) or the IoU of the
  union boxes (phr), 0 where a class differs; it claims the row of largest overlap (the first on ties) when that
  overlap is > 0.5 (strict).

Over images (:func:`oiv6_values`), with ``M`` the GT rows:

- ``R@K`` = Σ_i hits_K(i) / (Σ_i M_i + 1e-12) (micro: the OIv6 tables' R@50);
  ``R_per_image@K`` = mean_i hits_K(i) / (M_i + 1e-12);
- ``AP_c``: the candidates of predicate c from every image, by score descending, each a true positive when it
  claims a row no earlier candidate claimed, else a false positive; ``rec_j = TP_j / (npos_c + 1e-12)``,
  ``prec_j = TP_j / max(TP_j + FP_j, eps)``; AP is VOC's all-points area (``_voc_ap``); 0 when ``npos_c = 0``;
- ``wmAP`` = Σ_c AP_c · npos_c / Σ_c npos_c; ``mAP`` = Σ_c AP_c / C (absent predicates count 0);
- ``score_wtd`` = 0.2 · R@50 + 0.4 · wmAP_rel + 0.4 · wmAP_phr; ``score`` the same with the unweighted mAPs.

Ties: the reference sorts with numpy's unstable ``argsort`` in all three places, so on tied scores its result
depends on the machine. Here every sort is stable: predicates of a pair by id, candidates of an image by pair
(stored order) then rank, candidates of a predicate by image (order of the split) then candidate order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sgg_eval.arrays.segments import first_seen
from sgg_eval.core.defaults import OIV6_RECALL_KS as KS
from sgg_eval.metrics.iou import sgb_iou
from sgg_eval.metrics.names import OIV6_AP, metric_name

TOP = 100  # candidates kept per image
PREDICATES_PER_PAIR = 2  # prd_k: each pair's best and second-best predicate
SCORE_FLOOR = 1e-5  # candidates scoring <= this are dropped (after the top 100)
RECALL_IOU = 0.5  # R@K: both boxes at IoU >= this
AP_OVERLAP = 0.5  # AP: overlap > this (strict)
TINY = 1e-12  # added to every recall denominator, as the reference does
WEIGHTS = (0.2, 0.4, 0.4)  # score_wtd = 0.2 R@50 + 0.4 wmAP_rel + 0.4 wmAP_phr
FINAL_K = 50


@dataclass
class ImageRecords:
    """What the protocol needs of one image: ``first_hit[M]`` the rank of the first candidate hitting each GT row
    (``TOP`` if none); per candidate ``predicate`` (1-based), ``score`` and the GT row it claims for AP,
    ``claim_rel`` / ``claim_phr`` (-1: none); ``gt_predicates[M]``."""

    first_hit: np.ndarray
    gt_predicates: np.ndarray
    predicate: np.ndarray
    score: np.ndarray
    claim_rel: np.ndarray
    claim_phr: np.ndarray


def candidates(probs: np.ndarray, obj_scores: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, ...]:
    """The image's kept candidates as (pair index, predicate, score), in rank order (module docstring)."""
    n_pairs, width = len(pairs), probs.shape[1] - 1
    k = min(PREDICATES_PER_PAIR, width)
    if n_pairs == 0 or k == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, probs.dtype)
    fg = probs[:, 1:]
    order = np.argsort(-fg, axis=1, kind="stable")[:, :k]  # the best predicates, lowest id first on ties
    pair_score = obj_scores[pairs[:, 0]] * obj_scores[pairs[:, 1]]
    score = (pair_score[:, None] * np.take_along_axis(fg, order, axis=1)).ravel()  # pair-major
    top = np.argsort(-score, kind="stable")[:TOP]
    top = top[score[top] > np.asarray(SCORE_FLOOR, dtype=score.dtype)]
    return top // k, order.ravel()[top] + 1, score[top]


def image_records(
    gt_boxes: np.ndarray,
    gt_labels: np.ndarray,
    gt_rels: np.ndarray,
    boxes: np.ndarray,
    labels: np.ndarray,
    obj_scores: np.ndarray,
    pairs: np.ndarray,
    probs: np.ndarray,
) -> ImageRecords:
    """One image's records (module docstring), from its GT and its prediction as stored (``probs``: ``[P, C + 1]``
    probabilities, column 0 background)."""
    pair, predicate, score = candidates(probs, obj_scores, pairs)
    subj, obj = pairs[pair, 0], pairs[pair, 1]
    g_s, g_o, g_p = gt_rels[:, 0], gt_rels[:, 1], gt_rels[:, 2]
    same_classes = (labels[subj][:, None] == gt_labels[g_s][None, :]) & (
        labels[obj][:, None] == gt_labels[g_o][None, :]
    )
    same_predicate = predicate[:, None] == g_p[None, :]
    d_s, d_o = boxes[subj].astype(np.float32)[:, None, :], boxes[obj].astype(np.float32)[:, None, :]
    t_s, t_o = gt_boxes[g_s].astype(np.float32)[None, :, :], gt_boxes[g_o].astype(np.float32)[None, :, :]
    iou_s, iou_o = sgb_iou(d_s, t_s), sgb_iou(d_o, t_o)
    hit = same_classes & same_predicate & (iou_s >= RECALL_IOU) & (iou_o >= RECALL_IOU)
    first_hit = np.where(hit.any(axis=0), hit.argmax(axis=0), TOP) if len(hit) else np.full(len(gt_rels), TOP)
    rel = np.minimum(iou_s, iou_o)
    phr = sgb_iou(_union(d_s, d_o), _union(t_s, t_o))
    return ImageRecords(
        first_hit.astype(np.int64),
        g_p.astype(np.int64),
        predicate.astype(np.int64),
        score.astype(np.float64),
        _claims(rel, same_classes, same_predicate),
        _claims(phr, same_classes, same_predicate),
    )


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The box enclosing ``a`` and ``b`` (elementwise)."""
    return np.concatenate([np.minimum(a[..., :2], b[..., :2]), np.maximum(a[..., 2:], b[..., 2:])], axis=-1)


def _claims(overlap: np.ndarray, same_classes: np.ndarray, same_predicate: np.ndarray) -> np.ndarray:
    """Per candidate, the GT row of its predicate with the largest overlap (classes differing: 0), the first on
    ties, when that overlap is > ``AP_OVERLAP``; else -1 (also when the image has no GT row of its predicate)."""
    if overlap.size == 0:
        return np.full(overlap.shape[0], -1, dtype=np.int64)
    masked = np.where(same_predicate, np.where(same_classes, overlap, np.float32(0)), -np.inf)
    best = masked.argmax(axis=1)
    ok = masked[np.arange(len(best)), best] > AP_OVERLAP
    return np.where(ok, best, -1).astype(np.int64)


# What the collector keeps, per image (``gt_rows``: M; ``hits``: hits_K at each K), per GT row (its predicate)
# and per candidate, with each column's dtype: a few bytes per candidate, at most 100 candidates per image.
COLUMNS = {
    "gt_rows": np.int32,
    "hits": np.int32,
    "gt_predicates": np.int32,
    "cand_image": np.int32,
    "cand_predicate": np.int32,
    "cand_score": np.float64,
    "claim_rel": np.int32,
    "claim_phr": np.int32,
}


@dataclass
class OICollector:
    """The records of consecutive images (``add`` a task's images, ``finish`` packs them into one array per
    column, ``merge`` appends the next tasks' in order): the grouping and the number of workers change
    nothing, and what is kept is a few bytes per GT row and per candidate."""

    score_kind: str = "probabilities"  # "logits": the scores go through the softmax first
    images: int = 0
    parts: dict = field(default_factory=lambda: {name: [] for name in COLUMNS})

    def add(self, images: list) -> None:
        """Every (GT, prediction) image of ``images``, with or without relations, in order."""
        from sgg_eval.metrics.ranking.candidates import softmax

        ks, parts = np.array(KS), self.parts
        for gt, pred in images:
            probs = softmax(pred.rel_scores) if self.score_kind == "logits" else pred.rel_scores
            r = image_records(gt.boxes, gt.labels, gt.rels, pred.boxes, pred.labels, pred.obj_scores, pred.pairs, probs)
            parts["gt_rows"].append(np.array([len(gt.rels)]))
            parts["hits"].append((r.first_hit[:, None] < ks[None, :]).sum(axis=0))
            parts["gt_predicates"].append(r.gt_predicates)
            parts["cand_image"].append(np.full(len(r.predicate), self.images))
            parts["cand_predicate"].append(r.predicate)
            parts["cand_score"].append(r.score)
            parts["claim_rel"].append(r.claim_rel)
            parts["claim_phr"].append(r.claim_phr)
            self.images += 1

    def finish(self) -> OICollector:
        """The records added so far as one array per column."""
        self.parts = {name: [column(self.parts[name], COLUMNS[name])] for name in COLUMNS}
        return self

    def merge(self, other: OICollector, shift: int = 0) -> None:
        """Append ``other``'s images after these. Its records hold image positions, not ids, which this renumbers
        itself: ``shift`` (``Totals.merge``'s, for the collectors keyed by id) changes nothing here."""
        other.finish()
        for name in COLUMNS:
            offset = self.images if name == "cand_image" else 0
            self.parts[name] += [part + offset for part in other.parts[name]]
        self.images += other.images

    def column(self, name: str) -> np.ndarray:
        """Every image's records of column ``name``, in image order."""
        return column(self.parts[name], COLUMNS[name])


def column(parts: list, dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _voc_ap(tp: np.ndarray, fp: np.ndarray, npos: int) -> float:
    """VOC all-points AP from the per-detection TP / FP flags in rank order, as the reference computes it."""
    tp, fp = np.cumsum(tp), np.cumsum(fp)
    rec = tp / (float(npos) + TINY)
    prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]  # the precision envelope
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))


def average_precisions(
    image: np.ndarray, predicate: np.ndarray, score: np.ndarray, claim: np.ndarray, npos: np.ndarray
) -> np.ndarray:
    """``AP_c`` for c = 1..C (``npos[c - 1]`` GT rows each) from every candidate (image, predicate, score, the GT
    row it claims or -1), the candidates in image order then rank order."""
    out = np.zeros(len(npos), dtype=np.float64)
    order = np.lexsort((-score, predicate))  # by predicate, then score descending; stable: image, rank
    bounds = np.searchsorted(predicate[order], np.arange(1, len(npos) + 2))
    for c in range(1, len(npos) + 1):
        at = order[bounds[c - 1] : bounds[c]]
        if npos[c - 1] == 0 or len(at) == 0:
            continue
        where = np.flatnonzero(claim[at] >= 0)
        rows = int(claim.max(initial=0)) + 1
        first = np.zeros(len(at), dtype=bool)
        first[where] = first_seen(image[at][where] * rows + claim[at][where], (int(image.max()) + 1) * rows)
        out[c - 1] = _voc_ap(first.astype(np.float64), (~first).astype(np.float64), int(npos[c - 1]))
    return out


def oiv6_values(col: OICollector, num_predicates: int) -> tuple[dict[str, float | None], dict[str, np.ndarray]]:
    """The protocol's numbers (module docstring) of the collected images: ``(metrics, per_predicate)``, the
    per-predicate vectors ``AP_rel`` and ``AP_phr`` (index c - 1) and ``npos``."""
    rows = col.column("gt_rows").astype(np.int64)
    total = int(rows.sum())
    hits = col.column("hits").astype(np.int64).reshape(-1, len(KS))
    metrics: dict[str, float | None] = {}
    for j, k in enumerate(KS):
        metrics[metric_name("R", k)] = float(hits[:, j].sum()) / (float(total) + TINY) if len(rows) else None
        metrics[metric_name("R_per_image", k)] = float(np.mean(hits[:, j] / (rows + TINY))) if len(rows) else None
    npos = np.bincount(col.column("gt_predicates").astype(np.int64), minlength=num_predicates + 1)[1:]
    image, predicate = col.column("cand_image").astype(np.int64), col.column("cand_predicate").astype(np.int64)
    score = col.column("cand_score")
    per_predicate = {"npos": npos.astype(np.float64)}
    for kind in ("rel", "phr"):
        ap = average_precisions(image, predicate, score, col.column(f"claim_{kind}").astype(np.int64), npos)
        weighted, plain = 0.0, 0.0
        for c in range(num_predicates):  # summed in predicate order, as the reference sums
            weighted += ap[c] * float(npos[c]) / float(total) if total else 0.0
            plain += ap[c]
        metrics[f"mAP_{kind}"] = plain / num_predicates
        metrics[f"wmAP_{kind}"] = weighted if total else None
        per_predicate[f"AP_{kind}"] = ap
    r50, (w_r, w_rel, w_phr) = metrics[metric_name("R", FINAL_K)], WEIGHTS
    if r50 is None or metrics["wmAP_rel"] is None:
        metrics["score_wtd"] = metrics["score"] = None
    else:
        metrics["score"] = w_rel * metrics["mAP_rel"] + w_r * r50 + w_phr * metrics["mAP_phr"]
        metrics["score_wtd"] = w_rel * metrics["wmAP_rel"] + w_r * r50 + w_phr * metrics["wmAP_phr"]
    assert set(OIV6_AP) <= set(metrics)  # the names the document and the tables list
    return metrics, per_predicate
