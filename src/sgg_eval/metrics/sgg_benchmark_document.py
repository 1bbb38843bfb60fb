"""The metrics document of a box evaluation under ``--protocol sgg-benchmark``: what Maelic/SGG-Benchmark's relation
evaluator computes (``sgg_benchmark/data/datasets/evaluation/sgg_metrics.py`` @ a664201, docs/sgg_benchmark.md) in
``metrics``, everything else sgg-eval computes under the same matching in ``beyond_protocol``.

Every value is one the engine already computes, with the protocol's rules applied before the ranking (its IoU,
``metrics.iou.sgg_benchmark_iou``; its GT clip to ``[0, W]``; an image without a predicted pair counted as all-miss;
predictions taken in the stored order). Its names, ours on the left:

- ``R@K`` (``SGRecall``), ``mR@K`` (``SGMeanRecall``, every predicate, an absent one 0), ``F1@K`` (``SGF1Score``,
  ``2 R mR / (R + mR)``), ``zR@K`` (``SGZeroShotRecall``; seen = the training split's triplets), K = 20, 50, 100:
  what its evaluator prints by default;
- defined there and off by default: ``ngR@K`` (``SGNoGraphConstraintRecall``), ``ng-zR@K``
  (``SGNGZeroShotRecall``), ``A@K`` (``SGPairAccuracy``: PredCls and SGCls), and ``R@1x`` / ``mR@1x``, its
  "Relative" recall and mean recall (``SGRecallRelative``, ``SGMeanRecallRelative``: K = the image's GT count).
"""

from __future__ import annotations

from sgg_eval.core.defaults import RECALL_KS, RELATIVE_KS
from sgg_eval.core.tasks import task_spec
from sgg_eval.metrics.document import apart
from sgg_eval.metrics.names import metric_name

SOURCE = "SGG-Benchmark's relation evaluator"
# (family, ng) of its numbers, in the order it prints them, then the ones it defines but leaves off
PRINTED = (("R", False), ("mR", False), ("zR", False), ("F1", False))
DEFINED = (("R", True), ("zR", True), ("A", False))
RELATIVE_K = RELATIVE_KS[0]  # K = 1 x the image's GT count
assert RELATIVE_K == 1
# what it prints by default (the command prints them in this order), and its Relative recall and mean recall
PRINTED_NAMES = tuple(metric_name(f, k) for f, _ in PRINTED for k in RECALL_KS)
RELATIVE = tuple(metric_name(f, RELATIVE_K, relative=True) for f in ("R", "mR"))
OWN = PRINTED_NAMES + tuple(metric_name(f, k, ng=ng) for f, ng in DEFINED for k in RECALL_KS) + RELATIVE
# the columns of its table (report.sgg_benchmark_table): what it prints, K by K, then Relative
TABLE_COLUMNS = PRINTED_NAMES + RELATIVE
# its per-predicate list (``mean_recall_list``, printed at its largest K)
OWN_PER_PREDICATE = tuple(metric_name("mR", k) for k in RECALL_KS)


def sgg_benchmark_document(doc: dict) -> dict:
    """``doc`` (the engine's document of the same run, under this protocol's matching) as SGG-Benchmark reports it:
    its numbers in ``metrics``, the rest in ``beyond_protocol``."""
    engine, engine_pp = doc["metrics"], doc["per_predicate"]
    metrics = {name: engine.get(name) for name in OWN}
    metrics.update({name: value for name, value in engine.items() if name.startswith("IR@")})  # with --captions
    per_predicate = {name: engine_pp[name] for name in OWN_PER_PREDICATE if name in engine_pp}
    notes = [
        "protocol sgg-benchmark: objects match at IoU >= 0.5 with SGG-Benchmark's +1 pixel in the intersection only "
        "(a box 1 px wide never matches, a 2 x 3 box always does); predictions in the stored order; an image without "
        "a predicted pair counts as all-miss; R@1x and mR@1x are its Relative recall and mean recall (K = the image's "
        "GT count), which its code defines but cannot run at a664201",
    ]
    if task_spec(doc["task"]).detects:
        notes.append("its A@K prints 0.0000 in SGDet (SGPairAccuracy skips it), null here")
    about = f"computed by sgg-eval on the same images, with this protocol's matching; not reported by {SOURCE}"
    return apart(doc, metrics, per_predicate, about, notes)
