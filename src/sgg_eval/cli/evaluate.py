"""``sgg-eval evaluate`` (box-based SGG, or panoptic SGG with ``--psg``) and ``psg-pack``."""

from __future__ import annotations

import argparse
import sys

from sgg_eval.cli.options import add_iou_threshold, add_jobs, bounded, option, seed
from sgg_eval.cli.video import add_evaluate_options, check_video_options, evaluate_video
from sgg_eval.core.defaults import (
    IR_ENCODER,
    LONGTAIL_RULE,
    LONGTAIL_RULES,
    OPENVOCAB_PROTOCOLS,
    OPENVOCAB_SETTINGS,
    PER_IMAGE_K,
    PROTOCOL,
    PROVISION_SBERT_MODEL,
    PROVISION_TOP_K,
    PSG_PROTOCOL,
    PSG_PROTOCOLS,
    RECALL_KS,
    TAU,
)
from sgg_eval.core.defaults import PROTOCOLS as BOX_PROTOCOLS
from sgg_eval.core.protocols import OPEN_IMAGES_DOCUMENT, SGG_BENCHMARK_DOCUMENT, registered
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.core.tasks import SGDET, TASKS
from sgg_eval.metrics.names import metric_name

_EPILOG_EVALUATE = """PREDICTIONS may be a Scene-Graph-Benchmark.pytorch eval_results.pytorch (ground truth inside,
zip or legacy torch format, read without torch), SGG-Benchmark's predictions.pth, an SGBench JSON, or an
sgg-eval prediction store; the last three need --gt. Metrics needing training statistics (wIMR, wR_tr,
computed zero-shot set) are null with a reason unless --stats is given. Values in the JSON are fractions.

examples:
  sgg-eval evaluate checkpoints/motifs/inference/VG_stanford_filtered_with_attribute_test/eval_results.pytorch \\
      --task predcls --stats data/vg150/stats/stats.h5 -o motifs_predcls.json
  sgg-eval evaluate preds.h5 --gt data/vg150_sim/splits/test.h5 --task sgdet --protocol strict
  # SGG-Benchmark (REACT): its predictions.pth on the split `sgg-eval split --coco-sgg` made, as its evaluator
  sgg-eval evaluate predictions.pth --gt data/indoorvg/test.h5 --stats data/indoorvg/stats.h5 --task predcls \
      --protocol sgg-benchmark -o react_predcls.json
  # Open Images V6 (PySGG/BGNN's eval_results.pytorch, its split from `sgg-eval split --oiv6-dir`)
  sgg-eval evaluate eval_results.pytorch --gt data/oiv6/splits/test.h5 --task sgdet --protocol oiv6 -o oiv6.json
  # open-vocabulary SGG: OvSGTR's OvD+R numbers (Base+Novel R@K, novel-object and novel-relation R@K) on the
  # GLIP-unseen test images (a split made with --split-key split_GLIPunseen --no-clip)
  sgg-eval evaluate preds.h5 --gt data/vg150_glipunseen/splits/test.h5 --task sgdet --protocol ovsgtr --setting ovd+r
  # panoptic SGG: an SGBench submission (ZIP of triplets.json + TIFF masks) on PSG's test split
  sgg-eval evaluate submission.zip --psg psg.json --psg-root coco/ -o psg_metrics.json
  # video SGG on Action Genome: STTran's recall under the semi constraint (per-video .pt files of its model)
  sgg-eval evaluate preds/ --ag data/ag/splits/test.h5 --task predcls --constraint semi -o ag_predcls_semi.json
"""


def run_evaluate(args: argparse.Namespace) -> None:
    """``sgg-eval evaluate``: the product its options name (``--psg``, ``--text-graphs``, else boxes)."""
    from sgg_eval.core.errors import InputError

    if args.per_image and (args.psg or args.text_graphs):
        raise InputError("--per-image is for box tasks (--task), not --psg or --text-graphs", field="--per-image")
    if (args.captions or args.ir_encoder != IR_ENCODER) and (args.psg or args.text_graphs or args.ag):
        raise InputError("--captions and --ir-encoder are for box tasks (--protocol sgg-benchmark)", field="--captions")
    check_video_options(args)
    if args.ag:
        return evaluate_video(args)
    if args.psg:
        return _evaluate_psg(args)
    if args.text_graphs:
        from sgg_eval.cli.evaluate_text import evaluate_text

        return evaluate_text(args)
    return _evaluate_boxes(args)


def _evaluate_boxes(args: argparse.Namespace) -> None:
    from sgg_eval.core.errors import InputError
    from sgg_eval.io.atomic import write_json
    from sgg_eval.io.processes import default_jobs

    if args.task is None:
        raise InputError("--task is required (predcls, sgcls or sgdet), unless --psg is given", field="--task")
    if args.protocol in PSG_PROTOCOLS or args.boxes or args.psg_root:
        raise InputError(
            f"--protocol {' or '.join(PSG_PROTOCOLS)}, --boxes and --psg-root are for panoptic SGG: give --psg",
            field="--psg",
        )
    from sgg_eval.boxes.evaluate import run_evaluation

    args.protocol = args.protocol or PROTOCOL
    given = {k: v for k, v in (("tau", args.tau), ("iou_threshold", args.iou_threshold)) if v is not None}
    result = run_evaluation(
        args.predictions,
        args.task,
        gt=args.gt,
        protocol=args.protocol,
        stats=args.stats,
        zeroshot=args.zeroshot,
        **given,
        progress=sys.stderr.isatty(),
        jobs=args.jobs or default_jobs(),
        setting=args.setting,
        split_file=args.split_file,
        longtail=args.longtail,
        per_image=args.per_image,
        captions=args.captions,
        ir_encoder=args.ir_encoder,
    )
    if args.output:
        write_json(args.output, result)
    _print_boxes(result, args.protocol)


def _print_boxes(result: dict, protocol: str) -> None:
    """The protocol's headline numbers (its own printer for OIv6's and the open-vocabulary documents), then the
    counts."""
    if protocol_record(protocol).document == OPEN_IMAGES_DOCUMENT:
        return _print_oiv6(result)
    if protocol in OPENVOCAB_PROTOCOLS:
        return _print_openvocab(result)
    m = result["metrics"]
    if protocol_record(protocol).document == SGG_BENCHMARK_DOCUMENT:  # what its evaluator prints, in its order
        from sgg_eval.metrics.sgg_benchmark_document import PRINTED_NAMES

        shown = [*PRINTED_NAMES, *(k for k in m if k.startswith("IR@"))]
        print(" ".join(_shown(k, m[k]) for k in shown))
        return _print_counts(result, "")
    headline = [metric_name(f, k) for f in ("R", "mR") for k in RECALL_KS]
    shown = [k for k in [*headline, metric_name("IMR", 20), metric_name("wIMR", 20)] if m.get(k) is not None]
    print(" ".join(f"{k}={100 * m[k]:.2f}" for k in shown))
    _print_counts(result, "")


def _print_counts(result: dict, scored: str) -> None:
    """The image counts (``scored``: what the other evaluator of a protocol saw, before them), then the
    warnings on stderr."""
    from sgg_eval.metrics.misuse import warning_summary

    c = result["counts"]
    print(
        f"{scored}{c['images_evaluated']} of {c['images_input']} images evaluated "
        f"({c['images_skipped_no_gt']} without GT relations, {c['images_skipped_no_pred']} without predicted pairs)"
    )
    warnings = warning_summary(result["notes"])
    if warnings:
        print(warnings, file=sys.stderr)


def _print_oiv6(result: dict) -> None:
    """The OIv6 table's columns as BGNN prints them, sgg-eval's own numbers on a line that says so, the counts."""
    from sgg_eval.metrics.document import BEYOND
    from sgg_eval.metrics.names import OIV6_CLASSIC, OIV6_TABLE

    own, beyond = result["metrics"], result[BEYOND]["metrics"]
    print(" ".join(_shown(k, own[k]) for k in OIV6_TABLE) + " (protocol oiv6: R@50 micro)")
    extra = (metric_name("R_per_image", 50), metric_name(OIV6_CLASSIC, 50), metric_name("R", 50, ng=True))
    print(" ".join(_shown(k, own[k]) for k in extra))
    ours = [_shown(k, beyond[k]) for k in (metric_name("IMR", 20), metric_name("wIMR", 20), metric_name("F1", 50))]
    print(f"sgg-eval's own, beyond protocol oiv6 (beyond_protocol in the JSON): {' '.join(ours)}")
    _print_counts(result, f"OI evaluator: all {result['counts']['images_input']} images; VG-style one (mR@K): ")


def _print_openvocab(result: dict) -> None:
    """The protocol's numbers as its evaluator prints them, under the names sgg-eval gives them, then the counts."""
    from sgg_eval.metrics.document import BEYOND
    from sgg_eval.metrics.names import OV_SUBSETS, PGSG_MEANS, subset_name

    own, beyond, protocol = result["metrics"], result[BEYOND]["metrics"], result["protocol"]
    if means_ks := protocol_record(protocol).means_ks:
        for family in ("R", "mR", *PGSG_MEANS):
            print(" ".join(_shown(metric_name(family, k), own[metric_name(family, k)]) for k in means_ks))
    else:
        print(" ".join(_shown(metric_name(f, k), own[metric_name(f, k)]) for f in ("R", "mR") for k in RECALL_KS))
        labels = {"novel_obj": "novel objects", "novel_rel": "novel relations"}
        for subset in OV_SUBSETS:
            names = [subset_name("R", subset, k) for k in RECALL_KS]
            if names[0] in own:
                print(" ".join(_shown(n, own[n]) for n in names) + f" ({labels[subset]}; {_printed_as(protocol)})")
                ours = [subset_name("mR", subset, 50), subset_name("R", subset, 50, ng=True)]
                print(f"  sgg-eval's own on them (beyond_protocol): {' '.join(_shown(n, beyond.get(n)) for n in ours)}")
    c = result["counts"]
    changed = [f"{c[k]} {one if c[k] == 1 else many}" for k, (one, many) in _PREPARED.items() if c.get(k)]
    _print_counts(result, f"GT as {protocol} prepares it ({', '.join(changed) or 'unchanged'}): ")


_PREPARED = {
    "gt_images_capped": ("image cut to 100 boxes", "images cut to 100 boxes"),
    "gt_boxes_merged": ("box merged", "boxes merged"),
    "gt_boxes_clipped": ("box clipped", "boxes clipped"),
}


def _printed_as(protocol: str) -> str:
    return protocol_record(protocol).printed_as


def _evaluate_psg(args: argparse.Namespace) -> None:
    from sgg_eval.core.errors import InputError
    from sgg_eval.io.atomic import write_json
    from sgg_eval.io.processes import default_jobs
    from sgg_eval.panoptic.evaluate import run_psg_evaluation

    if args.task not in (None, SGDET.name):
        raise InputError("panoptic SGG is evaluated as sgdet (predicted masks or boxes)", field="--task")
    if args.protocol in BOX_PROTOCOLS or args.gt or args.zeroshot:
        raise InputError(
            f"--psg takes --protocol {', '.join(PSG_PROTOCOLS)}, and no --gt or --zeroshot (the zero-shot set "
            "comes from --stats)",
            field="--psg",
        )
    given = {k: v for k, v in (("tau", args.tau), ("iou_threshold", args.iou_threshold)) if v is not None}
    result = run_psg_evaluation(
        args.predictions,
        args.psg,
        args.psg_root or "",
        protocol=args.protocol or PSG_PROTOCOL,
        boxes=args.boxes,
        stats=args.stats,
        **given,
        jobs=args.jobs or default_jobs(),
        longtail=args.longtail,
    )
    if args.output:
        write_json(args.output, result)
    _print_psg(result)


def _print_psg(result: dict) -> None:
    """The protocol's own numbers on one line, sgg-eval's others under that matching on a line that says so, the
    counts, and the warnings on stderr."""
    from sgg_eval.metrics.document import BEYOND

    headline = [*(metric_name(f, k) for f in ("R", "mR") for k in RECALL_KS), metric_name("InstR"), "PRk"]
    headline += [metric_name("IMR", 20), metric_name("wIMR", 20), metric_name("F1", 50)]
    own, beyond = result["metrics"], result[BEYOND]["metrics"]
    print(" ".join(_shown(k, own[k]) for k in headline if k in own))
    extra = [_shown(k, beyond[k]) for k in headline if beyond.get(k) is not None]
    if extra:
        print(f"beyond protocol {result['protocol']} ({result[BEYOND]['about']}): {' '.join(extra)}")
    c = result["counts"]
    print(
        f"{c['images_evaluated']} of {c['images_input']} test images evaluated on {result['mode']} "
        f"({c['images_absent']} without a prediction, {c['images_skipped_no_pred']} without a predicted triplet, "
        f"{c['images_skipped_no_gt']} without GT relations); "
        f"protocol {result['protocol']}"
    )
    warnings = [n for n in result["notes"] if n.startswith("WARNING")]
    if warnings:
        print(" | ".join(warnings), file=sys.stderr)


def _shown(name: str, value: float | None) -> str:
    if value is None:
        return f"{name}=null"
    return f"{name}={value:.3f}" if name == "PRk" else f"{name}={100 * value:.2f}"


def run_psg_pack(args: argparse.Namespace) -> None:
    from sgg_eval.panoptic.pack import pack_submission

    counts = pack_submission(args.predictions, args.masks, args.output)
    print(f"{args.output}: {counts['images']} images, {counts['layers']} instance masks")


def add(sub) -> None:
    """The sub-commands ``evaluate`` and ``psg-pack`` of ``sub``."""
    p = sub.add_parser(
        "evaluate",
        help="compute the full metric family for one prediction file",
        description="Evaluate scene graph predictions: R@K, mR@K, ngR, zR, A@K, IMR, wIMR, R_tr, "
        "wR_tr, PR@K, PRk, InstR, relative K, per-predicate vectors.",
        epilog=_EPILOG_EVALUATE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "predictions",
        help="eval_results.pytorch, SGG-Benchmark's predictions.pth, SGBench JSON, or an sgg-eval prediction store "
        "(.h5); "
        "with --psg: an SGBench ZIP or folder (masks) or its JSON (boxes)",
    )
    p.add_argument("--gt", help="ground-truth split store (needed for SGBench JSON and prediction stores)")
    p.add_argument("--task", choices=TASKS, help="required, except with --psg (sgdet)")
    p.add_argument(
        "--protocol",
        choices=[p.name for p in registered()],
        help="reference: images without predicted pairs are skipped (as Scene-Graph-Benchmark.pytorch); "
        "strict: they count as misses (default: reference); oiv6: Open Images V6 as PySGG/BGNN score it (R@50 "
        "micro, mR@50, wmAP_rel, wmAP_phr, score_wtd; docs/oiv6.md); ovsgtr, vs3, pgsg: open-vocabulary SGG as "
        "OvSGTR, VS3 and PGSG score it (novel-object and novel-relation recall, PGSG's novel mR; "
        "docs/openvocab.md); sgg-benchmark: as SGG-Benchmark's evaluator (its IoU, R, mR, zR, F1, Relative "
        "recall, InformativeRecall with --captions; docs/sgg_benchmark.md); with --psg: sgbench (the default), "
        "as the sgbench 1.0.0 command computes it; sgbench-paper, as the SGBench paper defines "
        "it; openpsg, as OpenPSG's evaluator (the numbers PSG papers publish); the JSON's metrics hold what "
        "the protocol's tool reports, beyond_protocol the rest sgg-eval computes under its matching",
    )
    _add_openvocab(p)
    _add_text_graphs(p)
    _add_psg(p)
    p.add_argument("--stats", help="training statistics from `sgg-eval stats` (wIMR, wR_tr, zero-shot set)")
    p.add_argument(
        "--zeroshot",
        help="zero-shot triplet file (torch format, [Z, 3] subject, object, predicate); "
        "'vg150' = the reference codebase's VG150 list, shipped with sgg-eval",
    )
    p.add_argument("--tau", type=option("tau"), default=None, help=f"wIMR exponent in [0, 1] (default: {TAU})")
    p.add_argument(
        "--longtail",
        choices=LONGTAIL_RULES,
        default=LONGTAIL_RULE,
        help="head/body/tail predicates for R_head@K, mR_head@K, ... R_tail@K, mR_tail@K: pysgg (PySGG's VG150 "
        "parts), frequency (by the training counts of --stats, PySGG's group sizes scaled) or auto (pysgg on VG150's "
        "predicates, else frequency; the default)",
    )
    add_iou_threshold(p, default=None)
    add_jobs(p)
    p.add_argument("-o", "--output", help="write the metrics JSON here")
    _add_captions_and_rows(p)
    p.set_defaults(func=run_evaluate)

    _add_psg_pack(sub)


def _add_captions_and_rows(p: argparse.ArgumentParser) -> None:
    """SGG-Benchmark's captions (InformativeRecall) and the per-image rows."""
    p.add_argument(
        "--captions",
        metavar="FILE",
        help='sgg-benchmark: caption triplets per image id (JSON: {image id: ["subject predicate object", ...]}) '
        "for InformativeRecall@K, K = 5 ... 100 (docs/sgg_benchmark.md)",
    )
    p.add_argument(
        "--ir-encoder",
        metavar="MODEL",
        default=IR_ENCODER,
        help=f"how --captions are matched: {IR_ENCODER} (model-free: equal strings; the default) or a "
        "SentenceTransformer, a Hub name or a local folder (SGG-Benchmark's: all-mpnet-base-v2; needs "
        "sgg-eval[provision]), similarity above 0.8",
    )
    p.add_argument(
        "--per-image",
        metavar="FILE",
        help=f"box tasks: write every evaluated image's graphs here as JSON lines (GT triplets with their first-hit "
        f"rank, the top {PER_IMAGE_K} predicted triplets with the GT rows they hit; docs/per_image.md)",
    )


def _add_openvocab(p: argparse.ArgumentParser) -> None:
    """The open-vocabulary protocols' options."""
    ov = p.add_argument_group("open-vocabulary SGG (docs/openvocab.md)")
    ov.add_argument(
        "--setting",
        metavar="SETTING",
        help="the protocol's setting: novel objects (ovd), novel predicates (ovr) or both ("
        + "; ".join(f"{p}: {', '.join(s)}" for p, s in OPENVOCAB_SETTINGS.items())
        + "; the first is the default)",
    )
    ov.add_argument(
        "--split-file",
        metavar="FILE",
        help="your own base/novel split (YAML or JSON: novel_objects, novel_predicates as names or indices) instead "
        "of the protocol's shipped one",
    )


def _add_text_graphs(p: argparse.ArgumentParser) -> None:
    """--text-graphs and the text protocols' own options."""
    text = p.add_argument_group("scene graphs written as text by multimodal LLMs (issue 48; --protocol sets, ...)")
    text.add_argument(
        "--text-graphs",
        action="store_true",
        help="PREDICTIONS is sgg-eval's JSONL of text answers (image_id, objects with name and box, relations "
        "[subject, predicate, object]), R1-SGG's folder or ASMv2's answers; scored as sets on every image of --gt "
        "(a split store, R1-SGG's rows or ASMv2's questions), unanswered ones as empty. With "
        "--protocol r1sgg: R1-SGG's answer folder or gathered file, on its GT rows (JSON/JSONL); sgvlm: "
        "SceneGraphVLM's predictions JSONL (GT inside, no --gt); asmv2: ASMv2's answers on its psg_eval.jsonl; "
        "provision: ProVision's end-to-end answers (GT inside, no --gt) or GPT scene graphs on a PSG-style JSON; "
        "each scored as that tool scores it",
    )
    text.add_argument(
        "--spacy",
        action="store_true",
        help="asmv2: read names through spaCy's en_core_web_sm lemmas, as ASMv2 does (spaCy and the model installed)",
    )
    text.add_argument(
        "--wordnet",
        action="store_true",
        help="r1sgg: look names up in WordNet as R1-SGG does when its tables miss (needs sgg-eval[wordnet] and "
        "WordNet's data for nltk)",
    )
    text.add_argument(
        "--sbert",
        metavar="MODEL",
        help="provision: the SentenceTransformer that reads names, a Hub name or a local folder (default: "
        f"{PROVISION_SBERT_MODEL}; needs sgg-eval[provision])",
    )
    text.add_argument(
        "--top-k",
        type=bounded(int, 0, 2**31 - 1),
        metavar="N",
        help="provision: keep a random N of an answer's relations when it has more, as ProVision does (default: "
        f"{PROVISION_TOP_K}; 0: all)",
    )
    text.add_argument(
        "--seed",
        type=seed,
        metavar="N",
        help="provision: the seed of that sample (ProVision's is unseeded; default: 0)",
    )


def _add_psg(p: argparse.ArgumentParser) -> None:
    """Panoptic SGG's options."""
    psg = p.add_argument_group("panoptic SGG (PSG)")
    psg.add_argument("--psg", metavar="PSG_JSON", help="OpenPSG's psg.json: evaluate its test split")
    psg.add_argument(
        "--psg-root", metavar="DIR", help="the COCO root its pan_seg_file_name are relative to (mask mode)"
    )
    psg.add_argument("--boxes", action="store_true", help="evaluate on boxes even when the submission has masks")
    add_evaluate_options(p)


def _add_psg_pack(sub) -> None:
    """The sub-command ``psg-pack``."""
    p = sub.add_parser(
        "psg-pack",
        help="write an SGBench submission ZIP from an SGBench JSON and a folder of masks",
        description="Pack a panoptic SGG model's predictions as the SGBench ZIP that `sgg-eval "
        "evaluate --psg` and sgbench read: triplets.json plus one multi-page TIFF of "
        "instance masks per image. MASKS holds <id>.npy ([N, H, W], bool or integers; "
        "read without pickle) or <id>/0.png ... <id>/N-1.png per image, one layer per "
        "instance in the JSON's order; any non-zero pixel is in the mask.",
    )
    p.add_argument("predictions", help="SGBench JSON: images with id, the instance list and triplets")
    p.add_argument("masks", help="folder of <id>.npy or <id>/<k>.png masks")
    p.add_argument("-o", "--output", required=True, help="the ZIP to write")
    p.set_defaults(func=run_psg_pack)
