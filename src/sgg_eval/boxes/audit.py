"""``sgg-eval audit``: evaluate a prediction file once and report every variant of R@K and mR@K that the
literature mixes, and which of them published numbers match (``metrics/variants.py``, ``docs/variants.md``)."""

from __future__ import annotations

import os
from dataclasses import replace

from sgg_eval.boxes.sources import open_predictions
from sgg_eval.core.defaults import IOU_THRESHOLD, PROTOCOL
from sgg_eval.core.errors import InputError
from sgg_eval.metrics.oiv6 import oiv6_values
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
        task=task, protocol=PROTOCOL, order=source.order, score_kind=source.score_kind, iou_threshold=iou_threshold
    )
    # only recall counts are needed (and, for OIv6, the OI evaluator's records): no detector boxes
    collectors = ("oiv6",) if protocol == "oiv6" else ()
    acc, counts, oi = accumulate(source, source.vocab, opts, source=path, jobs=jobs, collectors=collectors)
    first = first_oi = None
    if 0 < subset < counts["images_input"]:
        first, _, first_oi = accumulate(
            replace(source, count=subset), source.vocab, opts, source=path, jobs=jobs, collectors=collectors
        )
    rows = variants(acc, first, subset)
    if protocol == "oiv6":
        sets = [("all", oi)] + ([(f"first {subset}", first_oi)] if first is not None else [])
        rows = oiv6_variants(rows, [(name, oiv6_values(c["oiv6"], source.vocab.num_predicates)[0]) for name, c in sets])
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


def audit_markdown(doc: dict) -> str:
    """The audit as Markdown: the variants table, then one line per published value."""
    images = doc["images"]
    text = variants_markdown(
        doc["variants"],
        f"Variants of R@K and mR@K: {doc['input']['path']}, {doc['task']}, "
        f"{images['evaluated']} of {images['input']} images evaluated "
        f"({images['without_predicted_pairs']} without predicted pairs); percent, "
        + (
            "the variant PySGG's Open Images V6 evaluation reports in bold (protocol oiv6)"
            if doc.get("protocol") == "oiv6"
            else "the reference variant in bold"
        ),
    )
    if doc["published"]:
        text += "\n" + "\n".join(f"- `{p['published']}`: {p['verdict']}" for p in doc["published"]) + "\n"
    return text
