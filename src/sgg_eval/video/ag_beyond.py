"""sgg-eval's own numbers on Action Genome, beside a protocol's (the document's ``beyond_protocol``): no AG
codebase computes them. Each is a reduction of the split's first-hit ranks (``video.sttran.FirstHits``) under one
constraint, over the frames the protocol scores; the training facts come from the training split the protocol's
loader builds (``sgg-eval split`` writes ``train.h5``; ``--ag-train``).

- ``zR@K``: over the frames with a zero-shot GT relation (its subject label, predicate and object label never
  together in a training relation), the mean of (zero-shot relations hit at K) / (zero-shot relations).
- ``IMR@K`` (docs/definitions.md's IMR, per frame): per predicate ``c``, the mean over the frames where ``c``
  occurs of (relations of ``c`` hit by the frame's first K triplets *predicted as* ``c``) / (relations of ``c``);
  the mean over the 26 predicates (absent ones count 0). ``wIMR@K`` weights predicate ``c`` by ``n_c^τ``,
  ``n_c`` the distinct (subject label, object label) pairs seen with ``c`` in training, as for boxes
  (docs/definitions.md; ``metrics.reduce.wimr_weights``; IMR at τ = 0).
- ``mR_per_frame_<group>@K`` and ``mR_pooled_<group>@K``: the mean of each mean recall's per-predicate values over
  the head, body and tail predicates, the groups made from the training counts by the ``frequency`` rule
  (``metrics.longtail.predicate_groups``: 2 head, 6 body, 18 tail of AG's 26).

``ngR@K`` is not repeated here: the ``no`` constraint *is* it (every predicate of every pair ranked by
``s(subject) s(object) p``), and its R@K is in ``metrics``. Means over frames are exactly rounded (``math.fsum``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sgg_eval.core.defaults import TAU
from sgg_eval.metrics.longtail import GROUPS, predicate_groups
from sgg_eval.metrics.reduce import weighted_mean, wimr_weights
from sgg_eval.video.ag_annotations import AGSplit
from sgg_eval.video.ag_metrics import Relations
from sgg_eval.video.ag_names import NUM_PREDICATES
from sgg_eval.video.sttran import K_VALUES, FirstHits, key_predicate, triplet_key

NEEDS_TRAIN = "zR@K, wIMR@K and the head/body/tail mean recalls need the training split (--ag-train train.h5)"


@dataclass(frozen=True)
class TrainingFacts:
    """What the training split tells: ``triplets`` (sorted keys of its distinct (subject label, predicate, object
    label) triplets), ``counts [26]`` (its relations per predicate: the head/body/tail order) and ``pairs [26]``
    (``n_c``: its distinct label pairs per predicate, wIMR's)."""

    triplets: np.ndarray
    counts: np.ndarray

    @property
    def pairs(self) -> np.ndarray:
        return np.bincount(key_predicate(self.triplets) - 1, minlength=NUM_PREDICATES)


def training_facts(train: AGSplit) -> TrainingFacts:
    """The facts of a training split (the frames the protocol's loader keeps for training)."""
    return TrainingFacts(np.unique(_triplet_keys(train)),
                         np.bincount(train.rels[:, 2] - 1, minlength=NUM_PREDICATES))  # fmt: skip


def _triplet_keys(split: AGSplit) -> np.ndarray:
    """Each GT relation's triplet (subject label, predicate, object label), as ``video.sttran.triplet_key``."""
    sub, obj = split.rel_boxes()
    return triplet_key(0, split.labels[sub], split.rels[:, 2], split.labels[obj])


def beyond_protocol(hits: FirstHits, relations: Relations, split: AGSplit, vocab_predicates: tuple[str, ...],
                    facts: TrainingFacts | None, mean_recalls: tuple[np.ndarray, np.ndarray],
                    tau: float = TAU) -> dict:  # fmt: skip
    """The ``beyond_protocol`` section of one constraint's results (module docstring): ``metrics`` and ``notes``.
    ``mean_recalls``: the per-predicate recalls ``[len(K), 26]`` of the two mean recalls, pooled and per frame."""
    metrics: dict[str, float | None] = {}
    imr = relations.predicate_recalls(hits.imr)[1]
    for i, k in enumerate(K_VALUES):
        metrics[f"IMR@{k}"] = weighted_mean(imr[i], np.ones(NUM_PREDICATES))
    if facts is None:
        return {"metrics": metrics, "notes": [NEEDS_TRAIN]}
    weights = wimr_weights(np.r_[0, facts.pairs], tau)
    zero_shot = ~np.isin(_triplet_keys(split), facts.triplets)
    frames_zs = np.bincount(relations.frame, weights=zero_shot, minlength=len(relations.counts))
    with_zs = frames_zs > 0
    pooled, per_frame = mean_recalls
    groups, _ = predicate_groups(vocab_predicates, facts.counts, "frequency")
    for i, k in enumerate(K_VALUES):
        metrics[f"wIMR@{k}"] = weighted_mean(imr[i], weights)
        hit = np.bincount(relations.frame, weights=zero_shot & (hits.ours < k), minlength=len(relations.counts))
        metrics[f"zR@{k}"] = (
            math.fsum(hit[with_zs] / frames_zs[with_zs]) / int(with_zs.sum()) if with_zs.any() else None
        )
        for name, values in (("mR_per_frame", per_frame), ("mR_pooled", pooled)):
            for g, group in enumerate(GROUPS):
                members = values[i][groups == g]
                metrics[f"{name}_{group}@{k}"] = float(np.mean(members)) if len(members) else None
    notes = [] if with_zs.any() else ["zR@K: no GT relation of the scored frames is zero-shot"]
    longtail = longtail_groups(vocab_predicates, facts.counts)
    return {"metrics": metrics, "notes": notes, "tau": tau, "zero_shot_relations": int(zero_shot.sum()),
            "longtail": {"rule": "frequency", **longtail}, "n_c": facts.pairs.tolist(),
            "per_predicate": {f"IMR@{k}": imr[i].tolist() for i, k in enumerate(K_VALUES)}}  # fmt: skip


def longtail_groups(predicates: tuple[str, ...], counts: np.ndarray) -> dict[str, list[str]]:
    """The head, body and tail predicates by the ``frequency`` rule on the training counts, each most frequent
    first."""
    groups, _ = predicate_groups(predicates, counts, "frequency")
    order = np.argsort(-np.asarray(counts), kind="stable")
    return {group: [predicates[p] for p in order if groups[p] == g] for g, group in enumerate(GROUPS)}


def wimr_at(beyond: dict, k: int, tau: float) -> float | None:
    """``wIMR@k`` at ``tau`` from a ``beyond_protocol`` section (its per-predicate IMR and ``n_c``): the same
    reduction as :func:`beyond_protocol`'s, for another τ without scoring again; None without the training
    split."""
    if "n_c" not in beyond:
        return None
    imr = np.asarray(beyond["per_predicate"][f"IMR@{k}"], dtype=np.float64)
    return weighted_mean(imr, wimr_weights(np.r_[0, beyond["n_c"]], tau))
