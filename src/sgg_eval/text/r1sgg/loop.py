"""R1-SGG's own recall loop (``vg150_eval.py`` ``__main__``, commit e4de64d; "metric A" of docs/text_graphs.md), over
**every GT image** (an image without an answer hits nothing):

- a GT row is hit when **any** kept relation of the answer has its predicate, its subject and object classes, and
  continuous IoU >= 0.5 on both boxes: ``inter / (area_a + area_b - inter)``, no +1, 0 when the union is 0
  (one answer may hit many rows; a repeated GT row counts twice);
- ``ngR_loop`` = hits / GT rows, pooled over the split ("whole ngR");
- ``ng-mR_loop`` = the mean, over the predicates present in the GT, of each predicate's pooled recall **rounded to
  4 decimals** (numpy's rounding) before the mean ("whole mean of ngR");
- ``ngR_loop_per_image`` = the mean over images with GT rows of each image's recall ("ngR per image");
- ``ng-mR_loop_per_image``: per predicate, the mean over images that have it of the image's recall of it, rounded
  to 4 decimals; then the mean over those predicates ("mean ngR per image").
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from sgg_eval.metrics.iou import r1sgg_iou
from sgg_eval.metrics.names import R1_LOOP_VALUES


def image_hits(gt, answer) -> np.ndarray:
    """Which GT rows of ``gt`` (a ``RowImage``) the ``answer`` (a ``MappedAnswer``, or None) hits."""
    m = len(gt.rels)
    if answer is None or not len(answer.predicates) or not m:
        return np.zeros(m, dtype=bool)
    s, o, p = gt.rels[:, 0], gt.rels[:, 1], gt.rels[:, 2]
    ok = (p[:, None] == answer.predicates[None]) & (gt.labels[s][:, None] == answer.labels[answer.subjects][None])
    ok &= gt.labels[o][:, None] == answer.labels[answer.objects][None]
    ok &= r1sgg_iou(gt.boxes[s], answer.boxes[answer.subjects]) >= 0.5
    ok &= r1sgg_iou(gt.boxes[o], answer.boxes[answer.objects]) >= 0.5
    return ok.any(axis=1)


class LoopTotals:
    """The loop's tallies over the images added; :meth:`values` gives the four numbers (fractions)."""

    def __init__(self) -> None:
        self.hits = self.rows = 0
        self.by_predicate: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        self.image_recalls: list[float] = []
        self.per_image_by_predicate: dict[int, list[float]] = defaultdict(list)

    def add(self, predicates: np.ndarray, hit: np.ndarray) -> None:
        """One image's GT predicates and which of its rows were hit."""
        if not len(predicates):
            return
        self.hits, self.rows = self.hits + int(hit.sum()), self.rows + len(hit)
        self.image_recalls.append(float(hit.sum()) / len(hit))
        for p in np.unique(predicates).tolist():
            mine = hit[predicates == p]
            self.by_predicate[p][0] += int(mine.sum())
            self.by_predicate[p][1] += len(mine)
            self.per_image_by_predicate[p].append(float(mine.sum()) / len(mine))

    def values(self) -> dict[str, float | None]:
        if not self.rows:
            return dict.fromkeys(R1_LOOP_VALUES)
        pooled = [float(np.round(np.float64(h / n), 4)) for h, n in self.by_predicate.values()]
        per_image = [float(np.round(np.mean(v), 4)) for v in self.per_image_by_predicate.values()]
        numbers = (self.hits / self.rows, np.mean(pooled), np.mean(self.image_recalls), np.mean(per_image))
        return {name: float(v) for name, v in zip(R1_LOOP_VALUES, numbers, strict=True)}
