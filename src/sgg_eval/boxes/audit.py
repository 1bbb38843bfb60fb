"""``sgg-eval audit``: evaluate a prediction file once and report every variant of R@K and mR@K that the
literature mixes, and which of them published numbers match (``metrics/variants.py``, ``docs/variants.md``)."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np

from sgg_eval.boxes.sources import open_predictions
from sgg_eval.boxes.split_gt import clips_gt
from sgg_eval.core.defaults import IOU_THRESHOLD, PROTOCOL
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import OPEN_IMAGES_DOCUMENT
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.metrics.oiv6 import oiv6_values
from sgg_eval.metrics.openvocab import OpenVocab
from sgg_eval.metrics.openvocab_variants import as_dicts, match_novel, novel_markdown, novel_variants
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.metrics.ranking.blocks import accumulate
from sgg_eval.metrics.variants import match_published, oiv6_variants, parse_published, variants, variants_markdown


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
) -> dict:
    """The variants of one file's evaluation (all images, and the first ``subset`` when the file has more),
    and a verdict per published value (``"mR@100=12.3"``, percent, compared to its printed precision). With
    ``protocol="oiv6"`` the OI evaluator's R@K (micro and per image) are variants too, micro the reference."""
    for text in published:
        try:
            parse_published(text)
        except ValueError as exc:
            raise InputError(str(exc), field="--published") from None
    path = os.fspath(path)
    source = open_predictions(path, gt=gt)
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
            "subset": subset if first is not None else None,
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
            else "the reference variant in bold"
        ),
    )
    if doc["published"]:
        text += "\n" + "\n".join(f"- `{p['published']}`: {p['verdict']}" for p in doc["published"]) + "\n"
    return text
