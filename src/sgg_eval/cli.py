"""The ``sgg-eval`` command line. Each sub-command is one library call; bad input exits 2 with one line."""

from __future__ import annotations

import argparse
import json
import os
import sys

from sgg_eval.defaults import (
    BLIND_K,
    EPS,
    IOU_THRESHOLD,
    LAM,
    PROTOCOL,
    PSG_PROTOCOL,
    PSG_PROTOCOLS,
    RECALL_KS,
    TAU,
)
from sgg_eval.defaults import PROTOCOLS as BOX_PROTOCOLS
from sgg_eval.errors import EXIT_USER, guarded
from sgg_eval.metrics.names import metric_name
from sgg_eval.tasks import PREDCLS, SGDET, TASKS


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line (exit 2), like every other user error."""

    def error(self, message: str):
        self.exit(EXIT_USER, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def _bounded(kind, lo=None, hi=None, *, lo_open: bool = False):
    """An argparse type: a finite ``kind`` within ``[lo, hi]`` (``(lo, hi]`` when ``lo_open``)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if kind is float and value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if (lo is not None and (value <= lo if lo_open else value < lo)) or (hi is not None and value > hi):
            span = f"{'(' if lo_open else '['}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
            raise argparse.ArgumentTypeError(f"{text} is outside {span}")
        return value

    return parse


def _option(name: str):
    """An argparse type for the evaluation option ``name``: the range check of ``metrics.options``, the one
    every entry point runs."""
    from sgg_eval.errors import InputError
    from sgg_eval.metrics.options import check_option  # no numpy: --help stays light

    def parse(text: str) -> float:
        try:
            return check_option(name, float(text))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        except InputError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    return parse


_EPILOG_SPLIT = """examples:
  # the embedded SIMULATED VG150-like benchmark (no download), default size
  sgg-eval split --simulated -o data/vg150_sim/splits
  # the real VG150 files in one folder (VG-SGG-with-attri.h5, VG-SGG-dicts-with-attri.json, image_data.json)
  sgg-eval split --vg150-dir /data/vg -o data/vg150/splits --splits test
"""

_EPILOG_STATS = """The statistics file holds A[s,o,p] (training triplet counts), n_c (composable pairs per predicate),
predicate/object frequencies, background pair counts, per-image graph density and the zero-shot test
triplets (test class triplets never seen in training). The metrics and PKO stages read it.

examples:
  sgg-eval stats data/vg150_sim/splits/train.h5 --test data/vg150_sim/splits/test.h5 \\
      -o data/vg150_sim/stats/stats.h5 --summary stats_summary.json
  sgg-eval stats --psg psg.json -o psg_stats.h5     # then: sgg-eval evaluate ... --psg psg.json --stats psg_stats.h5
"""


def _cmd_split(args: argparse.Namespace) -> None:
    from sgg_eval.data.vg150 import VG150Files
    from sgg_eval.errors import InputError
    from sgg_eval.simulate.world import SimParams
    from sgg_eval.splits import DatasetSpec, build_splits

    if args.simulated:
        spec = DatasetSpec("vg150_sim", "simulated", sim=SimParams(seed=args.seed, scale=args.scale))
    else:
        files = (
            VG150Files.in_dir(args.vg150_dir) if args.vg150_dir else VG150Files(args.h5, args.dicts, args.image_data)
        )
        if None in (files.h5, files.dicts, files.image_data):
            raise InputError("give --simulated, --vg150-dir, or all of --h5 --dicts --image-data")
        spec = DatasetSpec("vg150", "vg150", files=files, num_val_im=args.num_val_im)
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    paths = {s: os.path.join(args.out_dir, f"{s}.h5") for s in splits}
    counts = build_splits(spec, paths)
    for split, n in counts.items():
        print(f"{paths[split]}: {n} images{' (SIMULATED)' if args.simulated else ''}")


def _cmd_stats(args: argparse.Namespace) -> None:
    from sgg_eval.errors import InputError

    rules = dict(drop_non_overlapping=args.drop_non_overlapping, background_must_overlap=not args.all_background_pairs)
    if (args.train is None) == (args.psg is None) or (args.psg and args.test):
        raise InputError("give a training split store (and optionally --test), or --psg psg.json", field="train")
    if args.psg:
        from sgg_eval.atomic import write_json
        from sgg_eval.psg_stats import psg_training_stats
        from sgg_eval.stats import summarize, write_stats

        stats = psg_training_stats(args.psg, **rules)
        summary = summarize(stats)
        write_stats(args.output, stats)
        if args.summary:
            write_json(args.summary, summary)
    else:
        from sgg_eval.splits import build_stats

        summary = build_stats(args.train, args.test, args.output, args.summary, **rules)
    brief = {k: v for k, v in summary.items() if k != "predicates"}
    print(json.dumps(brief, indent=2, sort_keys=True))


_EPILOG_AUDIT = """examples: which variant is a paper's mR@100 = 12.3 (and R@100 = 66.1)?
  sgg-eval audit eval_results.pytorch --task predcls --published "mR@100=12.3" --published "R@100=66.1"
  # a PSG paper's R@20 and mR@20: which protocol and instance mode produce them?
  sgg-eval audit submission.zip --psg psg.json --psg-root coco/ --published "R@20=28.4" --published "mR@20=17.3"
"""


def _cmd_audit(args: argparse.Namespace) -> None:
    from sgg_eval.atomic import write_json, write_text
    from sgg_eval.errors import InputError
    from sgg_eval.metrics.ranking.blocks import default_jobs

    if args.psg:
        from sgg_eval.psg_audit import psg_audit_markdown, run_psg_audit

        if args.task not in (None, SGDET.name) or args.gt or args.iou_threshold is not None or args.subset is not None:
            raise InputError(
                "--psg audits panoptic SGG (sgdet) at IoU 0.5 on every test image: no --gt, other "
                "--task, --iou-threshold or --subset",
                field="--psg",
            )
        doc = run_psg_audit(
            args.predictions,
            args.psg,
            args.psg_root or "",
            published=tuple(args.published),
            jobs=args.jobs or default_jobs(),
        )
        text = psg_audit_markdown(doc)
    else:
        from sgg_eval.audit import audit_markdown, run_audit

        if args.task is None:
            raise InputError("--task is required (predcls, sgcls or sgdet), unless --psg is given", field="--task")
        if args.psg_root:
            raise InputError("--psg-root is for panoptic SGG: give --psg", field="--psg")
        given = {k: v for k, v in (("iou_threshold", args.iou_threshold), ("subset", args.subset)) if v is not None}
        doc = run_audit(
            args.predictions,
            args.task,
            gt=args.gt,
            published=tuple(args.published),
            jobs=args.jobs or default_jobs(),
            **given,
        )
        text = audit_markdown(doc)
    if args.output:
        write_json(args.output, doc)
    if args.md:
        write_text(args.md, text)
    print(text, end="")
    if any(not p["reference"] and p["matches"] for p in doc["published"]):
        print("warning: a published value matches a variant other than the reference", file=sys.stderr)


_EPILOG_EVALUATE = """PREDICTIONS may be a Scene-Graph-Benchmark.pytorch eval_results.pytorch (ground truth inside,
zip or legacy torch format, read without torch), an SGBench JSON, or an sgg-eval prediction store; the
last two need --gt. Metrics needing training statistics (wIMR, wR_tr, computed zero-shot set) are null
with a reason unless --stats is given. Values in the JSON are fractions.

examples:
  sgg-eval evaluate checkpoints/motifs/inference/VG_stanford_filtered_with_attribute_test/eval_results.pytorch \\
      --task predcls --stats data/vg150/stats/stats.h5 -o motifs_predcls.json
  sgg-eval evaluate preds.h5 --gt data/vg150_sim/splits/test.h5 --task sgdet --protocol strict
  # panoptic SGG: an SGBench submission (ZIP of triplets.json + TIFF masks) on PSG's test split
  sgg-eval evaluate submission.zip --psg psg.json --psg-root coco/ -o psg_metrics.json
"""


def _cmd_evaluate(args: argparse.Namespace) -> None:
    from sgg_eval.atomic import write_json
    from sgg_eval.errors import InputError
    from sgg_eval.metrics.ranking.blocks import default_jobs

    if args.psg:
        return _evaluate_psg(args)
    if args.task is None:
        raise InputError("--task is required (predcls, sgcls or sgdet), unless --psg is given", field="--task")
    if args.protocol in PSG_PROTOCOLS or args.boxes or args.psg_root:
        raise InputError(
            f"--protocol {' or '.join(PSG_PROTOCOLS)}, --boxes and --psg-root are for panoptic SGG: give --psg",
            field="--psg",
        )
    from sgg_eval.evaluate import run_evaluation
    from sgg_eval.metrics.misuse import warning_summary

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
    )
    if args.output:
        write_json(args.output, result)
    m = result["metrics"]
    headline = [metric_name(f, k) for f in ("R", "mR") for k in RECALL_KS]
    shown = [k for k in [*headline, metric_name("IMR", 20), metric_name("wIMR", 20)] if m.get(k) is not None]
    print(" ".join(f"{k}={100 * m[k]:.2f}" for k in shown))
    c = result["counts"]
    print(
        f"{c['images_evaluated']} of {c['images_input']} images evaluated "
        f"({c['images_skipped_no_gt']} without GT relations, {c['images_skipped_no_pred']} without predicted pairs)"
    )
    warnings = warning_summary(result["notes"])
    if warnings:
        print(warnings, file=sys.stderr)


def _evaluate_psg(args: argparse.Namespace) -> None:
    from sgg_eval.atomic import write_json
    from sgg_eval.errors import InputError
    from sgg_eval.metrics.ranking.blocks import default_jobs
    from sgg_eval.psg_evaluate import run_psg_evaluation

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
    )
    if args.output:
        write_json(args.output, result)
    m = result["metrics"]
    shown = [
        f"{k}={'null' if m[k] is None else format(100 * m[k], '.2f')}"
        for k in [*(metric_name(f, k) for f in ("R", "mR") for k in RECALL_KS), metric_name("InstR")]
    ]
    print(" ".join(shown + [f"PRk={'null' if m['PRk'] is None else format(m['PRk'], '.3f')}"]))
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


def _cmd_psg_pack(args: argparse.Namespace) -> None:
    from sgg_eval.psg_pack import pack_submission

    counts = pack_submission(args.predictions, args.masks, args.output)
    print(f"{args.output}: {counts['images']} images, {counts['layers']} instance masks")


def _cmd_simulate(args: argparse.Namespace) -> None:
    from sgg_eval.simulate.models import METHODS, Backbone, simulate_models
    from sgg_eval.stats import read_stats

    given = {"strength": args.strength, "label_accuracy": args.label_accuracy}
    bb = Backbone(args.backbone, **{k: v for k, v in given.items() if v is not None})
    methods = [m for m in METHODS if m != "dlfe" or args.val]
    outputs = {m: os.path.join(args.out_dir, f"{args.backbone}_{m}_{args.task}.h5") for m in methods}
    n = simulate_models(
        args.gt,
        read_stats(args.stats),
        bb,
        args.task,
        outputs,
        seed=args.seed,
        score_kind=args.score_kind,
        val_path=args.val,
    )
    for path in outputs.values():
        print(f"{path}: {n} images (SIMULATED)")


def _cmd_pko(args: argparse.Namespace) -> None:
    from sgg_eval.pko import PKOParams, pko_predictions
    from sgg_eval.sources import open_predictions
    from sgg_eval.stats import read_stats

    stats = read_stats(args.stats)
    source = open_predictions(args.predictions, gt=args.gt, vocab=stats.vocab)
    n = pko_predictions(source, args.task, stats, args.output, PKOParams(lam=args.lam, eps=args.eps), only=args.only)
    print(f"{args.output}: {n} images, {'PKO-only' if args.only else 'PKO'} logits")


def _cmd_blind_replace(args: argparse.Namespace) -> None:
    from sgg_eval.atomic import write_json
    from sgg_eval.pko import blind_replacement
    from sgg_eval.sources import open_predictions
    from sgg_eval.stats import read_stats

    stats = read_stats(args.stats)
    source = open_predictions(args.predictions, gt=args.gt, vocab=stats.vocab)
    rows = blind_replacement(source, stats, args.task, max_n=args.max_n)
    if args.output:
        write_json(args.output, {"task": args.task, "rows": rows})
    metric = metric_name("mR", BLIND_K)
    print(f"{'N':>2}  {'predicate':14} {'pairs':>5}  {metric:>7}  {'gain':>6}")
    for r in rows:
        pairs = "" if r["num_type_pairs"] is None else r["num_type_pairs"]
        print(f"{r['N']:>2}  {r['predicate']:14} {pairs:>5}  {100 * r[metric]:7.2f}  {100 * r['improvement']:+6.2f}")


def _cmd_params(args: argparse.Namespace) -> None:
    from sgg_eval.pipeline.config import write_params

    write_params(args.output, args.conf_dir, args.overrides)
    print(f"wrote {args.output} from {args.conf_dir}/ {' '.join(args.overrides)}".rstrip())


def _add_scored_inputs(p: argparse.ArgumentParser, task_default: str | None) -> None:
    """The inputs of commands that transform saved scores: predictions, their GT, statistics, task."""
    p.add_argument("predictions", help="eval_results.pytorch or an sgg-eval prediction store")
    p.add_argument("--gt", help="ground-truth split store (for a prediction store)")
    p.add_argument("--stats", required=True, help="training statistics from `sgg-eval stats`")
    p.add_argument("--task", choices=TASKS, required=task_default is None, default=task_default)


def _add_iou_threshold(p: argparse.ArgumentParser, default: float | None = IOU_THRESHOLD) -> None:
    p.add_argument(
        "--iou-threshold",
        type=_option("iou_threshold"),
        default=default,
        metavar="T",
        help="SGDet: a predicted object matches a GT object of its label at IoU >= this, in the "
        f"recalls and InstR (default: {IOU_THRESHOLD}, the reference's; PredCls and SGCls use the GT "
        "boxes, so it changes nothing there; det_mAP keeps COCO's thresholds). With --psg: masks or boxes "
        "match at this IoU (every PSG protocol's is 0.5; another value is a variant, said in the notes)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sgg-eval",
        description="Exact, fast evaluation of scene graph generation (SGG): splits, statistics, metrics.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="print the traceback of any error (also: SGG_EVAL_DEBUG=1)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "split",
        help="write split stores from real VG150 files or the simulator",
        description="Read a dataset and write one HDF5 split store per split (train/val/test).",
        epilog=_EPILOG_SPLIT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_argument_group("source (choose one)")
    src.add_argument("--simulated", action="store_true", help="the embedded SIMULATED VG150-like benchmark")
    src.add_argument("--vg150-dir", help="folder holding the three VG150 files under their usual names")
    src.add_argument("--h5", help="path of VG-SGG-with-attri.h5")
    src.add_argument("--dicts", help="path of VG-SGG-dicts-with-attri.json")
    src.add_argument("--image-data", help="path of image_data.json")
    p.add_argument("-o", "--out-dir", required=True, help="folder for <split>.h5 files")
    p.add_argument("--splits", default="train,val,test", help="comma-separated splits (default: %(default)s)")
    p.add_argument(
        "--num-val-im", type=_bounded(int, 0), default=5000, help="VG150 validation carve-out (default: %(default)s)"
    )
    p.add_argument("--seed", type=_bounded(int, 0, 2**32 - 1), default=0, help="simulator seed (default: %(default)s)")
    p.add_argument(
        "--scale",
        default="default",
        choices=["tiny", "default", "vg"],
        help="simulator size: tiny, default, or vg (VG150-sized) (default: %(default)s)",
    )
    p.set_defaults(func=_cmd_split)

    p = sub.add_parser(
        "stats",
        help="training statistics (triplet counts, n_c, zero-shot set, density)",
        description="Compute the training statistics of docs/definitions.md §4 from a training split "
        "store, or from the training split of PSG's psg.json (every entry outside "
        "test_image_ids).",
        epilog=_EPILOG_STATS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("train", nargs="?", help="training split store (.h5 from `sgg-eval split`)")
    p.add_argument(
        "--psg", metavar="PSG_JSON", help="instead of a store: PSG's psg.json (its test images give the zero-shot set)"
    )
    p.add_argument("--test", help="test split store: adds the zero-shot test triplets")
    p.add_argument("-o", "--output", required=True, help="statistics file to write (.h5)")
    p.add_argument("--summary", help="also write a human-readable JSON summary here")
    p.add_argument(
        "--drop-non-overlapping",
        action="store_true",
        help="count only training rows whose subject and object boxes intersect",
    )
    p.add_argument(
        "--all-background-pairs",
        action="store_true",
        help="background counts over all object pairs (default: intersecting pairs, as the reference)",
    )
    p.set_defaults(func=_cmd_stats)

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
        help="eval_results.pytorch, SGBench JSON, or an sgg-eval prediction store (.h5); "
        "with --psg: an SGBench ZIP or folder (masks) or its JSON (boxes)",
    )
    p.add_argument("--gt", help="ground-truth split store (needed for SGBench JSON and prediction stores)")
    p.add_argument("--task", choices=TASKS, help="required, except with --psg (sgdet)")
    p.add_argument(
        "--protocol",
        choices=[*BOX_PROTOCOLS, *PSG_PROTOCOLS],
        help="reference: images without predicted pairs are skipped (as Scene-Graph-Benchmark.pytorch); "
        "strict: they count as misses (default: reference); with --psg: sgbench (the default), "
        "as the sgbench 1.0.0 command computes it; sgbench-paper, as the SGBench paper defines "
        "it; openpsg, as OpenPSG's evaluator (the numbers PSG papers publish)",
    )
    psg = p.add_argument_group("panoptic SGG (PSG)")
    psg.add_argument("--psg", metavar="PSG_JSON", help="OpenPSG's psg.json: evaluate its test split")
    psg.add_argument(
        "--psg-root", metavar="DIR", help="the COCO root its pan_seg_file_name are relative to (mask mode)"
    )
    psg.add_argument("--boxes", action="store_true", help="evaluate on boxes even when the submission has masks")
    p.add_argument("--stats", help="training statistics from `sgg-eval stats` (wIMR, wR_tr, zero-shot set)")
    p.add_argument(
        "--zeroshot",
        help="zero-shot triplet file (torch format, [Z, 3] subject, object, predicate); "
        "'vg150' = the reference codebase's VG150 list, shipped with sgg-eval",
    )
    p.add_argument("--tau", type=_option("tau"), default=None, help=f"wIMR exponent in [0, 1] (default: {TAU})")
    _add_iou_threshold(p, default=None)
    p.add_argument(
        "-j",
        "--jobs",
        type=_bounded(int, 1, 1024),
        default=None,
        help="processes ranking images in parallel (default: every core); the result does not depend on it",
    )
    p.add_argument("-o", "--output", help="write the metrics JSON here")
    p.set_defaults(func=_cmd_evaluate)

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
    p.set_defaults(func=_cmd_psg_pack)

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
    p.add_argument(
        "--subset",
        type=_bounded(int, 0, 10**9),
        default=None,
        help="also report the first N images (0: no subset; default: 1000)",
    )
    _add_iou_threshold(p, default=None)
    p.add_argument(
        "-j",
        "--jobs",
        type=_bounded(int, 1, 1024),
        default=None,
        help="processes ranking images in parallel (default: every core)",
    )
    p.add_argument("-o", "--output", help="write the audit JSON here")
    p.add_argument("--md", help="write the audit as Markdown here")
    p.set_defaults(func=_cmd_audit)

    p = sub.add_parser(
        "simulate",
        help="SIMULATED model outputs (baseline and five debiasing methods) for a split",
        description="Write SIMULATED predictions of one backbone for the methods baseline "
        "(frequency-biased), reweight (logit adjustment), tde (counterfactual), "
        "dlfe (label-frequency estimate, needs --val), rtpb_cb (class-balanced "
        "resistance bias) and nice (label correction), as logits in prediction stores.",
        epilog="example:\n  sgg-eval simulate --gt data/vg150_sim/splits/test.h5 --stats "
        "data/vg150_sim/stats/stats.h5 --task predcls -o out/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--gt", required=True, help="split store to simulate predictions for")
    p.add_argument("--stats", required=True, help="training statistics (frequency bias, predicate prior)")
    p.add_argument("--task", required=True, choices=TASKS)
    p.add_argument("--backbone", default="sim_motifs", help="backbone name (default: %(default)s)")
    p.add_argument(
        "--val", help="validation split store (DLFE estimates label frequencies on it; without it dlfe is skipped)"
    )
    p.add_argument(
        "--strength",
        type=_bounded(float, 0.0, 100.0),
        help="visual evidence for the true predicate (default: the "
        "backbone's, as in conf/config.yaml's simulation.backbones)",
    )
    p.add_argument(
        "--label-accuracy",
        type=_bounded(float, 0.0, 1.0, lo_open=True),
        help="SGCls/SGDet object label accuracy (default: the backbone's)",
    )
    p.add_argument("--score-kind", default="logits", choices=["logits", "probabilities"])
    p.add_argument("--seed", type=_bounded(int, 0, 2**32 - 1), default=0)
    p.add_argument("-o", "--out-dir", required=True, help="folder for <backbone>_<method>_<task>.h5")
    p.set_defaults(func=_cmd_simulate)

    p = sub.add_parser(
        "pko",
        help="add the PKO prior to saved predictions (or PKO-only)",
        description="z = z_hat + lam * b on the predicate columns, b = log P^s(k|i) + log P^o(k|j) "
        "from the training statistics (docs/definitions.md §5). Reads logits or probabilities "
        "(via log p), writes a new store of logits; the input is never modified.",
        epilog="example:\n  sgg-eval pko eval_results.pytorch --stats stats.h5 --task predcls -o motifs_pko.h5",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_scored_inputs(p, task_default=None)
    p.add_argument(
        "--lam", type=_bounded(float, -1e6, 1e6), default=LAM, help="prior weight lambda (default: %(default)s)"
    )
    p.add_argument(
        "--eps",
        type=_bounded(float, 0.0, 1e6, lo_open=True),
        default=EPS,
        help="count smoothing epsilon (default: %(default)s)",
    )
    p.add_argument("--only", action="store_true", help="PKO-only: z = lam * b, no model evidence")
    p.add_argument("-o", "--output", required=True, help="prediction store to write (.h5)")
    p.set_defaults(func=_cmd_pko)

    p = sub.add_parser(
        "blind-replace",
        help="paper Table 1: blindly replace the N tail predicates",
        description="For N = 0..max-n, replace the prediction on every pair composable with one of "
        "the N predicates of fewest composable pairs (training) by that predicate, "
        "and report mR@100.",
        epilog="example:\n  sgg-eval blind-replace motifs_predcls.h5 --gt test.h5 --stats stats.h5 --task predcls",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_scored_inputs(p, task_default=PREDCLS.name)
    p.add_argument("--max-n", type=_bounded(int, 0, 1000), default=6, help="largest N (default: %(default)s)")
    p.add_argument("-o", "--output", help="also write the rows as JSON")
    p.set_defaults(func=_cmd_blind_replace)

    p = sub.add_parser(
        "params",
        help="regenerate params.yaml from the Hydra config in conf/",
        description="Compose conf/ with Hydra (plus overrides) and write params.yaml for DVC.",
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. dataset=vg150 dataset.sim.scale=tiny")
    p.add_argument("--conf-dir", default="conf", help="config folder (default: %(default)s)")
    p.add_argument("-o", "--output", default="params.yaml", help="file to write (default: %(default)s)")
    p.set_defaults(func=_cmd_params)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Exit codes: 0 success, 2 a user error (one line on stderr), 1 a bug (one line; traceback with --debug)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad command line (2, already reported in one line)
        return exc.code if isinstance(exc.code, int) else EXIT_USER
    return guarded(lambda: args.func(args), f"sgg-eval {args.command}", debug=args.debug)


if __name__ == "__main__":
    sys.exit(main())
