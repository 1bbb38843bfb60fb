"""The metrics document of a box evaluation under ``--protocol oiv6``: what PySGG's Open Images V6 evaluation
reports in ``metrics``, everything else sgg-eval computes in ``beyond_protocol`` (docs/oiv6.md).

PySGG's ``oi_evaluation`` runs two evaluators on the same images. The OI evaluator gives ``R@K`` (micro: the
OIv6 tables' R@50), ``R_per_image@K``, ``wmAP_rel``, ``wmAP_phr``, ``mAP_rel``, ``mAP_phr``, ``score_wtd`` (the
tables' score) and ``score`` (``metrics.oiv6``); the VG-style evaluator gives the tables' ``mR@K`` (over all
predicates, an absent one counting 0), ``ngR@K`` and a graph-constrained per-image recall that its log prints as
"R @ K" and that this document calls ``R_classic@K``, so that it is never mistaken for the tables' R@K. Those
three are the engine's reference-protocol values (Scene-Graph-Benchmark.pytorch's evaluator, which PySGG's
VG-style evaluator is).
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.defaults import RECALL_KS
from sgg_eval.data.types import Vocabulary
from sgg_eval.metrics.document import apart
from sgg_eval.metrics.names import OIV6_CLASSIC as CLASSIC
from sgg_eval.metrics.names import OIV6_PER_PREDICATE as PER_PREDICATE
from sgg_eval.metrics.names import metric_name
from sgg_eval.metrics.oiv6 import FINAL_K, OICollector, oiv6_values

# from the engine's document into the protocol's: (engine name, protocol name)
FROM_ENGINE = tuple(
    (metric_name(family, k, ng=ng), name)
    for k in RECALL_KS
    for family, ng, name in (
        ("R", False, metric_name(CLASSIC, k)),
        ("mR", False, metric_name("mR", k)),
        ("R", True, metric_name("R", k, ng=True)),
    )
)
SOURCE = "PySGG's Open Images V6 evaluation"


def oiv6_document(doc: dict, collected: OICollector, vocab: Vocabulary) -> dict:
    """``doc`` (the engine's document of the same run, reference protocol) as the oiv6 protocol reports it."""
    values, per_c = oiv6_values(collected, vocab.num_predicates)
    engine, engine_pp = doc["metrics"], doc["per_predicate"]
    metrics = {**values, **{name: engine.get(ours) for ours, name in FROM_ENGINE}}
    moved = {ours for ours, _ in FROM_ENGINE}
    per_predicate = {
        kind: {vocab.predicate_classes[c]: float(per_c[kind][c]) for c in range(vocab.num_predicates)}
        for kind in PER_PREDICATE
    }
    per_predicate.update({ours: engine_pp[ours] for ours, name in FROM_ENGINE if ours in engine_pp and ours == name})
    absent = int(np.count_nonzero(per_c["npos"] == 0))
    notes = [
        f"protocol oiv6: R@K is micro (hits over all {collected.images} images / all GT triplets; the OIv6 tables' "
        f"R@{FINAL_K}), from each pair's 2 best predicates and the 100 best triplets per image; R_per_image@K is "
        f"the per-image mean PySGG prints and the tables do not use; {CLASSIC}@K is the VG-style evaluator's "
        "graph-constrained per-image recall (PySGG's log: 'R @ K')",
        f"wmAP: per-predicate AP at overlap > 0.5 weighted by the predicate's GT triplets; score_wtd = 0.2 R@{FINAL_K} "
        "+ 0.4 wmAP_rel + 0.4 wmAP_phr; tied scores ranked stably (pair order, then image order), where the "
        "reference's order depends on the machine",
    ]
    if absent:
        notes.append(
            f"{absent} of {vocab.num_predicates} predicates have no GT triplet: AP 0 with weight 0 in wmAP, 0 in "
            "mAP and mR (mR@K averages all of them, as PySGG does)"
        )
    about = f"computed by sgg-eval on the same images, with the reference protocol's matching; not reported by {SOURCE}"
    return apart(doc, metrics, per_predicate, about, notes, moved)
