"""Streaming evaluation: (GT image, prediction image) pairs in, the metrics JSON out.

Owns only the loop, the task handling and the protocols; ranks come from ``ranks.py`` and reductions from
``reduce.py``. Protocols (docs/definitions.md §2): images without GT relations are always skipped; images without any
predicted pair are skipped in ``reference`` (as Scene-Graph-Benchmark.pytorch does) and count as all-miss
in ``strict``. Both report how many images were evaluated and skipped.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

import numpy as np

from sgg_eval.core.defaults import IMR_KS, IOU_THRESHOLD, RECALL_KS, RELATIVE_KS, TRIPLET_KS
from sgg_eval.core.errors import InputError
from sgg_eval.data.types import GTImage, PredImage, Vocabulary, triplet_key
from sgg_eval.metrics.detection import DET_METRICS, box_map
from sgg_eval.metrics.misuse import SIGNAL_KEYS, misuse_warnings
from sgg_eval.metrics.names import metric_name
from sgg_eval.metrics.options import EvalOptions, check_option
from sgg_eval.metrics.ranking.blocks import ImageSource, accumulate
from sgg_eval.metrics.reduce import Accumulator, f1_score, weighted_mean, wimr_weights
from sgg_eval.metrics.reductions import registered_metrics


def evaluate(
    pairs: Iterable[tuple[GTImage, PredImage]] | ImageSource,
    vocab: Vocabulary,
    opts: EvalOptions,
    *,
    source: str = "",
    triplet_counts: np.ndarray | None = None,
    num_pairs: np.ndarray | None = None,
    zeroshot: np.ndarray | None = None,
    zeroshot_source: str = "",
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Evaluate a stream of image pairs and return the metrics document (docs/definitions.md §3 / issue format).

    ``triplet_counts`` ``A[s, o, p]`` and ``num_pairs`` ``n_c`` come from the training statistics (wR_tr,
    wIMR); ``zeroshot`` ``[Z, 3]`` (s, o, p) is the zero-shot triplet set. ``jobs`` processes rank blocks of
    images in parallel (``metrics.ranking.blocks``; from an ``ImageSource`` each reads its own); the document is the
    same for any number. ``progress(n)`` is told the images done after each block.
    """
    sizes = (vocab.num_objects, vocab.num_predicates)
    zs_keys = None if zeroshot is None else triplet_key(zeroshot[:, 0], zeroshot[:, 1], zeroshot[:, 2], *sizes)
    acc, counts, boxes = accumulate(
        pairs, vocab, opts, source=source, zs_keys=zs_keys, triplet_counts=triplet_counts, jobs=jobs, progress=progress
    )
    signals = {key: counts.pop(key) for key in SIGNAL_KEYS}
    doc = finalize(
        acc,
        vocab,
        opts,
        counts,
        num_pairs=num_pairs,
        has_triplet_counts=triplet_counts is not None,
        zeroshot_source=zeroshot_source if zeroshot is not None else "",
    )
    if boxes is None:
        doc["metrics"].update(dict.fromkeys(DET_METRICS))
        doc["notes"].append("detector mAP is defined for SGDet only (PredCls and SGCls are given the GT boxes)")
    else:
        det, det_notes = box_map(boxes)
        doc["metrics"].update(det)
        doc["notes"] += det_notes
    doc["notes"] = misuse_warnings(signals, opts.task) + doc["notes"]  # warnings first: they matter most
    return doc


def require_evaluated(doc: dict, predictions: str, gt: str | None) -> None:
    """Refuse a document in which no image was evaluated: every metric would be null, from an empty input.
    Names the GT when no image has a GT relation, else the predictions (all of them empty)."""
    c = doc["counts"]
    if c["images_evaluated"]:
        return
    if c["images_skipped_no_gt"] == c["images_input"]:
        raise InputError(
            f"none of the {c['images_input']} images has a GT relation: nothing to evaluate", path=gt or predictions
        )
    raise InputError(
        f"none of the {c['images_input'] - c['images_skipped_no_gt']} images with GT relations has a "
        "predicted pair (every prediction is empty); --protocol strict counts them as misses",
        path=predictions,
    )


def finalize(
    acc: Accumulator,
    vocab: Vocabulary,
    opts: EvalOptions,
    counts: dict,
    *,
    num_pairs=None,
    has_triplet_counts: bool = False,
    zeroshot_source: str = "",
) -> dict:
    """Turn the accumulators into ``{"task", "protocol", "metrics", "per_predicate", "counts", "notes"}``."""
    metrics: dict[str, float | None] = {}
    per_pred: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    names = vocab.predicate_classes
    n = acc.images
    fam = acc.families

    def put(name: str, value, reason: str | None = None) -> None:
        metrics[name] = None if value is None else float(value)
        if value is None and reason and reason not in notes:
            notes.append(reason)

    def vector(name: str, values: np.ndarray) -> None:
        per_pred[name] = {names[c]: float(values[c]) for c in range(len(names))}

    uniform = np.ones(vocab.num_predicates)
    none_eval = "no image was evaluated" if n == 0 else None
    no_scores = (
        "NG, ng-IMR, ng-wIMR, R_tr and PRk need per-predicate scores, "
        "which this input does not have (ranked triplets only)"
    )
    for k in RECALL_KS:
        i = acc.k_index(k)
        for ng, family in ((False, "gc"), (True, "ng")):
            r_name, m_name, z_name, f_name = (metric_name(f, k, ng=ng) for f in ("R", "mR", "zR", "F1"))
            if n == 0 or family not in fam:
                reason = none_eval or no_scores
                for name in (r_name, m_name, z_name, f_name):
                    put(name, None, reason)
                continue
            put(r_name, acc.recall[family][i] / n)
            per_c = acc.per_predicate_recall(family)[:, i]
            put(m_name, weighted_mean(per_c, uniform))
            vector(m_name, per_c)
            put(f_name, f1_score(metrics[r_name], metrics[m_name]))
            if not zeroshot_source:
                put(z_name, None, "zero-shot recall needs a zero-shot set (--zeroshot FILE or --stats STATS)")
            elif acc.zs_images == 0:
                put(z_name, None, "no evaluated image has a zero-shot GT triplet")
            else:
                put(z_name, acc.zs_recall[family][i] / acc.zs_images)
        if "gt_pair" in fam and acc.acc_rows:
            put(metric_name("A", k), acc.acc_hits[i] / acc.acc_rows)
        else:
            put(metric_name("A", k), None, none_eval or "A@K is defined for PredCls and SGCls only")
        put(metric_name("PR", k), acc.recall["pair"][i] / n if n else None, none_eval)
    for k in IMR_KS:
        i = acc.k_index(k)
        for ng, family in ((False, "imr"), (True, "ng_imr")):
            name, w_name = metric_name("IMR", k, ng=ng), metric_name("wIMR", k, ng=ng)
            if n == 0 or family not in fam:
                put(name, None, none_eval or no_scores), put(w_name, None, none_eval or no_scores)
                continue
            imr_c = acc.per_predicate_recall(family)[:, i]
            put(name, weighted_mean(imr_c, uniform))
            vector(name, imr_c)
            if num_pairs is None:
                put(w_name, None, "wIMR needs the training statistics (--stats STATS) for n_c")
            else:
                put(w_name, weighted_mean(imr_c, wimr_weights(num_pairs, opts.tau)))
    for k in TRIPLET_KS:
        i = acc.k_index(k)
        if "triplet" not in fam or acc.tr_rows == 0:
            defined = not opts.task_spec.detects
            reason = none_eval or (no_scores if defined else "R_tr is defined for PredCls and SGCls only")
            put(metric_name("R_tr", k), None, reason), put(metric_name("wR_tr", k), None, reason)
            continue
        put(metric_name("R_tr", k), acc.tr_hits[i] / acc.tr_rows)
        if has_triplet_counts:
            put(metric_name("wR_tr", k), acc.wtr_hits[i] / acc.wtr_total)
        else:
            put(metric_name("wR_tr", k), None, "wR_tr needs the training statistics (--stats STATS) for n_t")
    if "prk" in fam and acc.prk_rows[1:].sum() > 0:
        has = acc.prk_rows[1:] > 0
        prk_c = np.divide(acc.prk_sum[1:], acc.prk_rows[1:], out=np.full(vocab.num_predicates, np.nan), where=has)
        put(metric_name("PRk"), float(np.mean(prk_c[has])))
        per_pred[metric_name("PRk")] = {names[c]: float(prk_c[c]) for c in range(len(names)) if has[c]}
        if not has.all():
            notes.append(f"PRk averages the {int(has.sum())} predicates with at least one matched GT pair")
    else:
        put(metric_name("PRk"), None, none_eval or no_scores)
    if opts.task_spec.detects:
        put(metric_name("InstR"), acc.inst / n if n else None, none_eval)
    else:
        put(metric_name("InstR"), None, "InstR is defined for SGDet only (GT boxes are given in PredCls and SGCls)")
    for j, k in enumerate(RELATIVE_KS):
        put(metric_name("R", k, relative=True), acc.rel_recall[j] / n if n else None, none_eval)
        if n:
            per_c = acc.relative_per_predicate()[:, j]
            put(metric_name("mR", k, relative=True), weighted_mean(per_c, uniform))
            vector(metric_name("mR", k, relative=True), per_c)
        else:
            put(metric_name("mR", k, relative=True), None, none_eval)
    metrics.update(registered_metrics(acc, vocab, opts, taken=set(metrics)))  # metrics/reductions.py
    absent = int((acc.pred_images[1:] == 0).sum())
    if n and absent:
        notes.append(f"{absent} predicates never occur in the evaluated GT and count as 0 in mR and IMR")
    if counts["images_skipped_no_pred"]:
        notes.append(
            f"{counts['images_skipped_no_pred']} images without any predicted pair were skipped "
            "(reference protocol); the strict protocol counts them as misses"
        )
    if zeroshot_source:
        notes.append(f"zero-shot set: {zeroshot_source}")
    if opts.task_spec.detects and opts.iou_threshold != IOU_THRESHOLD:
        notes.append(
            f"objects match at IoU >= {opts.iou_threshold} (the reference: {IOU_THRESHOLD}); det_mAP keeps COCO's "
            "thresholds (0.50:0.95, and 0.5 for det_mAP@50)"
        )
    return {
        "task": opts.task,
        "protocol": opts.protocol,
        "tau": opts.tau,
        "iou_threshold": opts.iou_threshold,
        "metrics": metrics,
        "per_predicate": per_pred,
        "counts": counts,
        "notes": notes,
    }


def with_tau(doc: dict, predicates: tuple[str, ...], num_pairs: np.ndarray, tau: float) -> dict:
    """``doc`` (a result of :func:`evaluate`) as if evaluated with wIMR exponent ``tau``.

    wIMR@K and ng-wIMR@K are ``weighted_mean(IMR_c@K, n_c^τ)`` over the per-predicate IMR@K vectors the
    document stores, looked up by ``predicates`` (the vocabulary's order, which the weights ``n_c`` follow;
    the JSON file sorts its keys). It is the evaluator's own formula on the same float64 values, so the
    result is bit-identical to a full evaluation at ``tau``; nothing else in the document depends on τ.
    Undefined values (no image evaluated, ranked-only input) stay undefined with their notes.
    """
    check_option("tau", tau)
    out = copy.deepcopy(doc)
    out["tau"] = float(tau)
    weights = wimr_weights(num_pairs, tau)
    for k in IMR_KS:
        for ng in (False, True):
            imr_name, wimr_name = metric_name("IMR", k, ng=ng), metric_name("wIMR", k, ng=ng)
            per_c = out["per_predicate"].get(imr_name)
            if per_c is None or out["metrics"].get(wimr_name) is None:
                continue
            imr = np.array([per_c[name] for name in predicates], dtype=np.float64)
            out["metrics"][wimr_name] = weighted_mean(imr, weights)
    return out
