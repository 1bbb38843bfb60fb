"""The metrics document of an open-vocabulary protocol (``--protocol ovsgtr|vs3|pgsg``, docs/openvocab.md): in
``metrics`` what the protocol's evaluator reports, named for what it is; in ``beyond_protocol`` everything else
sgg-eval computes on the same images and GT, including its own families on the novel subsets.

- ``ovsgtr`` and ``vs3`` print the reference evaluator's R@K, ngR@K, mR@K, ng-mR@K, ng-zR@K (and A@K outside
  SGDet), OvSGTR its classic zR@K too, plus the subset recalls ``R_novel_obj@K`` (both ends novel) and
  ``R_novel_rel@K`` (novel predicate) of the setting. OvSGTR prints both subsets as "zR" (lines ending
  "type=Ovd Zero Shot Recall." and "type=Ovr Zero Shot Recall."); VS3 prints its novel-object recall as its "zR".
- ``pgsg``: R@K, PGSG's mR@K (Σ / (C + 0.001)), mR_novel@K and mR_seen@K at K = 20 … 300.
- Beyond, sgg-eval's families on each subset S (``metrics.names.OV_OURS``): ngR_S, mR_S and ng-mR_S (the mean of
  per-predicate recall on S's rows over the predicates with a row in S), zR_S and ng-zR_S (the rows of S that are
  also zero-shot triplets), IMR_S and wIMR_S (per-predicate IMR on S's rows, mean over the same predicates;
  wIMR weighted by n_c^τ).
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.defaults import IMR_KS, PGSG_KS, RECALL_KS
from sgg_eval.core.tasks import task_spec
from sgg_eval.data.types import Vocabulary
from sgg_eval.metrics.document import BEYOND
from sgg_eval.metrics.names import OV_OURS, OV_OURS_IMR, PGSG_MEANS, metric_name, openvocab_metric_names, subset_name
from sgg_eval.metrics.openvocab import OpenVocab, pgsg_mean_recalls
from sgg_eval.metrics.reduce import Accumulator, weighted_mean, wimr_weights

SOURCES = {"ovsgtr": "OvSGTR's evaluator", "vs3": "VS3's evaluator", "pgsg": "PGSG's (Pix2Grp's) evaluator"}
SUBSET_WORDS = {
    "novel_obj": "novel-object recall (subject and object both novel)",
    "novel_rel": "novel-relation recall (novel predicate)",
}


def openvocab_document(
    doc: dict, acc: Accumulator, vocab: Vocabulary, ov: OpenVocab, *, num_pairs=None, tau: float, zeroshot: bool
) -> dict:
    """``doc`` (the engine's reference-protocol document of the same run) as ``ov.protocol`` reports it."""
    engine, engine_pp = doc["metrics"], doc["per_predicate"]
    names = openvocab_metric_names(ov.protocol, ov.setting, gt_pairs=not task_spec(doc["task"]).detects)
    notes = [_about(ov)]
    if ov.rules.means_ks:
        own, own_pp = _pgsg_values(acc.subsets["all"], vocab, ov)
        notes.append(
            f"protocol pgsg: the first {ov.rules.skips_first:,} images of the split are not evaluated (PGSG's loader "
            f"keeps image_index[{ov.rules.skips_first}:]); mR@K = Σ_p p@K / ({vocab.num_predicates} + 0.001); "
            "mR_novel@K and mR_seen@K are plain means of p@K over the novel and the other predicates (absent ones "
            "count 0)"
        )
    else:
        own = {name: engine.get(name) for name in names if name in engine}
        own_pp = {name: engine_pp[name] for name in own if name in engine_pp}
        for subset, _ in ov.subsets():
            sub = acc.subsets.get(subset)
            images = sub.images if sub is not None else 0
            for k in RECALL_KS:
                own[subset_name("R", subset, k)] = sub.recall["gc"][sub.k_index(k)] / images if images else None
            notes.append(
                f"R_{subset}@K: {SUBSET_WORDS[subset]}, the mean over the {images} evaluated images with such a "
                "GT triplet"
            )
            if not images:
                notes.append(f"no evaluated image has a GT triplet of subset {subset}: R_{subset}@K is null")
    ours, ours_pp = {}, {}
    for subset, _ in ov.subsets() if not ov.rules.means_ks else ():
        values, per_c = subset_family(acc.subsets.get(subset), subset, num_pairs, tau, zeroshot)
        ours.update(values)
        ours_pp.update(per_c)
    beyond = {k: v for k, v in engine.items() if k not in own}
    beyond_pp = {k: v for k, v in engine_pp.items() if k not in own_pp}
    return {
        **doc,
        "metrics": own,
        "per_predicate": own_pp,
        BEYOND: {
            "about": f"computed by sgg-eval on the same images and GT, with the reference evaluator's matching; not "
            f"reported by {SOURCES[ov.protocol]}",
            "metrics": {**beyond, **ours},
            "per_predicate": {**beyond_pp, **{k: _named(v, vocab) for k, v in ours_pp.items()}},
        },
        "notes": notes + doc["notes"],
    }


def _about(ov: OpenVocab) -> str:
    """The protocol, setting and split, with the counts of the novel classes the setting uses (only those: a list
    the protocol does not read changes nothing in the document)."""
    used = {subset for subset, _ in ov.subsets()}
    counts = [f"{len(ov.novel_objects)} novel object classes"] if "novel_obj" in used else []
    counts += [f"{len(ov.novel_predicates)} novel predicates"] if used & {"novel_rel", "all"} else []
    return f"protocol {ov.protocol}, setting {ov.setting}: split {ov.split} ({ov.source}; {', '.join(counts)})"


def _named(per_c: np.ndarray, vocab: Vocabulary) -> dict:
    """A subset's per-predicate vector by name, over the predicates with a row in the subset only."""
    return {name: float(v) for name, v in zip(vocab.predicate_classes, per_c) if not np.isnan(v)}


def _pgsg_values(sub: Accumulator, vocab: Vocabulary, ov: OpenVocab) -> tuple[dict, dict]:
    """PGSG's numbers from the ``all`` subset, accumulated at its K."""
    values, per_pred = {}, {}
    if sub is None or not sub.images:
        return {metric_name(f, k): None for f in ("R", "mR", *PGSG_MEANS) for k in PGSG_KS}, {}
    novel = np.zeros(vocab.num_predicates + 1, dtype=bool)
    novel[list(ov.novel_predicates)] = True
    per_c = sub.per_predicate_recall("gc")
    means = pgsg_mean_recalls(per_c, novel)
    for j, k in enumerate(PGSG_KS):
        values[metric_name("R", k)] = sub.recall["gc"][j] / sub.images
        for family in ("mR", *PGSG_MEANS):
            v = means[family][j]
            values[metric_name(family, k)] = None if np.isnan(v) else float(v)
        per_pred[metric_name("mR", k)] = {name: float(v) for name, v in zip(vocab.predicate_classes, per_c[:, j])}
    return values, per_pred


def subset_family(
    sub: Accumulator | None, subset: str, num_pairs, tau: float, zeroshot: bool
) -> tuple[dict, dict[str, np.ndarray]]:
    """sgg-eval's families on a subset's rows (module docstring): values by name, and per-predicate vectors
    (NaN for a predicate without a row in the subset)."""
    values, per_pred = {}, {}
    present = sub.pred_images[1:] > 0 if sub is not None and sub.images else None
    for family, ng in OV_OURS:
        for k in RECALL_KS:
            values[subset_name(family, subset, k, ng=ng)] = None
    for family in OV_OURS_IMR:
        for k in IMR_KS:
            values[subset_name(family, subset, k)] = None
    if present is None:
        return values, per_pred
    for family, ng in OV_OURS:
        rank_family = "ng" if ng else "gc"
        if rank_family not in sub.families:
            continue
        for k in RECALL_KS:
            j, name = sub.k_index(k), subset_name(family, subset, k, ng=ng)
            if family == "R":
                values[name] = sub.recall[rank_family][j] / sub.images
            elif family == "mR":
                per_c = sub.per_predicate_recall(rank_family)[:, j]
                values[name] = float(np.mean(per_c[present]))
                per_pred[name] = np.where(present, per_c, np.nan)
            elif zeroshot and sub.zs_images:
                values[name] = sub.zs_recall[rank_family][j] / sub.zs_images
    if "imr" in sub.families:
        for k in IMR_KS:
            imr_c = sub.per_predicate_recall("imr")[:, sub.k_index(k)]
            values[subset_name("IMR", subset, k)] = float(np.mean(imr_c[present]))
            per_pred[subset_name("IMR", subset, k)] = np.where(present, imr_c, np.nan)
            if num_pairs is not None:
                weights = wimr_weights(num_pairs, tau)
                values[subset_name("wIMR", subset, k)] = weighted_mean(imr_c[present], weights[present])
    return values, per_pred
