"""Streaming evaluation: (GT image, prediction image) pairs in, the metrics JSON out.

Owns only the loop, the task handling and the protocols; ranks come from ``metrics.ranking``, their reduction
from ``reduce.py`` and the document from ``document.py`` (the table) with ``box_values.py`` (the box values).
Protocols (docs/definitions.md §2): images without GT relations are always skipped; images without any predicted
pair are skipped in ``reference`` (as Scene-Graph-Benchmark.pytorch does) and count as all-miss in ``strict``.
Both report how many images were evaluated and skipped. ``oiv6`` is ``reference`` plus the Open Images V6
evaluator's numbers over every image, laid out as PySGG reports them (``oiv6_document``). ``ovsgtr``, ``vs3`` and
``pgsg`` are ``reference`` on the GT as each codebase's loader prepares it, plus the recall of the novel subsets
(``metrics.openvocab``), laid out as each reports them (``openvocab_document``); ``pgsg`` starts at image 5,000.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from sgg_eval.core.defaults import IMR_KS, IOU_THRESHOLD, OPENVOCAB_PROTOCOLS
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import SGG_BENCHMARK_DOCUMENT
from sgg_eval.data.types import GTImage, PredImage, Vocabulary, triplet_key
from sgg_eval.metrics.box_values import BoxValues
from sgg_eval.metrics.detection import DET_METRICS, box_map
from sgg_eval.metrics.document import BEYOND, Document, fill
from sgg_eval.metrics.longtail import subset_recalls
from sgg_eval.metrics.misuse import SIGNAL_KEYS, misuse_warnings
from sgg_eval.metrics.names import OV_SUBSETS, metric_name, subset_name
from sgg_eval.metrics.oiv6_document import oiv6_document
from sgg_eval.metrics.openvocab_document import openvocab_document
from sgg_eval.metrics.options import EvalOptions, check_option
from sgg_eval.metrics.ranking.blocks import ImageSource, accumulate
from sgg_eval.metrics.reduce import Accumulator, weighted_mean, wimr_weights
from sgg_eval.metrics.reductions import registered_metrics
from sgg_eval.metrics.sgg_benchmark_document import sgg_benchmark_document


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
    on_records: Callable[[list[dict]], None] | None = None,
) -> dict:
    """Evaluate a stream of image pairs and return the metrics document (docs/definitions.md §3 / issue format).

    ``triplet_counts`` ``A[s, o, p]`` and ``num_pairs`` ``n_c`` come from the training statistics (wR_tr,
    wIMR); ``zeroshot`` ``[Z, 3]`` (s, o, p) is the zero-shot triplet set. ``jobs`` processes rank blocks of
    images in parallel (``metrics.ranking.blocks``; from an ``ImageSource`` each reads its own); the document is the
    same for any number. ``progress(n)`` is told the images done after each block; with ``opts.per_image``,
    ``on_records`` is given the per-image graphs block by block (``ranking.per_image``).
    """
    sizes = (vocab.num_objects, vocab.num_predicates)
    zs_keys = None if zeroshot is None else triplet_key(zeroshot[:, 0], zeroshot[:, 1], zeroshot[:, 2], *sizes)
    collectors = opts.collectors
    if (opts.protocol in OPENVOCAB_PROTOCOLS) != (opts.openvocab is not None):
        raise ValueError("an open-vocabulary protocol needs its OpenVocab (metrics.openvocab.open_vocab)")
    if opts.rules.skips_first:
        pairs = skip_first(pairs, opts.rules.skips_first, source)
    acc, counts, collected = accumulate(
        pairs,
        vocab,
        opts,
        source=source,
        zs_keys=zs_keys,
        triplet_counts=triplet_counts,
        jobs=jobs,
        collectors=collectors,
        progress=progress,
        on_records=on_records,
    )
    return document(
        acc,
        counts,
        collected,
        vocab,
        opts,
        num_pairs=num_pairs,
        has_triplet_counts=triplet_counts is not None,
        zeroshot=zeroshot,
        zeroshot_source=zeroshot_source,
    )


def document(
    acc: Accumulator,
    counts: dict,
    collected: dict,
    vocab: Vocabulary,
    opts: EvalOptions,
    *,
    num_pairs: np.ndarray | None = None,
    has_triplet_counts: bool = False,
    zeroshot: np.ndarray | None = None,
    zeroshot_source: str = "",
) -> dict:
    """The metrics document of accumulated images (``ranking.blocks.accumulate``'s three results; ``counts``
    is left as it was): :func:`finalize`, then the detector's box mAP, the Open Images V6 and the
    open-vocabulary layouts, and the misuse warnings first among the notes."""
    counts = dict(counts)
    signals = {key: counts.pop(key) for key in SIGNAL_KEYS}
    doc = finalize(
        acc,
        vocab,
        opts,
        counts,
        num_pairs=num_pairs,
        has_triplet_counts=has_triplet_counts,
        zeroshot_source=zeroshot_source if zeroshot is not None else "",
    )
    if "boxes" not in collected:
        doc["metrics"].update(dict.fromkeys(DET_METRICS))
        doc["notes"].append("detector mAP is defined for SGDet only (PredCls and SGCls are given the GT boxes)")
    else:
        det, det_notes = box_map(collected["boxes"])
        doc["metrics"].update(det)
        doc["notes"] += det_notes
    if "oi_records" in collected:
        doc = oiv6_document(doc, collected["oi_records"], vocab)
    if "informative" in collected:
        doc["metrics"].update(collected["informative"].metrics())
        doc["counts"]["images_without_captions"] = collected["informative"].without_captions
    if opts.rules.document == SGG_BENCHMARK_DOCUMENT:
        doc = sgg_benchmark_document(doc)
    if opts.openvocab is not None:
        doc = openvocab_document(
            doc, acc, vocab, opts.openvocab, num_pairs=num_pairs, tau=opts.tau, zeroshot=zeroshot is not None
        )
        if opts.rules.skips_first:
            doc["counts"]["images_not_evaluated_by_protocol"] = opts.rules.skips_first
    doc["notes"] = misuse_warnings(signals, opts.task) + doc["notes"]  # warnings first: they matter most
    return doc


@dataclass
class _From:
    """An image source without its first ``start`` images."""

    inner: ImageSource
    start: int

    @property
    def count(self) -> int:
        return self.inner.count - self.start

    def read(self, lo: int, hi: int) -> Iterator[tuple[GTImage, PredImage]]:
        return self.inner.read(lo + self.start, hi + self.start)

    def release(self, lo: int, hi: int) -> None:
        if getattr(self.inner, "release", None) is not None:
            self.inner.release(lo + self.start, hi + self.start)


def skip_first(pairs, n: int, source: str):
    """``pairs`` (a stream or an :class:`ImageSource`) without its first ``n`` images; a source of no more than
    ``n`` images is refused (nothing would be evaluated)."""
    if hasattr(pairs, "read") and hasattr(pairs, "count"):
        if pairs.count <= n:
            raise InputError(
                f"{pairs.count} images: PGSG does not evaluate the first {n:,} images of its test split, so nothing "
                "is left to evaluate",
                path=source,
            )
        return _From(pairs, n)
    return itertools.islice(pairs, n, None)


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
    """Turn the accumulators into ``{"task", "protocol", "metrics", "per_predicate", "counts", "notes"}``: the
    table of ``metrics.document`` filled with the box values (``metrics.box_values``), then the registered
    reductions, then the notes about the run."""
    doc = Document(vocab.predicate_classes)
    values = BoxValues(
        doc,
        acc,
        vocab,
        opts,
        num_pairs=num_pairs,
        has_triplet_counts=has_triplet_counts,
        zeroshot_source=zeroshot_source,
    )
    fill(doc, values.table())
    doc.metrics.update(registered_metrics(acc, taken=set(doc.metrics)))  # metrics/reductions.py
    if opts.longtail is not None:
        doc.metrics.update(subset_recalls(acc))  # R@K on the head, body and tail rows
    notes = doc.notes
    absent = int((acc.pred_images[1:] == 0).sum())
    if acc.images and absent:
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
    out = {
        "task": opts.task,
        "protocol": opts.protocol,
        "tau": opts.tau,
        "iou_threshold": opts.iou_threshold,
        "metrics": doc.metrics,
        "per_predicate": doc.per_predicate,
        "counts": counts,
        "notes": notes,
    }
    if "prk" in acc.families:
        out["confusion"] = confusion_section(acc.confusion, vocab.predicate_classes)
    return out


def confusion_section(confusion: np.ndarray, predicates: tuple[str, ...]) -> dict:
    """The predicate confusion matrix of a run: ``counts[g][t]`` GT rows of predicate ``g`` whose subject and
    object are matched (the task's matching) and whose first matching pair in GC order (PRk's pair) ranks
    predicate ``t`` first; a row sums to the matched GT rows of its predicate. Vocabulary order."""
    return {
        "about": "rows: GT predicate; columns: the predicate its matched pair (the first in GC order) ranks first; "
        "GT rows whose subject and object are matched",
        "predicates": list(predicates),
        "counts": confusion[1:, 1:].astype(np.int64).tolist(),
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
    for section in (out, out.get(BEYOND)):  # a protocol's document (oiv6) has them beyond its own numbers
        if section is None:
            continue
        for k in IMR_KS:
            for ng in (False, True):
                imr_name, wimr_name = metric_name("IMR", k, ng=ng), metric_name("wIMR", k, ng=ng)
                per_c = section["per_predicate"].get(imr_name)
                if per_c is None or section["metrics"].get(wimr_name) is None:
                    continue
                # a predicate in no evaluated image is left out of the listing, and counts 0 in IMR and wIMR
                imr = np.array([per_c.get(name, 0.0) for name in predicates], dtype=np.float64)
                section["metrics"][wimr_name] = weighted_mean(imr, weights)
            for subset in OV_SUBSETS:  # an open-vocabulary subset's: over the predicates with a row in it
                per_c = section["per_predicate"].get(subset_name("IMR", subset, k))
                wimr_name = subset_name("wIMR", subset, k)
                if per_c is None or section["metrics"].get(wimr_name) is None:
                    continue
                imr = np.array([per_c.get(n, np.nan) for n in predicates], dtype=np.float64)
                present = ~np.isnan(imr)
                section["metrics"][wimr_name] = weighted_mean(imr[present], weights[present])
    return out
