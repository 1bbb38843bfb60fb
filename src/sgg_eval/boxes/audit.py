"""``sgg-eval audit``: evaluate a prediction file once and report every variant of R@K and mR@K that the
literature mixes, and which of them published numbers match (``metrics/variants.py``, ``docs/variants.md``)."""

from __future__ import annotations

import os
from dataclasses import replace
from functools import partial

import numpy as np

from sgg_eval.boxes.sources import open_predictions
from sgg_eval.boxes.split_gt import clips_gt
from sgg_eval.core.defaults import IOU_THRESHOLD, PROTOCOL
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import OPEN_IMAGES_DOCUMENT, SGG_BENCHMARK_DOCUMENT
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.data.coco_sgg import one_per_pair
from sgg_eval.data.types import GTImage
from sgg_eval.metrics.oiv6 import oiv6_values
from sgg_eval.metrics.openvocab import OpenVocab
from sgg_eval.metrics.openvocab_variants import as_dicts, match_novel, novel_markdown, novel_variants
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.metrics.ranking.blocks import accumulate
from sgg_eval.metrics.variants import (
    TOOLKIT_IOUS,
    match_published,
    oiv6_variants,
    parse_published,
    toolkit_variants,
    variants,
    variants_markdown,
)


def run_audit(
    path: str | os.PathLike,
    task: str,
    *,
    gt: str | None = None,
    subset: int = 1000,
    published: tuple[str, ...] = (),
    jobs: int = 1,
    iou_threshold: float = IOU_THRESHOLD,
    protocol: str = PROTOCOL,
    draw_seed: int = 0,
) -> dict:
    """The variants of one file's evaluation (all images, and the first ``subset`` when the file has more),
    and a verdict per published value (``"mR@100=12.3"``, percent, compared to its printed precision). With
    ``protocol="oiv6"`` the OI evaluator's R@K (micro and per image) are variants too, micro the reference. With
    ``protocol="sgg-benchmark"``, SGG-Benchmark's evaluator against Scene-Graph-Benchmark's (:func:`_toolkit_audit`;
    ``draw_seed``: its one-predicate-per-pair draw, on a split that keeps every relation)."""
    for text in published:
        try:
            parse_published(text)
        except ValueError as exc:
            raise InputError(str(exc), field="--published") from None
    path = os.fspath(path)
    source = open_predictions(path, gt=gt)
    if protocol_record(protocol).document == SGG_BENCHMARK_DOCUMENT:
        return _toolkit_audit(source, path, task, protocol, published, jobs, iou_threshold, draw_seed)
    opts = EvalOptions(
        task=task, protocol=PROTOCOL, order=source.order, score_kind=source.score_kind, iou_threshold=iou_threshold,
        clip_gt=clips_gt(protocol, source.gt_boxes),  # the GT as the protocol's loader (each of them clips) reads it
    )  # fmt: skip
    # only recall counts are needed (and, for OIv6, the OI evaluator's records): no detector boxes
    collectors = protocol_record(protocol).collects
    acc, counts, oi = accumulate(source, source.vocab, opts, source=path, jobs=jobs, collectors=collectors)
    first = first_oi = None
    if 0 < subset < counts["images_input"]:
        first, _, first_oi = accumulate(
            replace(source, count=subset), source.vocab, opts, source=path, jobs=jobs, collectors=collectors
        )
    rows = variants(acc, first, subset)
    if "oi_records" in collectors:
        sets = [("all", oi)] + ([(f"first {subset}", first_oi)] if first is not None else [])
        rows = oiv6_variants(
            rows, [(name, oiv6_values(c["oi_records"], source.vocab.num_predicates)[0]) for name, c in sets]
        )
    subset_images = subset if first is not None else None
    return _document(source, path, task, protocol, iou_threshold, counts, subset_images, rows, published)


def _drawn_gt(source, seed: int):
    """``source`` with each GT image's relations reduced to one predicate per pair, drawn as SGG-Benchmark's loader
    draws them (``data.coco_sgg.one_per_pair``, one ``RandomState(seed)`` over the images in order)."""
    draw = np.random.RandomState(seed)
    drawn = [
        np.array(one_per_pair([tuple(r) for r in gt.rels.tolist()], draw), dtype=np.int64).reshape(-1, 3)
        for gt, _ in source.pairs()
    ]
    return replace(source, read=partial(_read_drawn, source.read, drawn))


def _read_drawn(read, drawn: list, start: int, stop: int):
    for i, (gt, pred) in enumerate(read(start, stop), start):
        yield GTImage(gt.image_id, gt.width, gt.height, gt.boxes, gt.labels, drawn[i]), pred


def _toolkit_audit(
    source, path: str, task: str, protocol: str, published, jobs: int, iou_threshold: float, seed: int
) -> dict:
    """The box variants under both IoUs (Scene-Graph-Benchmark's ``+1`` in the intersection and the areas,
    SGG-Benchmark's in the intersection only) and both test GTs (every relation, and one predicate per pair drawn
    with ``seed``, where the split keeps every relation; else the split's own). The reference: SGG-Benchmark's."""
    stored = source.gt_extra.get("relations", "as the split holds them")
    gts = [(f"as stored ({stored})", None, stored.startswith("one predicate per pair"))]
    if stored == "every relation":
        gts.append((f"one predicate per pair, drawn with seed {seed}", seed, True))
    rows, counts = [], {}
    clip = clips_gt(PROTOCOL, source.gt_boxes)
    for gt_name, draw, is_its in gts:
        drawn = source if draw is None else _drawn_gt(source, draw)
        for iou in TOOLKIT_IOUS:
            opts = EvalOptions(task=task, protocol=PROTOCOL, order=source.order, score_kind=source.score_kind,
                               iou_threshold=iou_threshold, clip_gt=clip, box_iou=iou)  # fmt: skip
            acc, counts, _ = accumulate(drawn, source.vocab, opts, source=path, jobs=jobs)
            rows += toolkit_variants(variants(acc), iou, gt_name, is_its)
    return _document(source, path, task, protocol, iou_threshold, counts, None, rows, published)


def _document(source, path, task, protocol, iou_threshold, counts, subset, rows, published) -> dict:
    """The audit's JSON: the input, the image counts, every variant and a verdict per published value."""
    return {
        "input": {"path": os.fspath(path), "format": source.fmt},
        "task": task,
        "protocol": protocol,
        "iou_threshold": iou_threshold,
        "images": {
            "input": counts["images_input"],
            "evaluated": counts["images_evaluated"],
            "without_predicted_pairs": counts["images_skipped_no_pred"],
            "without_gt_relations": counts["images_skipped_no_gt"],
            "subset": subset,
        },
        "variants": [v.as_dict() for v in rows],
        "published": [match_published(text, rows) for text in published],
    }


def run_openvocab_audit(
    path: str | os.PathLike,
    task: str,
    *,
    gt: str | None = None,
    published: tuple[str, ...] = (),
    jobs: int = 1,
    split_file: str | None = None,
    zeroshot: str | None = None,
) -> dict:
    """Every rule papers call novel or zero-shot recall (``metrics/openvocab_variants.py``) on one file, with the
    shipped splits (OvSGTR's objects and predicates, PGSG's predicates) or ``split_file``, and a verdict per
    published value (``"zR@50=12.3"``)."""
    from sgg_eval.data.openvocab import read_split_file, shipped_split
    from sgg_eval.data.types import triplet_key
    from sgg_eval.formats.zeroshot import load_zeroshot

    for text in published:
        try:
            match_novel(text, [], "")
        except ValueError as exc:
            raise InputError(str(exc), field="--published") from None
    path = os.fspath(path)
    source = open_predictions(path, gt=gt)
    vocab = source.vocab
    split = read_split_file(split_file, vocab) if split_file else shipped_split("ovsgtr")
    objects, predicates = (tuple(int(i) for i in np.flatnonzero(m)) for m in split.masks(vocab))
    if split_file:  # the means over novel predicates: the file's, or OvSGTR's and PGSG's
        lists = {split.name: predicates} if predicates else {}
    else:
        lists = {
            "OvSGTR": predicates,
            "PGSG": tuple(int(i) for i in np.flatnonzero(shipped_split("pgsg").masks(vocab)[1])),
        }
    ov = OpenVocab("ovsgtr", "ovd+r", objects, predicates, split.name, split.source, audit=True)
    opts = EvalOptions(task=task, order=source.order, score_kind=source.score_kind, openvocab=ov,
                       clip_gt=clips_gt(PROTOCOL, source.gt_boxes))  # fmt: skip
    zs_keys = None
    if zeroshot:
        zs = load_zeroshot(zeroshot)[0]
        zs_keys = triplet_key(zs[:, 0], zs[:, 1], zs[:, 2], vocab.num_objects, vocab.num_predicates)
    acc, counts, _ = accumulate(source, vocab, opts, source=path, jobs=jobs, zs_keys=zs_keys)
    rows = novel_variants(acc, lists, zeroshot=zs_keys is not None)
    return {
        "input": {"path": path, "format": source.fmt},
        "task": task,
        "protocol": "openvocab",
        "split": {"name": split.name, "source": split.source, "test_images_h5_key": source.split_key},
        "images": {"input": counts["images_input"], "evaluated": counts["images_evaluated"]},
        "variants": as_dicts(rows),
        "published": [match_novel(text, rows, source.split_key) for text in published],
    }


def audit_markdown(doc: dict) -> str:
    """The audit as Markdown: the variants table, then one line per published value."""
    images = doc["images"]
    if doc.get("protocol") == "openvocab":
        text = novel_markdown(
            doc["variants"],
            f"Open-vocabulary recall by rule: {doc['input']['path']}, {doc['task']}, {images['evaluated']} of "
            f"{images['input']} images evaluated (test images of h5 key {doc['split']['test_images_h5_key']}); "
            f"novel classes: {doc['split']['source']}; percent",
        )
        return text + "".join(f"- `{p['published']}`: {p['verdict']}\n" for p in doc["published"])
    text = variants_markdown(
        doc["variants"],
        f"Variants of R@K and mR@K: {doc['input']['path']}, {doc['task']}, "
        f"{images['evaluated']} of {images['input']} images evaluated "
        f"({images['without_predicted_pairs']} without predicted pairs); percent, "
        + (
            "the variant PySGG's Open Images V6 evaluation reports in bold (protocol oiv6)"
            if protocol_record(doc.get("protocol", PROTOCOL)).document == OPEN_IMAGES_DOCUMENT
            else "the variant SGG-Benchmark's evaluator computes in bold (protocol sgg-benchmark)"
            if protocol_record(doc.get("protocol", PROTOCOL)).document == SGG_BENCHMARK_DOCUMENT
            else "the reference variant in bold"
        ),
    )
    if doc["published"]:
        text += "\n" + "\n".join(f"- `{p['published']}`: {p['verdict']}" for p in doc["published"]) + "\n"
    return text
