"""The ``sgg-eval`` command line. Each sub-command is one library call; bad input exits 2 with one line."""

from __future__ import annotations

import argparse
import json
import sys

from sgg_eval.errors import InputError

_EPILOG_SPLIT = """examples:
  # the embedded SIMULATED VG150-like benchmark (no download), default size
  sgg-eval split --simulated -o data/vg150_sim/splits
  # the real VG150 files in one folder (VG-SGG-with-attri.h5, VG-SGG-dicts-with-attri.json, image_data.json)
  sgg-eval split --vg150-dir /data/vg -o data/vg150/splits --splits test
"""

_EPILOG_STATS = """The statistics file holds A[s,o,p] (training triplet counts), n_c (composable pairs per predicate),
predicate/object frequencies, background pair counts, per-image graph density and the zero-shot test
triplets (test class triplets never seen in training). The metrics and PKO stages read it.

example:
  sgg-eval stats data/vg150_sim/splits/train.h5 --test data/vg150_sim/splits/test.h5 \\
      -o data/vg150_sim/stats/stats.h5 --summary stats_summary.json
"""


def _cmd_split(args: argparse.Namespace) -> None:
    from sgg_eval.data.simulate import SimParams
    from sgg_eval.data.vg150 import VG150Files
    from sgg_eval.splits import DatasetSpec, build_splits

    if args.simulated:
        spec = DatasetSpec("vg150_sim", "simulated", sim=SimParams(seed=args.seed, scale=args.scale))
    else:
        files = VG150Files.in_dir(args.vg150_dir) if args.vg150_dir else VG150Files(args.h5, args.dicts, args.image_data)
        if None in (files.h5, files.dicts, files.image_data):
            raise SystemExit("sgg-eval split: give --simulated, --vg150-dir, or all of --h5 --dicts --image-data")
        spec = DatasetSpec("vg150", "vg150", files=files, num_val_im=args.num_val_im)
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    counts = build_splits(spec, {s: f"{args.out_dir}/{s}.h5" for s in splits})
    for split, n in counts.items():
        print(f"{args.out_dir}/{split}.h5: {n} images{' (SIMULATED)' if args.simulated else ''}")


def _cmd_stats(args: argparse.Namespace) -> None:
    from sgg_eval.splits import build_stats

    summary = build_stats(args.train, args.test, args.output, args.summary,
                          drop_non_overlapping=args.drop_non_overlapping,
                          background_must_overlap=not args.all_background_pairs)
    brief = {k: v for k, v in summary.items() if k != "predicates"}
    print(json.dumps(brief, indent=2, sort_keys=True))


_EPILOG_EVALUATE = """PREDICTIONS may be a Scene-Graph-Benchmark.pytorch eval_results.pytorch (ground truth inside,
zip or legacy torch format, read without torch), an SGBench JSON, or an sgg-eval prediction store; the
last two need --gt. Metrics needing training statistics (wIMR, wR_tr, computed zero-shot set) are null
with a reason unless --stats is given. Values in the JSON are fractions.

examples:
  sgg-eval evaluate checkpoints/motifs/inference/VG_stanford_filtered_with_attribute_test/eval_results.pytorch \\
      --task predcls --stats data/vg150/stats/stats.h5 -o motifs_predcls.json
  sgg-eval evaluate preds.h5 --gt data/vg150_sim/splits/test.h5 --task sgdet --protocol strict
"""


def _cmd_evaluate(args: argparse.Namespace) -> None:
    from sgg_eval.atomic import write_json
    from sgg_eval.evaluate import run_evaluation

    result = run_evaluation(args.predictions, args.task, gt=args.gt, protocol=args.protocol, stats=args.stats,
                            zeroshot=args.zeroshot, tau=args.tau, progress=sys.stderr.isatty())
    if args.output:
        write_json(args.output, result)
    m = result["metrics"]
    shown = [k for k in ("R@20", "R@50", "R@100", "mR@20", "mR@50", "mR@100", "IMR@20", "wIMR@20") if m.get(k) is not None]
    print(" ".join(f"{k}={100 * m[k]:.2f}" for k in shown))
    c = result["counts"]
    print(f"{c['images_evaluated']} of {c['images_input']} images evaluated "
          f"({c['images_skipped_no_gt']} without GT relations, {c['images_skipped_no_pred']} without predicted pairs)")


def _cmd_params(args: argparse.Namespace) -> None:
    from sgg_eval.config import write_params

    write_params(args.output, args.conf_dir, args.overrides)
    print(f"wrote {args.output} from {args.conf_dir}/ {' '.join(args.overrides)}".rstrip())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sgg-eval",
        description="Exact, fast evaluation of scene graph generation (SGG): splits, statistics, metrics.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("split", help="write split stores from real VG150 files or the simulator",
                       description="Read a dataset and write one HDF5 split store per split (train/val/test).",
                       epilog=_EPILOG_SPLIT, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_argument_group("source (choose one)")
    src.add_argument("--simulated", action="store_true", help="the embedded SIMULATED VG150-like benchmark")
    src.add_argument("--vg150-dir", help="folder holding the three VG150 files under their usual names")
    src.add_argument("--h5", help="path of VG-SGG-with-attri.h5")
    src.add_argument("--dicts", help="path of VG-SGG-dicts-with-attri.json")
    src.add_argument("--image-data", help="path of image_data.json")
    p.add_argument("-o", "--out-dir", required=True, help="folder for <split>.h5 files")
    p.add_argument("--splits", default="train,val,test", help="comma-separated splits (default: %(default)s)")
    p.add_argument("--num-val-im", type=int, default=5000, help="VG150 validation carve-out (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="simulator seed (default: %(default)s)")
    p.add_argument("--scale", default="default", choices=["tiny", "default", "vg"],
                   help="simulator size: tiny, default, or vg (VG150-sized) (default: %(default)s)")
    p.set_defaults(func=_cmd_split)

    p = sub.add_parser("stats", help="training statistics (triplet counts, n_c, zero-shot set, density)",
                       description="Compute SPEC §4 training statistics from a training split store.",
                       epilog=_EPILOG_STATS, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("train", help="training split store (.h5 from `sgg-eval split`)")
    p.add_argument("--test", help="test split store: adds the zero-shot test triplets")
    p.add_argument("-o", "--output", required=True, help="statistics file to write (.h5)")
    p.add_argument("--summary", help="also write a human-readable JSON summary here")
    p.add_argument("--drop-non-overlapping", action="store_true",
                   help="count only training rows whose subject and object boxes intersect")
    p.add_argument("--all-background-pairs", action="store_true",
                   help="background counts over all object pairs (default: intersecting pairs, as the reference)")
    p.set_defaults(func=_cmd_stats)

    p = sub.add_parser("evaluate", help="compute the full metric family for one prediction file",
                       description="Evaluate scene graph predictions: R@K, mR@K, ngR, zR, A@K, IMR, wIMR, R_tr, "
                                   "wR_tr, PR@K, PRk, InstR, relative K, per-predicate vectors.",
                       epilog=_EPILOG_EVALUATE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("predictions", help="eval_results.pytorch, SGBench JSON, or an sgg-eval prediction store (.h5)")
    p.add_argument("--gt", help="ground-truth split store (needed for SGBench JSON and prediction stores)")
    p.add_argument("--task", required=True, choices=["predcls", "sgcls", "sgdet"])
    p.add_argument("--protocol", default="reference", choices=["reference", "strict"],
                   help="reference: images without predicted pairs are skipped (as Scene-Graph-Benchmark.pytorch); "
                        "strict: they count as misses (default: %(default)s)")
    p.add_argument("--stats", help="training statistics from `sgg-eval stats` (wIMR, wR_tr, zero-shot set)")
    p.add_argument("--zeroshot", help="zero-shot triplet file (torch format, [Z, 3] subject, object, predicate); "
                                      "'vg150' = the reference codebase's VG150 list, shipped with sgg-eval")
    p.add_argument("--tau", type=float, default=0.5, help="wIMR exponent in [0, 1] (default: %(default)s)")
    p.add_argument("-o", "--output", help="write the metrics JSON here")
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("params", help="regenerate params.yaml from the Hydra config in conf/",
                       description="Compose conf/ with Hydra (plus overrides) and write params.yaml for DVC.")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. dataset=vg150 dataset.sim.scale=tiny")
    p.add_argument("--conf-dir", default="conf", help="config folder (default: %(default)s)")
    p.add_argument("-o", "--output", default="params.yaml", help="file to write (default: %(default)s)")
    p.set_defaults(func=_cmd_params)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except InputError as exc:
        print(f"sgg-eval {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
