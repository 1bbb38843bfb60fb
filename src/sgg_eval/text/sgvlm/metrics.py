"""SceneGraphVLM's strict scores of one answer against its GT (issue 48, ``--protocol sgvlm``; its evaluator at
a6197da, ``--strict-only``, the recommended mode; both scenes read by ``text.sgvlm.toon``):

- **objects**: a Hungarian assignment (scipy's ``linear_sum_assignment``) on minus the IoU of every GT and
  answered box, continuous IoU ``inter / (area_a + area_b - inter)`` (0 for an empty union); assigned pairs
  below IoU 0.5 are dropped, never re-assigned. ``TP`` = kept pairs whose names are identical; ``P = TP / N_pred``,
  ``R = TP / N_gt``;
- **relations**: an answered relation can match a GT one when its two ends are the answered objects **kept in the
  assignment** with those GT ends (by box alone: the names are not checked; an answered id repeated in the text
  maps through its last object) and the predicates are identical; ``TP`` = a second Hungarian assignment on
  0/1 costs; ``P``, ``R`` as above (0 without GT relations);
- ``F1 = 2 / (1/P + 1/R)`` (0 when P + R = 0); ``SGG_Score = (F1_obj + F1_rel) / 2``.

An IoU that is not a number (a box with ``inf`` or ``nan``, which SceneGraphVLM's scorer stops on) counts 0.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.metrics.iou import sgvlm_iou_matrix
from sgg_eval.text.sgvlm.toon import ToonScene

IOU = 0.5


def prf(tp: int, n_pred: int, n_gt: int) -> tuple[float, float, float]:
    p = tp / n_pred if n_pred > 0 else 0.0
    r = tp / n_gt if n_gt > 0 else 0.0
    return p, r, (2.0 / (1.0 / p + 1.0 / r) if p + r > 0 else 0.0)


def sample_scores(gt: ToonScene, pred: ToonScene, iou_threshold: float = IOU) -> tuple[float, ...]:
    """``(P_obj, R_obj, F1_obj, P_rel, R_rel, F1_rel, SGG_Score)`` of one answered sample (module docstring)."""
    from scipy.optimize import linear_sum_assignment

    matches = []
    if gt.objects and pred.objects:
        iou = sgvlm_iou_matrix([o[2] for o in gt.objects], [o[2] for o in pred.objects])
        rows, cols = linear_sum_assignment(-iou)
        matches = [(g, q) for g, q in zip(rows.tolist(), cols.tolist()) if iou[g, q] >= iou_threshold]
    tp_obj = sum(gt.objects[g][1] == pred.objects[q][1] for g, q in matches)
    gt_of = {pred.objects[q][0]: gt.objects[g][0] for g, q in matches}  # a repeated answered id: the last wins
    cost = np.ones((len(gt.relations), len(pred.relations)))
    for i, (gs, gp, go) in enumerate(gt.relations):
        for j, (ps, pp, po) in enumerate(pred.relations):
            if gt_of.get(ps) == gs and gt_of.get(po) == go and gp == pp:
                cost[i, j] = 0
    rows, cols = linear_sum_assignment(cost)
    tp_rel = int((cost[rows, cols] == 0).sum())
    obj = prf(tp_obj, len(pred.objects), len(gt.objects))
    rel = prf(tp_rel, len(pred.relations), len(gt.relations))
    return (*obj, *rel, (obj[2] + rel[2]) / 2.0)
