"""The command's Action Genome parts: ``sgg-eval split --ag-dir`` (split stores of frames, as STTran's loader
builds them) and ``sgg-eval evaluate --ag`` (the ``sttran`` and ``oed`` protocols). docs/action_genome.md."""

from __future__ import annotations

import argparse

from sgg_eval.cli.options import bounded
from sgg_eval.core.defaults import AG_SMALL_BOX_STORE, VIDEO_PROTOCOLS
from sgg_eval.core.protocols import (
    STTRAN_ALL,
    STTRAN_ATTENTION,
    STTRAN_ATTENTION_KINDS,
    STTRAN_CONSTRAINT,
    STTRAN_CONSTRAINTS,
    STTRAN_SEMI_THRESHOLD,
    protocol,
)
from sgg_eval.metrics.names import metric_name


def add_split_sources(src) -> None:
    """``--ag-dir`` and ``--ag-small-boxes`` in ``split``'s source group."""
    src.add_argument(
        "--ag-dir",
        help="Action Genome: the folder holding annotations/ (person_bbox.pkl, object_bbox_and_relationship.pkl, "
        "object_classes.txt, relationship_classes.txt); writes train.h5 and test.h5, frames as STTran's loader "
        "keeps them (pickles read as plain data, nothing executed)",
    )
    src.add_argument(
        "--ag-small-boxes",
        metavar="FILE",
        help="with --ag-dir: the STTran authors' object_bbox_and_relationship_filtersmall.pkl, on which STTran "
        f"scores SGCls and SGDet; writes {AG_SMALL_BOX_STORE} too",
    )


def run_ag_split(args: argparse.Namespace) -> None:
    from sgg_eval.core.errors import InputError
    from sgg_eval.video.ag_annotations import SPLITS
    from sgg_eval.video.ag_store import write_ag_splits

    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    unknown = [s for s in splits if s not in SPLITS and s != "val"]
    if unknown:
        raise InputError(f"Action Genome has the splits {' and '.join(SPLITS)}, not {unknown[0]}", field="--splits")
    for path, split in write_ag_splits(args.ag_dir, args.out_dir, tuple(splits), args.ag_small_boxes):
        c = split.counts
        shorter = len(split.videos) - c["videos"]
        print(f"{path}: {c['frames']} frames of {c['videos']} videos as STTran keeps them (dropped: "
              f"{c['frames_without_person_box']} frames without a person box, {c['one_frame_videos']} one-frame "
              f"videos, {c['videos_without_person']} videos with 0 or 2 frames; the store keeps the {shorter} "
              "videos of 1 or 2 frames for OED)")  # fmt: skip


def add_evaluate_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        f"video scene graphs on Action Genome (--protocol {' or '.join(VIDEO_PROTOCOLS)}, "
        "default sttran; docs/action_genome.md)"
    )
    g.add_argument(
        "--ag",
        metavar="SPLIT_STORE",
        help="PREDICTIONS are a video-SGG model's per-video dicts (a folder of <video>.pt or .npz files, or one "
        "torch file {video: dict}) scored on this split store from `sgg-eval split --ag-dir` (SGCls and SGDet: "
        f"its {AG_SMALL_BOX_STORE})",
    )
    g.add_argument(
        "--ag-train",
        metavar="SPLIT_STORE",
        help="the train.h5 `sgg-eval split --ag-dir` writes: the training split for sgg-eval's own zR@K, wIMR@K "
        "and head/body/tail mean recalls (beyond_protocol in the JSON)",
    )
    g.add_argument(
        "--constraint",
        choices=[*STTRAN_CONSTRAINTS, STTRAN_ALL],
        default=None,
        help="with: one predicate per relation row; semi (sttran only): the spatial and contacting predicates above "
        "--semi-threshold; no: the 100 best of every score; all: every one the protocol's tool builds, from one "
        f"reading of the predictions (default: {STTRAN_CONSTRAINT})",
    )
    g.add_argument(
        "--semi-threshold",
        type=bounded(float, 0.0, 1.0),
        default=None,
        metavar="T",
        help=f"the semi constraint's threshold, strict (default: {STTRAN_SEMI_THRESHOLD}, STTran's)",
    )
    g.add_argument(
        "--attention",
        choices=STTRAN_ATTENTION_KINDS,
        default=None,
        help="what attention_distribution holds: logits (STTran's model; its evaluator applies the "
        "softmax) or probabilities (TEMPURA's and OED's models) (default: the protocol's model's, "
        f"{STTRAN_ATTENTION} for sttran, {dict(protocol('oed').options)['attention']} for oed)",
    )


def check_video_options(args: argparse.Namespace) -> None:
    """The Action Genome options only with ``--ag``."""
    from sgg_eval.core.errors import InputError

    options = (("--constraint", args.constraint), ("--semi-threshold", args.semi_threshold),
               ("--attention", args.attention), ("--ag-train", args.ag_train))  # fmt: skip
    given = [flag for flag, value in options if value is not None]
    if given and not args.ag:
        raise InputError(f"{given[0]} is Action Genome's: give it with --ag", field=given[0])


def evaluate_video(args: argparse.Namespace) -> None:
    from sgg_eval.core.errors import InputError
    from sgg_eval.io.atomic import write_json
    from sgg_eval.video.ag_evaluate import evaluate_ag, options_for

    if args.task is None:
        raise InputError("--task is required with --ag (predcls, sgcls or sgdet)", field="--task")
    others = [f for f, v in (("--gt", args.gt), ("--psg", args.psg), ("--text-graphs", args.text_graphs),
                             ("--stats", args.stats), ("--per-image", args.per_image)) if v]  # fmt: skip
    if others or (args.protocol and args.protocol not in VIDEO_PROTOCOLS):
        what = others[0] if others else f"--protocol {args.protocol}"
        raise InputError(f"{what} is not for Action Genome: --ag takes --protocol {' or '.join(VIDEO_PROTOCOLS)}, "
                         "--task, --constraint, --semi-threshold, --attention, --iou-threshold and -o",
                         field=what.split()[0])  # fmt: skip
    name = args.protocol or VIDEO_PROTOCOLS[0]
    iou = {"iou_threshold": args.iou_threshold} if args.iou_threshold is not None else {}
    options = options_for(name, args.task, args.constraint, args.semi_threshold, args.attention, **iou)
    doc = evaluate_ag(args.ag, args.predictions, options, args.ag_train)
    if args.output:
        write_json(args.output, doc)
    left_out = doc["counts"]["videos_not_scored"]
    if left_out:
        print(
            f"{left_out} videos of the split are not scored: {name} scores videos of at least "
            f"{options.rules.min_video_frames} frames (docs/action_genome.md)"
        )
    for constraint, result in doc["results"].items():
        _print(constraint, args.task, result, name)


def _print(constraint: str, task: str, result: dict, name: str) -> None:
    """The tool's lines (STTran's test.py and print_stats; OED's are the same), each with the two mean recalls
    beside its R@K."""
    print(f"{'-' * 25}{constraint} constraint{'-' * 25}")
    print(f"{'=' * 22}{task}{'=' * 28}")
    m, ties = result["metrics"], result["tie_range"]
    for k in (10, 20, 50, 100):
        print(f"R@{k}: {m[f'R@{k}']:f}    mR@{k} pooled (TEMPURA): {m[f'mR_pooled@{k}']:f}    "
              f"per frame (DSG-DETR): {m[f'mR_per_frame@{k}']:f}")  # fmt: skip
    decided = {k: n for k, n in ties["decided_by_tie_order"].items() if n}
    if decided:
        spans = ", ".join(f"R{k} in [{ties['range'][f'R{k}'][0]:f}, {ties['range'][f'R{k}'][1]:f}]" for k in decided)
        tool = protocol(name).source.tool
        print(f"ties: {tool}'s unstable sort decides {max(decided.values())} GT relations at some K, so its own "
              f"numbers lie in a range: {spans} (sgg-eval's order is stable; docs/action_genome.md, Ties)")  # fmt: skip
    beyond = result["beyond_protocol"]
    names = [metric_name(family, k) for family in ("zR", "IMR", "wIMR") for k in (20, 50)]
    shown = [f"{name} {beyond['metrics'][name]:f}" for name in names if beyond["metrics"].get(name) is not None]
    print(f"sgg-eval's own (beyond_protocol in the JSON): {'  '.join(shown)}"
          + ("" if "longtail" in beyond else "  (zR, wIMR, head/body/tail: give --ag-train)"))  # fmt: skip
