"""Panoptic SGG: the metric family of a run from its accumulated ranks (``panoptic_ranks``), by protocol.

Each protocol is a matching, a ranked list and an averaging (sources: ``docs/metrics.md``, "Panoptic SGG"):

- ``sgbench`` (1.0.0's code): a prediction stands for its best same-class GT instance if IoU ≥ 0.5 (many
  predictions may stand for one); the gc list is ``triplets`` without duplicates; an absent image counts 0;
  the mean over predicates is ``null`` when a predicate occurs in no evaluated image (sgbench prints NaN).
- ``sgbench-paper`` (its Algorithms 2-6 and Eq. 2): the best same-class GT instance if IoU > 0.5, one
  prediction per GT instance (the highest IoU); the gc list under the graph constraint; an absent image
  counts 0; mR is per image over its predicates (Eq. 2), then over images.
- ``openpsg`` (OpenPSG's evaluator): per triplet, same classes and IoU ≥ 0.5 at both ends; the gc list is
  ``triplets`` as given; images without a prediction or a row are skipped; a predicate never seen counts 0.

With ``hit_i(r, K) = rank_i(r) < K`` for GT row r of evaluated image i (M_i rows, predicates P_i), I the
evaluated images and A the test images with relations absent from the predictions (A = 0 under openpsg):

- ``R@K = Σ_i hits_i(K) / M_i / (|I| + A)``; ``ngR@K`` the same on the ng list; ``PR@K`` on distinct GT pairs;
  ``R@k×`` with ``K_i = round(k · M_i)``; ``R@inf`` with the reach ranks; ``InstR = Σ_i matched_i / N_i /
  (|I| + A)``.
- ``mR@K``: ``r_c = mean over images i ∈ I with c ∈ P_i of hits_i(c, K) / count_i(c)``, then
  sgbench: ``mean_c r_c`` over all C predicates, ``null`` when some c is in no P_i (sgbench prints NaN);
  openpsg: the same with such a c counting 0; sgbench-paper (Eq. 2):
  ``Σ_i (1/|P_i|) Σ_{c ∈ P_i} hits_i(c, K) / count_i(c) / (|I| + A)``. ``ng-mR@K``, ``mR@k×`` and ``mR@inf``
  alike.
- ``F1@K = 2 R mR / (R + mR)`` (``reduce.f1_score``), ``ng-F1@K`` from ngR and ng-mR.
- ``IMR@K`` (K = 10, 20, 50): the IMR paper's definition under every protocol: per predicate c the mean over
  images containing it of the share of its rows hit by the first K gc rows predicting c, then the mean over
  all C (absent predicates 0).
- ``zR@K`` (and ``ng-zR@K``), with statistics of PSG's training split: the mean over images with a zero-shot
  GT row (class triplet never in training) of the share of those rows hit, absent images with one counting
  0 (not under openpsg). ``wIMR@K = Σ_c n_c^τ IMR_c@K / Σ_c n_c^τ`` (``reduce.wimr_weights``).
- ``PRk`` (sgbench's PRank) from per-image cells ``prk_i(c)``: sgbench pools every defined (image, predicate)
  cell; sgbench-paper (Algorithm 6 in Algorithm 1) averages each image's cells, then the images with one;
  openpsg has none (``null``).
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.defaults import IMR_KS, RECALL_KS, RELATIVE_KS
from sgg_eval.metrics.names import metric_name
from sgg_eval.metrics.reduce import Accumulator, f1_score, weighted_mean

_AT_K = tuple(metric_name(f, k) for f in ("R", "mR") for k in RECALL_KS)
_PAPER = (
    *(metric_name(f, k, ng=ng) for f, ng in (("PR", False), ("R", True), ("mR", True)) for k in RECALL_KS),
    *(metric_name(f, "inf") for f in ("R", "mR")),
    *(metric_name(f, k, relative=True) for f in ("R", "mR") for k in RELATIVE_KS),
)
# The numbers each protocol's source reports (docs/metrics.md), a document's "metrics": OpenPSG's evaluator
# gives R@K and mR@K only (its no-graph-constraint branch is off for masks); the sgbench 1.0.0 command prints
# those, InstR and PRank; the SGBench paper adds pair recall, the ng family, R@inf and the relative k. Every
# other number sgg-eval computes under a protocol's matching and averaging (IMR, wIMR, F1, zR, ...) is
# beyond that protocol and goes to a section of its own (:data:`BEYOND`), never beside the protocol's numbers.
PROTOCOL_METRICS = {
    "openpsg": _AT_K,
    "sgbench": (*_AT_K, metric_name("InstR"), metric_name("PRk")),
    "sgbench-paper": (*_AT_K, *_PAPER, metric_name("InstR"), metric_name("PRk")),
}
SOURCES = {
    "openpsg": "OpenPSG's evaluator",
    "sgbench": "the sgbench 1.0.0 command",
    "sgbench-paper": "the SGBench paper",
}
BEYOND = "beyond_protocol"


def split_by_protocol(metrics: dict, per_predicate: dict, protocol: str) -> tuple[dict, dict, dict]:
    """``(metrics, per_predicate, beyond)``: the protocol's own numbers, and the section of the rest (its
    ``about`` says what they are)."""
    own = PROTOCOL_METRICS[protocol]
    beyond = {
        "about": f"computed by sgg-eval with the {protocol} protocol's matching and averaging; not reported by "
        f"{SOURCES[protocol]}",
        "metrics": {k: v for k, v in metrics.items() if k not in own},
        "per_predicate": {k: v for k, v in per_predicate.items() if k not in own},
    }
    return (
        {k: v for k, v in metrics.items() if k in own},
        {k: v for k, v in per_predicate.items() if k in own},
        beyond,
    )


def every_metric(doc: dict) -> dict:
    """A panoptic document's metrics and those beyond its protocol, as one mapping (tables, MLflow, tests)."""
    return {**doc["metrics"], **doc.get(BEYOND, {}).get("metrics", {})}


def every_per_predicate(doc: dict) -> dict:
    return {**doc["per_predicate"], **doc.get(BEYOND, {}).get("per_predicate", {})}


def psg_metrics(
    acc: Accumulator,
    reach: Accumulator,
    prk_cells: np.ndarray,
    absent: int,
    protocol: str,
    predicates: tuple[str, ...],
    has_ng: bool,
    *,
    zs: bool = False,
    absent_zs: int = 0,
    wimr_weights: np.ndarray | None = None,
) -> tuple[dict, dict, list[str]]:
    """``(metrics, per_predicate, notes)`` of a run (module docstring). ``prk_cells [images, C]`` (NaN where
    undefined) for the evaluated images; ``absent``: test images with relations and no prediction, of which
    ``absent_zs`` have a zero-shot row; ``zs``: the rows were flagged zero-shot; ``wimr_weights``: n_c^τ."""
    metrics: dict[str, float | None] = {}
    per_pred: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    n = acc.images
    over = n + (0 if protocol == "openpsg" else absent)

    def recall(total: float) -> float | None:
        return float(total / over) if over else None

    def mean_recall(name: str, sums: np.ndarray, image_sum: float, images_c: np.ndarray) -> float | None:
        """One m-type value from ``sums [C]`` (Σ over images containing c) and the per-image sum (Eq. 2)."""
        if not n:
            return None
        seen = images_c > 0
        r_c = np.divide(sums, images_c, out=np.zeros(len(sums)), where=seen)
        per_pred[name] = {predicates[c]: float(r_c[c]) for c in np.flatnonzero(seen)}
        if protocol == "sgbench-paper":
            return float(image_sum / over)
        if protocol == "sgbench" and not seen.all():
            note = (
                f"mR-type metrics are undefined (null): {int((~seen).sum())} predicates never occur in the "
                "GT of an evaluated image (sgbench prints NaN)"
            )
            if note not in notes:
                notes.append(note)
            return None
        return float(r_c.mean())

    images_c = acc.pred_images[1:]
    zs_over = acc.zs_images + (0 if protocol == "openpsg" else absent_zs)
    for k in RECALL_KS:
        i = acc.k_index(k)
        for ng, family in ((False, "gc"), (True, "ng")):
            r_name, m_name, f_name, z_name = (metric_name(f, k, ng=ng) for f in ("R", "mR", "F1", "zR"))
            if family == "ng" and not has_ng:
                metrics[r_name] = metrics[m_name] = metrics[f_name] = metrics[z_name] = None
                continue
            metrics[r_name] = recall(acc.recall[family][i])
            metrics[m_name] = mean_recall(m_name, acc.per_pred[family][1:, i], acc.image_mean[family][i], images_c)
            both = metrics[r_name] is not None and metrics[m_name] is not None
            metrics[f_name] = f1_score(metrics[r_name], metrics[m_name]) if both else None
            metrics[z_name] = _zero_shot(acc, family, i, zs, zs_over, notes)
        metrics[metric_name("PR", k)] = recall(acc.recall["pair"][i])
    if not has_ng:
        notes.append("ngR, ng-mR and ng-F1 need ng_triplets, which no image of the predictions has: null")
    for k in IMR_KS:
        i = acc.k_index(k)
        imr_c = acc.per_predicate_recall("imr")[:, i]
        metrics[metric_name("IMR", k)] = float(imr_c.mean()) if n else None
        metrics[metric_name("wIMR", k)] = weighted_mean(imr_c, wimr_weights) if n and wimr_weights is not None else None
        if n:
            per_pred[metric_name("IMR", k)] = {predicates[c]: float(imr_c[c]) for c in range(len(predicates))}
    if wimr_weights is None:
        notes.append(
            "zR@K and wIMR@K need statistics of the PSG training split: sgg-eval stats --psg psg.json "
            "-o stats.h5, then --stats stats.h5"
        )
    i = reach.k_index(RECALL_KS[0])
    metrics[metric_name("R", "inf")] = recall(reach.recall["gc"][i])
    metrics[metric_name("mR", "inf")] = mean_recall(
        metric_name("mR", "inf"), reach.per_pred["gc"][1:, i], reach.image_mean["gc"][i], images_c
    )
    for j, k in enumerate(RELATIVE_KS):
        metrics[metric_name("R", k, relative=True)] = recall(acc.rel_recall[j])
        metrics[metric_name("mR", k, relative=True)] = mean_recall(
            metric_name("mR", k, relative=True), acc.rel_per_pred[1:, j], acc.image_mean["rel"][j], images_c
        )
    metrics[metric_name("InstR")] = recall(acc.inst)
    metrics[metric_name("PRk")] = _predicate_rank(prk_cells, protocol, notes)
    return metrics, per_pred, notes


def _zero_shot(acc: Accumulator, family: str, i: int, zs: bool, over: int, notes: list[str]) -> float | None:
    """``zR@K``: the mean over images with a zero-shot GT row of the share of those rows hit (``reduce``)."""
    if not zs:
        return None
    if not over:
        note = "no evaluated image has a zero-shot GT triplet: zR@K is null"
        if note not in notes:
            notes.append(note)
        return None
    return float(acc.zs_recall[family][i] / over)


def _predicate_rank(cells: np.ndarray, protocol: str, notes: list[str]) -> float | None:
    if protocol == "openpsg":
        notes.append("PRk needs an instance mapping, which OpenPSG's per-triplet matching has not: null")
        return None
    defined = ~np.isnan(cells)
    if not defined.any():
        notes.append("PRk needs ng_triplets that hit a GT triplet; none does")
        return None
    if protocol == "sgbench":
        return float(cells[defined].mean())
    has = defined.any(axis=1)
    per_image = np.where(defined, cells, 0.0).sum(axis=1)[has] / defined.sum(axis=1)[has]
    return float(per_image.mean())
