"""Scoring an unscored scene graph as a set (issue 48, the ``sets`` protocol's matching): the answer's triplets, each
counted once, matched one-to-one to the GT rows, so that repeating a triplet earns nothing and every unmatched
triplet is a false positive.

Per image, with the answer's objects already mapped to class ids and its predicates to predicate ids:

- the answer's **triplets** are its distinct ``(subject class, subject box, predicate, object class, object box)``;
  its **pairs** the distinct ``(subject class, subject box, object class, object box)``, each with the set of
  predicates the answer gives it;
- a triplet is compatible with GT row ``r`` when both classes and the predicate are equal and both boxes overlap
  their GT boxes at IoU >= 0.5 (the reference evaluator's +1-pixel float32 IoU, ``metrics.iou.sgb_iou_matrix``: an
  answer is matched exactly as a trained model's prediction is); a pair is compatible with ``r`` when the classes and
  boxes are and ``r``'s predicate is one of the pair's;
- ``NG``: a maximum one-to-one matching of triplets to GT rows; ``GC`` (one predicate per pair): of pairs to GT
  rows, so a pair answered with several predicates counts once, right or wrong;
- the matching is Kuhn's augmenting paths, GT rows in order, candidates in answer order: its size is the maximum
  (unique); which rows it covers, when several maximum matchings exist, follows that order (deterministic).

``TP`` = the matching's size; recall ``TP / M`` (M GT rows), precision ``TP / N`` (N triplets, or pairs for GC).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sgg_eval.metrics.iou import sgb_iou_matrix

IOU = 0.5


@dataclass
class SetMatch:
    """One image, for NG (triplets) and GC (pairs): the GT rows matched, and how many the answer gave."""

    hit_ng: np.ndarray
    hit_gc: np.ndarray
    n_triplets: int
    n_pairs: int


def match_image(
    gt_boxes: np.ndarray,
    gt_labels: np.ndarray,
    gt_rels: np.ndarray,
    boxes: np.ndarray,
    labels: np.ndarray,
    subjects: np.ndarray,
    objects: np.ndarray,
    predicates: np.ndarray,
    iou_threshold: float = IOU,
) -> SetMatch:
    """The module docstring's matching of one answer (objects ``boxes``/``labels``; relations ``subjects``,
    ``objects``, ``predicates``, ids) against one GT image (``gt_rels`` rows ``subject, object, predicate``)."""
    triplets, pairs, pair_predicates = _distinct(boxes, labels, subjects, objects, predicates)
    m = len(gt_rels)
    if not m or not len(pairs):
        return SetMatch(np.zeros(m, bool), np.zeros(m, bool), len(triplets), len(pairs))
    thr = np.float32(iou_threshold)
    ok_s = sgb_iou_matrix(gt_boxes[gt_rels[:, 0]], boxes[[s for s, _ in pairs]]) >= thr  # [rows, pairs]
    ok_o = sgb_iou_matrix(gt_boxes[gt_rels[:, 1]], boxes[[o for _, o in pairs]]) >= thr
    same = (gt_labels[gt_rels[:, 0]][:, None] == labels[[s for s, _ in pairs]][None, :]) & (
        gt_labels[gt_rels[:, 1]][:, None] == labels[[o for _, o in pairs]][None, :]
    )
    pair_ok = ok_s & ok_o & same  # the objects fit; the predicate decides
    gc = [[q for q in np.flatnonzero(pair_ok[r]).tolist() if gt_rels[r, 2] in pair_predicates[q]] for r in range(m)]
    pair_of = {t: i for i, t in enumerate(pairs)}
    ng = [
        [j for j, (s, o, p) in enumerate(triplets) if p == gt_rels[r, 2] and pair_ok[r, pair_of[(s, o)]]]
        for r in range(m)
    ]
    return SetMatch(_kuhn(ng, len(triplets)), _kuhn(gc, len(pairs)), len(triplets), len(pairs))


def _distinct(boxes, labels, subjects, objects, predicates):
    """The answer's distinct triplets ``(s, o, p)`` and pairs ``(s, o)`` over representative object positions
    (objects equal in class and box are one object), in answer order; and each pair's predicates."""
    first = {}
    rep = [first.setdefault((int(labels[i]), *boxes[i].tolist()), i) for i in range(len(labels))]
    triplets, pairs, pair_predicates = {}, {}, []
    for s, o, p in zip(subjects.tolist(), objects.tolist(), predicates.tolist()):
        s, o = rep[s], rep[o]
        triplets.setdefault((s, o, p), None)
        if (s, o) not in pairs:
            pairs[(s, o)] = len(pair_predicates)
            pair_predicates.append(set())
        pair_predicates[pairs[(s, o)]].add(p)
    return list(triplets), list(pairs), pair_predicates


def _kuhn(candidates: list[list[int]], n_right: int) -> np.ndarray:
    """A maximum matching of rows to right vertices (``candidates[r]``, tried in order), row by row: from each
    row, a breadth-first search for an augmenting path (no recursion: an image may have thousands of rows).
    Returns the rows matched."""
    owner, right_of = [-1] * n_right, {}
    for r in range(len(candidates)):
        reached_from, queue, found = {}, [r], -1
        for row in queue:  # the queue grows while it is read: breadth first
            for j in candidates[row]:
                if j in reached_from:
                    continue
                reached_from[j] = row
                if owner[j] < 0:
                    found = j
                    break
                queue.append(owner[j])
            if found >= 0:
                break
        j = found
        while j >= 0:  # flip the path: each row on it takes the vertex it was reached through
            row = reached_from[j]
            previous = right_of.get(row, -1)
            owner[j], right_of[row] = row, j
            j = previous if row != r else -1
    hit = np.zeros(len(candidates), dtype=bool)
    hit[list(right_of)] = True
    return hit


VARIANTS = ("ng", "gc")  # triplets, or pairs with one predicate each


class SetTotals:
    """The sets protocol's sums over images (each image with a GT relation; an unanswered or failed one is an empty
    answer), per variant, and its values (:meth:`values`):

    - ``R`` = mean over images of ``TP_i / M_i``; ``R_pooled`` = ``Σ TP / Σ M``;
    - ``P`` = mean over the images with an answer (N_i > 0) of ``TP_i / N_i``; ``P_pooled`` = ``Σ TP / Σ N``;
    - ``F1`` = mean over images of ``2 P_i R_i / (P_i + R_i)`` (0 when TP_i = 0); ``F1_pooled`` from the pooled P, R;
    - ``mR`` = mean over all C predicates of the mean over the images containing c of ``hits_c / count_c``
      (a predicate absent from the GT counts 0, as the reference evaluator's mR).
    """

    def __init__(self, num_predicates: int):
        self.C, self.images = num_predicates, 0
        zeros = {v: 0.0 for v in VARIANTS}
        self.recall, self.precision, self.f1 = dict(zeros), dict(zeros), dict(zeros)
        self.answered = 0
        self.tp, self.n, self.rows = dict(zeros), dict(zeros), 0
        self.per_pred = {v: np.zeros(num_predicates + 1) for v in VARIANTS}
        self.pred_images = np.zeros(num_predicates + 1)

    def add(self, match: SetMatch, gt_predicates: np.ndarray) -> None:
        m = len(gt_predicates)
        if not m:
            return
        self.images += 1
        self.rows += m
        self.answered += match.n_triplets > 0
        count = np.bincount(gt_predicates, minlength=self.C + 1).astype(np.float64)
        present = count > 0
        self.pred_images += present
        for v, hit, n in (("ng", match.hit_ng, match.n_triplets), ("gc", match.hit_gc, match.n_pairs)):
            tp = float(hit.sum())
            r, p = tp / m, (tp / n if n else 0.0)
            self.recall[v] += r
            self.precision[v] += p
            self.f1[v] += 0.0 if tp == 0 else 2 * p * r / (p + r)
            self.tp[v] += tp
            self.n[v] += n
            hits = np.bincount(gt_predicates[hit], minlength=self.C + 1).astype(np.float64)
            self.per_pred[v] += np.divide(hits, count, out=np.zeros_like(hits), where=present)

    def values(self, variant: str) -> dict[str, float | None]:
        """The variant's values by name (None where nothing defines them: no image, no answer)."""
        if not self.images:
            return dict.fromkeys(("R", "R_pooled", "P", "P_pooled", "F1", "F1_pooled", "mR"))
        r_pooled = self.tp[variant] / self.rows
        p_pooled = self.tp[variant] / self.n[variant] if self.n[variant] else None
        per_c = np.divide(
            self.per_pred[variant][1:], self.pred_images[1:], out=np.zeros(self.C), where=self.pred_images[1:] > 0
        )
        f1_pooled = (
            None
            if p_pooled is None
            else (0.0 if not p_pooled + r_pooled else 2 * p_pooled * r_pooled / (p_pooled + r_pooled))
        )
        return {
            "R": self.recall[variant] / self.images,
            "R_pooled": r_pooled,
            "P": self.precision[variant] / self.answered if self.answered else None,
            "P_pooled": p_pooled,
            "F1": self.f1[variant] / self.images,
            "F1_pooled": f1_pooled,
            "mR": float(per_c.mean()),
        }
