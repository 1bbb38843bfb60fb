"""``sgg-eval audit``: every variant of R@K and mR@K the literature mixes, and which one a published number is."""

from __future__ import annotations

import argparse
import sys

from sgg_eval.cli.options import add_iou_threshold, add_jobs, bounded, seed
from sgg_eval.core.defaults import PROTOCOL
from sgg_eval.core.protocols import (
    OPEN_IMAGES_DOCUMENT,
    SGG_BENCHMARK_DOCUMENT,
    STTRAN_ATTENTION,
    STTRAN_ATTENTION_KINDS,
    registered,
)
from sgg_eval.core.tasks import SGDET, TASKS

# --protocol openvocab: every open-vocabulary protocol's rules of novel and zero-shot recall at once (not a protocol)
OPENVOCAB_AUDIT = "openvocab"
# the protocols whose tool's variants the box audit computes beside the reference's
AUDITED_DOCUMENTS = (OPEN_IMAGES_DOCUMENT, SGG_BENCHMARK_DOCUMENT)

_EPILOG_AUDIT = """examples: which variant is a paper's mR@100 = 12.3 (and R@100 = 66.1)?
  sgg-eval audit eval_results.pytorch --task predcls --published "mR@100=12.3" --published "R@100=66.1"
  # a PSG paper's R@20 and mR@20: which protocol and instance mode produce them?
  sgg-eval audit submission.zip --psg psg.json --psg-root coco/ --published "R@20=28.4" --published "mR@20=17.3"
  # an Open Images V6 paper's R@50 = 75.0: micro (the OI evaluator's, the tables') or per image?
  sgg-eval audit eval_results.pytorch --gt data/oiv6/splits/test.h5 --task sgdet --protocol oiv6 --published "R@50=75.0"
  # an SGG-Benchmark paper's R@50 = 28.1 beside a Scene-Graph-Benchmark one: which IoU and which test GT?
  sgg-eval audit predictions.pth --gt data/indoorvg/test.h5 --task predcls --protocol sgg-benchmark \
      --published "R@50=28.1"
  # an open-vocabulary paper's zR@50 = 12.3: novel-object, novel-relation or zero-shot recall, on which images?
  sgg-eval audit eval_results.pytorch --gt data/vg150_glipunseen/splits/test.h5 --task sgdet --protocol openvocab \
      --zeroshot vg150 --published "zR@50=12.3"
  # an Action Genome paper's R@20 = 33.2: which constraint, mean recall and matching (STTran's or OED's)?
  sgg-eval audit preds_sgdet/ --ag data/ag/splits --task sgdet --published "R@20=33.2" --published "mR@20=9.1"
  # an MLLM's text scene graphs beside a trained model: what was each number computed over?
  sgg-eval audit mllm_asmv2.json --compare sgdet_metrics.json
"""


def run_audit(args: argparse.Namespace) -> None:
    """``sgg-eval audit``: metrics documents compared, or a prediction file's variants (PSG or boxes)."""
    from sgg_eval.io.atomic import write_json, write_text

    if args.compare or _is_result(args.predictions):
        return _audit_results(args)
    if args.attention and not args.ag:
        from sgg_eval.core.errors import InputError

        raise InputError("--attention is Action Genome's: give it with --ag", field="--attention")
    if args.ag:
        doc, text = _audit_video(args)
    else:
        doc, text = _audit_psg(args) if args.psg else _audit_boxes(args)
    if args.output:
        write_json(args.output, doc)
    if args.md:
        write_text(args.md, text)
    print(text, end="")
    if any(not p.get("reference", True) and p["matches"] for p in doc["published"]):
        print("warning: a published value matches a variant other than the reference", file=sys.stderr)


def _audit_video(args: argparse.Namespace) -> tuple[dict, str]:
    from sgg_eval.core.errors import InputError
    from sgg_eval.video.ag_audit import run_video_audit, video_audit_markdown

    given = (("--gt", args.gt), ("--psg", args.psg), ("--protocol", args.protocol),
             ("--subset", args.subset is not None), ("--iou-threshold", args.iou_threshold is not None))  # fmt: skip
    others = [flag for flag, on in given if on]
    if others:
        raise InputError(f"--ag audits every Action Genome protocol at IoU 0.5: no {others[0]}", field=others[0])
    if args.task is None:
        raise InputError("--task is required with --ag (predcls, sgcls or sgdet)", field="--task")
    doc = run_video_audit(args.predictions, args.ag, args.task, args.attention, tuple(args.published))
    return doc, video_audit_markdown(doc)


def _audit_psg(args: argparse.Namespace) -> tuple[dict, str]:
    from sgg_eval.core.errors import InputError
    from sgg_eval.io.processes import default_jobs
    from sgg_eval.panoptic.audit import psg_audit_markdown, run_psg_audit

    others = args.gt or args.iou_threshold is not None or args.subset is not None or args.protocol
    if args.task not in (None, SGDET.name) or others:
        raise InputError(
            "--psg audits panoptic SGG (sgdet) at IoU 0.5 on every test image, under every protocol: no --gt, "
            "--protocol, other --task, --iou-threshold or --subset",
            field="--psg",
        )
    jobs = args.jobs or default_jobs()
    doc = run_psg_audit(args.predictions, args.psg, args.psg_root or "", published=tuple(args.published), jobs=jobs)
    return doc, psg_audit_markdown(doc)


def _audit_boxes(args: argparse.Namespace) -> tuple[dict, str]:
    from sgg_eval.boxes.audit import audit_markdown, run_audit, run_openvocab_audit
    from sgg_eval.core.errors import InputError
    from sgg_eval.io.processes import default_jobs

    if args.task is None:
        raise InputError("--task is required (predcls, sgcls or sgdet), unless --psg is given", field="--task")
    if args.psg_root:
        raise InputError("--psg-root is for panoptic SGG: give --psg", field="--psg")
    given = {k: v for k, v in (("iou_threshold", args.iou_threshold), ("subset", args.subset)) if v is not None}
    openvocab = args.protocol == OPENVOCAB_AUDIT
    if (args.split_file or args.zeroshot) and not openvocab:
        raise InputError("--split-file and --zeroshot are for --protocol openvocab", field="--protocol")
    if openvocab and given:
        raise InputError("--protocol openvocab audits every image at IoU 0.5: no --subset or --iou-threshold")
    from sgg_eval.core.protocols import protocol as protocol_record

    toolkit = args.protocol not in (None, OPENVOCAB_AUDIT) and protocol_record(args.protocol).document == (
        SGG_BENCHMARK_DOCUMENT
    )
    if args.draw_seed is not None and not toolkit:
        raise InputError("--draw-seed is for --protocol sgg-benchmark", field="--draw-seed")
    if toolkit and args.subset is not None:
        raise InputError("--protocol sgg-benchmark audits every image: no --subset", field="--subset")
    if toolkit:
        given["draw_seed"] = args.draw_seed or 0
    common = {"gt": args.gt, "published": tuple(args.published), "jobs": args.jobs or default_jobs()}
    if openvocab:
        extra = {"split_file": args.split_file, "zeroshot": args.zeroshot}
        doc = run_openvocab_audit(args.predictions, args.task, **common, **extra)
    else:
        doc = run_audit(args.predictions, args.task, **common, protocol=args.protocol or PROTOCOL, **given)
    return doc, audit_markdown(doc)


def _is_result(path: str) -> bool:
    """Whether ``path`` is a metrics document sgg-eval wrote (a JSON object with its metrics and counts)."""
    if not path.endswith(".json"):
        return False
    import json

    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
        doc = json.loads(head) if len(head) < 1 << 20 else None
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and "metrics" in doc and "counts" in doc


def _audit_results(args: argparse.Namespace) -> None:
    """What each metrics document was computed over, and where they part (``metrics.result_facts``)."""
    import os

    from sgg_eval.core.errors import InputError
    from sgg_eval.io.atomic import write_json, write_text
    from sgg_eval.io.jsonio import load_json
    from sgg_eval.metrics.result_facts import facts_markdown, facts_of

    others = [f for f, on in (("--gt", args.gt), ("--task", args.task), ("--psg", args.psg),
                              ("--protocol", args.protocol), ("--published", args.published)) if on]  # fmt: skip
    if others:
        raise InputError(f"auditing metrics documents takes --compare, -o and --md only, not {others[0]}",
                         field=others[0])  # fmt: skip
    named = []
    for path in [args.predictions, *args.compare]:
        doc = load_json(path)
        try:
            facts_of(doc if isinstance(doc, dict) else {})
        except ValueError as exc:
            raise InputError(str(exc), path=path) from None
        named.append((os.path.basename(path), doc))
    text = facts_markdown(named)
    if args.output:
        write_json(args.output, {"results": [{"file": n, "facts": facts_of(d)} for n, d in named]})
    if args.md:
        write_text(args.md, text)
    print(text, end="")


def add(sub) -> None:
    """The sub-command ``audit`` of ``sub``."""
    p = sub.add_parser(
        "audit",
        help="every variant of R@K and mR@K the literature mixes, and which one a published number is",
        description="Evaluate once and report R@K and mR@K per-image vs pooled (and mR over the "
        "present predicates only), with and without graph constraint, images without "
        "predictions skipped vs counted as misses, all images vs the first N. "
        "Definitions and sources: docs/variants.md.",
        epilog=_EPILOG_AUDIT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "predictions",
        help="eval_results.pytorch, SGBench JSON, or an sgg-eval prediction store (.h5); "
        "with --psg: an SGBench ZIP, folder or JSON, or OpenPSG's submit folder",
    )
    p.add_argument("--gt", help="ground-truth split store (needed for SGBench JSON and prediction stores)")
    p.add_argument("--task", choices=TASKS, help="required, except with --psg")
    psg = p.add_argument_group(
        "panoptic SGG (PSG): every protocol (openpsg, sgbench, sgbench-paper) on masks and boxes"
    )
    psg.add_argument("--psg", metavar="PSG_JSON", help="OpenPSG's psg.json: audit on its test split")
    psg.add_argument("--psg-root", metavar="DIR", help="the COCO root its pan_seg_file_name are relative to")
    p.add_argument(
        "--published",
        action="append",
        default=[],
        metavar="METRIC@K=VALUE",
        help="a published value in percent, e.g. 'mR@100=12.3' (repeatable); ngR@K and ng-mR@K "
        "restrict the match to no-graph-constraint variants",
    )
    video = p.add_argument_group("video scene graphs on Action Genome: sttran and oed, every constraint, both mR")
    video.add_argument("--ag", metavar="SPLITS", help="the folder `sgg-eval split --ag-dir` wrote (or one split "
                       "store): audit PREDICTIONS, a video-SGG model's per-video dicts, on it")  # fmt: skip
    video.add_argument("--attention", choices=STTRAN_ATTENTION_KINDS, default=None,
                       help=f"with --ag: what attention_distribution holds (default: {STTRAN_ATTENTION})")  # fmt: skip
    _add_variants(p)
    add_iou_threshold(p, default=None)
    add_jobs(p)
    p.add_argument(
        "--compare",
        metavar="RESULT",
        action="append",
        default=[],
        help="PREDICTIONS is a metrics JSON sgg-eval wrote: say what it and each RESULT were computed over (images, "
        "constraint, pooling, failures, K) and flag the pairs that cannot be compared",
    )
    p.add_argument("-o", "--output", help="write the audit JSON here")
    p.add_argument("--md", help="write the audit as Markdown here")
    p.set_defaults(func=run_audit)


def _add_variants(p: argparse.ArgumentParser) -> None:
    """The options that choose which variants are audited."""
    p.add_argument(
        "--protocol",
        choices=[PROTOCOL, *(p.name for p in registered() if p.document in AUDITED_DOCUMENTS), OPENVOCAB_AUDIT],
        default=None,
        help="oiv6: an Open Images V6 result, audited against the OI evaluator's R@K too (micro, the tables' R@50, "
        "and per image; docs/oiv6.md); sgg-benchmark: an SGG-Benchmark result, under both IoUs (its +1 in the "
        "intersection only, Scene-Graph-Benchmark's) and both test GTs (every relation, one predicate per pair; "
        "docs/sgg_benchmark.md); openvocab: a novel or zero-shot number (zR@K, R_novel_obj@K, R_novel_rel@K, "
        "mR_novel@K, mzR@K) against every rule papers use: both or either end novel, novel predicate, zero-shot "
        "triplet, mean over novel predicates (docs/openvocab.md) (default: reference)",
    )
    p.add_argument(
        "--draw-seed",
        type=seed,
        default=None,
        help="with --protocol sgg-benchmark, on a split that keeps every relation: the seed of its one-predicate-"
        "per-pair draw (default: 0)",
    )
    p.add_argument("--split-file", metavar="FILE", help="with --protocol openvocab: your own base/novel split")
    p.add_argument(
        "--zeroshot", help="with --protocol openvocab: a zero-shot triplet file, or 'vg150', for the zero-shot rule"
    )
    p.add_argument(
        "--subset",
        type=bounded(int, 0, 10**9),
        default=None,
        help="also report the first N images (0: no subset; default: 1000)",
    )
