"""``sgg-eval split``, ``stats``, ``simulate`` and ``params``: split stores, training statistics, SIMULATED
model outputs and the pipeline's parameters."""

from __future__ import annotations

import argparse
import json
import os

from sgg_eval.cli.coco_sgg import add_split_sources as add_coco_sgg_sources
from sgg_eval.cli.coco_sgg import check_flags as check_coco_sgg_flags
from sgg_eval.cli.coco_sgg import dataset_conf as coco_sgg_conf
from sgg_eval.cli.coco_sgg import print_dropped
from sgg_eval.cli.options import bounded, seed
from sgg_eval.cli.video import add_split_sources
from sgg_eval.core.defaults import NUM_VAL_IM, SPLIT_KEY
from sgg_eval.core.tasks import TASKS

_EPILOG_SPLIT = """examples:
  # the embedded SIMULATED VG150-like benchmark (no download), default size
  sgg-eval split --simulated -o data/vg150_sim/splits
  # the real VG150 files in one folder (VG-SGG-with-attri.h5, VG-SGG-dicts-with-attri.json, image_data.json)
  sgg-eval split --vg150-dir /data/vg -o data/vg150/splits --splits test
  # the test images VS3 and OvSGTR use (GLIP's pre-training images removed: an extra key of their h5), with
  # boxes unclipped as OvSGTR and PGSG read them (every protocol can evaluate on it: the others clip)
  sgg-eval split --vg150-dir /data/vg --split-key split_GLIPunseen --no-clip -o data/vg150_glipunseen/splits
  # GQA200 (SHA-GCL's files: GQA_200_ID_Info.json, GQA_200_Train.json, GQA_200_Test.json)
  sgg-eval split --gqa200-dir /data/gqa -o data/gqa200/splits
  # raw GQA scene graphs, Knyazev et al.'s split, without left/right (GQA-nLR)
  sgg-eval split --gqa-dir /data/GQA --exclude-left-right -o data/gqa_nlr/splits
  # Open Images V6 as PySGG/BGNN prepare it (categories_dict.json, vrd-{train,val,test}-anno.json)
  sgg-eval split --oiv6-dir /data/openimages/open_image_v6 -o data/oiv6/splits
  # Action Genome (video frames, as STTran's loader keeps them), with the STTran authors' small-box file
  sgg-eval split --ag-dir /data/ag --ag-small-boxes object_bbox_and_relationship_filtersmall.pkl -o data/ag/splits
  # COCO-style files as SGG-Benchmark (REACT) publishes VG150, IndoorVG and PSG: <dir>/<split>/_annotations.coco.json
  sgg-eval split --coco-sgg /data/IndoorVG -o data/indoorvg/splits --splits train,test
"""


_EPILOG_STATS = """The statistics file holds A[s,o,p] (training triplet counts), n_c (composable pairs per predicate),
predicate/object frequencies, background pair counts, per-image graph density and the zero-shot test
triplets (test class triplets never seen in training, nor in the --seen splits). The metrics and PKO stages
read it.

examples:
  sgg-eval stats data/vg150_sim/splits/train.h5 --test data/vg150_sim/splits/test.h5 \\
      -o data/vg150_sim/stats/stats.h5 --summary stats_summary.json
  sgg-eval stats --psg psg.json -o psg_stats.h5     # then: sgg-eval evaluate ... --psg psg.json --stats psg_stats.h5
"""


def run_split(args: argparse.Namespace) -> None:
    from sgg_eval.boxes.splits import build_splits, open_dataset

    _check_split_flags(args)
    if args.ag_dir:
        from sgg_eval.cli.video import run_ag_split

        return run_ag_split(args)
    conf = _dataset_conf(args)
    dataset = open_dataset(conf)
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    paths = {s: os.path.join(args.out_dir, f"{s}.h5") for s in splits}
    counts = build_splits(dataset, paths, conf.get("raw") or (conf["files"].h5 if "files" in conf else None))
    key = f" (split codes from the h5 key {args.split_key})" if args.split_key != SPLIT_KEY else ""
    for split, n in counts.items():
        print(f"{paths[split]}: {n} images{' (SIMULATED)' if args.simulated else ''}{key}")
    if args.coco_sgg:
        print_dropped(paths)


def _check_split_flags(args: argparse.Namespace) -> None:
    """One source, and each source's own flags with it only."""
    from sgg_eval.core.errors import InputError

    given = [name for name, on in (("--simulated", args.simulated), ("--vg150-dir", args.vg150_dir),
             ("--gqa-dir", args.gqa_dir), ("--gqa200-dir", args.gqa200_dir), ("--oiv6-dir", args.oiv6_dir),
             ("--ag-dir", args.ag_dir), ("--coco-sgg", args.coco_sgg),
             ("--h5/--dicts/--image-data", args.h5 or args.dicts or args.image_data)) if on]  # fmt: skip
    if len(given) > 1:
        raise InputError(f"give one source, not {' and '.join(given)}")
    check_coco_sgg_flags(args)
    if args.ag_small_boxes and not args.ag_dir:
        raise InputError("--ag-small-boxes is Action Genome's: give it with --ag-dir", field="--ag-small-boxes")
    if args.exclude_left_right and not args.gqa_dir:
        raise InputError("--exclude-left-right is GQA's (GQA-nLR): give it with --gqa-dir")
    if args.split_key != SPLIT_KEY and not (args.vg150_dir or args.h5):
        raise InputError("--split-key names a key of VG150's h5: give it with --vg150-dir or --h5", field="--split-key")
    if args.no_clip and not (args.vg150_dir or args.h5 or args.coco_sgg):
        raise InputError("--no-clip is for VG150's and COCO-style boxes: give it with --vg150-dir, --h5 or --coco-sgg",
                         field="--no-clip")  # fmt: skip
    if args.oiv6_dir and args.num_val_im != NUM_VAL_IM:
        raise InputError("--num-val-im: Open Images V6 has its own val file (vrd-val-anno.json); nothing is held out")


def _dataset_conf(args: argparse.Namespace) -> dict:
    """The ``conf/dataset`` entry the flags describe: ``boxes.splits.READERS`` builds the dataset, as in the
    pipeline."""
    from sgg_eval.core.errors import InputError
    from sgg_eval.data.vg150 import VG150Files

    if args.simulated:
        return {"kind": "simulated", "name": "simulated", "sim": {"seed": args.seed, "scale": args.scale}}
    common = {"num_val_im": args.num_val_im}
    if args.gqa_dir:
        return {
            "kind": "gqa",
            "name": "gqa",
            "raw": args.gqa_dir,
            "exclude_left_right": args.exclude_left_right,
            **common,
        }
    if args.oiv6_dir:
        return {"kind": "oiv6", "name": "oiv6", "raw": args.oiv6_dir}
    if args.coco_sgg:
        return coco_sgg_conf(args)
    if args.gqa200_dir:
        return {"kind": "gqa200", "name": "gqa200", "raw": args.gqa200_dir, **common}
    common["split_key"] = args.split_key  # VG150's only (run_split refuses it with another source)
    common["clip_boxes"] = not args.no_clip
    if args.vg150_dir:
        return {"kind": "vg150", "name": "vg150", "raw": args.vg150_dir, **common}
    if None in (args.h5, args.dicts, args.image_data):
        raise InputError(
            "give --simulated, --vg150-dir, --gqa-dir, --gqa200-dir, --oiv6-dir, --ag-dir, --coco-sgg, or all of --h5 "
            "--dicts --image-data"
        )
    return {"kind": "vg150", "name": "vg150", "files": VG150Files(args.h5, args.dicts, args.image_data), **common}


def run_stats(args: argparse.Namespace) -> None:
    from sgg_eval.core.errors import InputError

    rules = dict(drop_non_overlapping=args.drop_non_overlapping, background_must_overlap=not args.all_background_pairs)
    if args.seen and not args.test:
        raise InputError("--seen narrows the zero-shot test triplets: give --test too", field="--seen")
    if (args.train is None) == (args.psg is None) or (args.psg and (args.test or args.seen)):
        raise InputError(
            "give a training split store (and optionally --test and --seen), or --psg psg.json", field="train"
        )
    if args.psg:
        from sgg_eval.data.stats import summarize, write_stats
        from sgg_eval.io.atomic import write_json
        from sgg_eval.panoptic.stats import psg_training_stats

        stats = psg_training_stats(args.psg, **rules)
        summary = summarize(stats)
        write_stats(args.output, stats)
        if args.summary:
            write_json(args.summary, summary)
    else:
        from sgg_eval.boxes.splits import build_stats

        summary = build_stats(args.train, args.test, args.output, args.summary, seen_paths=args.seen, **rules)
    brief = {k: v for k, v in summary.items() if k != "predicates"}
    print(json.dumps(brief, indent=2, sort_keys=True))


def run_simulate(args: argparse.Namespace) -> None:
    from sgg_eval.data.stats import read_stats
    from sgg_eval.simulate.models import METHODS, Backbone, simulate_models

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


def run_params(args: argparse.Namespace) -> None:
    from sgg_eval.pipeline.config import write_params

    write_params(args.output, args.conf_dir, args.overrides)
    print(f"wrote {args.output} from {args.conf_dir}/ {' '.join(args.overrides)}".rstrip())


def add_datasets(sub) -> None:
    """The sub-commands ``split`` and ``stats`` of ``sub``."""
    _add_split(sub)
    _add_stats(sub)


def _add_split(sub) -> None:
    p = sub.add_parser(
        "split",
        help="write split stores from real VG150, GQA, GQA200 or Open Images V6 files or the simulator",
        description="Read a dataset and write one HDF5 split store per split (train/val/test).",
        epilog=_EPILOG_SPLIT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_split_sources(p)
    _add_split_options(p)


def _add_split_sources(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("source (choose one)")
    src.add_argument("--simulated", action="store_true", help="the embedded SIMULATED VG150-like benchmark")
    src.add_argument("--vg150-dir", help="folder holding the three VG150 files under their usual names")
    src.add_argument("--h5", help="path of VG-SGG-with-attri.h5")
    src.add_argument("--dicts", help="path of VG-SGG-dicts-with-attri.json")
    src.add_argument("--image-data", help="path of image_data.json")
    src.add_argument(
        "--gqa-dir",
        help="folder holding GQA's train_sceneGraphs.json and val_sceneGraphs.json (or in sceneGraphs/), split as "
        "Knyazev et al. do: test = the val scene graphs, val = the first --num-val-im train images sorted as text. "
        "The images are those with questions (train_images.json/val_images.json, or the *_balanced_questions.json "
        "files, in the folder or questions/); without those files every scene-graph image is a candidate",
    )
    src.add_argument(
        "--gqa200-dir",
        help="folder holding GQA200's GQA_200_ID_Info.json, GQA_200_Train.json and GQA_200_Test.json "
        "(SHA-GCL's split; val is the first --num-val-im kept test images)",
    )
    src.add_argument(
        "--oiv6-dir",
        help="folder holding Open Images V6 as PySGG/BGNN prepare it: categories_dict.json and "
        "vrd-{train,val,test}-anno.json (in the folder or its annotations/); images without a box or a relation "
        "are dropped, the others numbered 0.. in file order (the evaluator's image ids)",
    )
    add_split_sources(src)
    add_coco_sgg_sources(src)


def _add_split_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--exclude-left-right",
        action="store_true",
        help="GQA-nLR: with --gqa-dir, drop the relations 'to the left of' and 'to the right of' (names and indices "
        "stay the same)",
    )
    p.add_argument(
        "--split-key",
        default=SPLIT_KEY,
        metavar="KEY",
        help="VG150: the h5 key of the split codes (2 test, 0 train), e.g. split_GLIPunseen, the test images GLIP "
        "did not see in pre-training, which VS3 and OvSGTR evaluate on (default: %(default)s)",
    )
    p.add_argument(
        "--no-clip",
        action="store_true",
        help="VG150: keep GT boxes past the image border as OvSGTR's and PGSG's loaders read them (--protocol "
        "ovsgtr and pgsg need this; every other protocol clips them when it evaluates, as Scene-Graph-Benchmark's "
        "loader does); --coco-sgg: keep them as the file has them (the export round trip of a store that has them)",
    )
    p.add_argument("-o", "--out-dir", required=True, help="folder for <split>.h5 files")
    p.add_argument("--splits", default="train,val,test", help="comma-separated splits (default: %(default)s)")
    p.add_argument(
        "--num-val-im",
        type=bounded(int, 0),
        default=NUM_VAL_IM,
        help="VG150 and GQA: training images held out for validation (GQA: before any image is dropped); GQA200: "
        "the first test images taken as validation (default: %(default)s)",
    )
    p.add_argument("--seed", type=seed, default=0, help="simulator seed (default: %(default)s)")
    p.add_argument(
        "--scale",
        default="default",
        choices=["tiny", "default", "vg"],
        help="simulator size: tiny, default, or vg (VG150-sized) (default: %(default)s)",
    )
    p.set_defaults(func=run_split)


def _add_stats(sub) -> None:
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
    p.add_argument(
        "--seen",
        action="append",
        default=[],
        metavar="SPLIT",
        help="a split store whose class triplets are not zero-shot either, counted in nothing else (GQA as Knyazev "
        "et al. count it: --seen val.h5); repeatable",
    )
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
    p.set_defaults(func=run_stats)


def add_simulate(sub) -> None:
    """The sub-command ``simulate`` of ``sub``."""
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
        type=bounded(float, 0.0, 100.0),
        help="visual evidence for the true predicate (default: the "
        "backbone's, as in conf/config.yaml's simulation.backbones)",
    )
    p.add_argument(
        "--label-accuracy",
        type=bounded(float, 0.0, 1.0, lo_open=True),
        help="SGCls/SGDet object label accuracy (default: the backbone's)",
    )
    p.add_argument("--score-kind", default="logits", choices=["logits", "probabilities"])
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("-o", "--out-dir", required=True, help="folder for <backbone>_<method>_<task>.h5")
    p.set_defaults(func=run_simulate)


def add_params(sub) -> None:
    """The sub-command ``params`` of ``sub``."""
    p = sub.add_parser(
        "params",
        help="regenerate params.yaml from the Hydra config in conf/",
        description="Compose conf/ with Hydra (plus overrides) and write params.yaml for DVC.",
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. dataset=vg150 dataset.sim.scale=tiny")
    p.add_argument("--conf-dir", default="conf", help="config folder (default: %(default)s)")
    p.add_argument("-o", "--output", default="params.yaml", help="file to write (default: %(default)s)")
    p.set_defaults(func=run_params)
