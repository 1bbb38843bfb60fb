"""``sgg-eval split --coco-sgg DIR``: COCO-style scene-graph files as Maelic/SGG-Benchmark publishes its datasets
(sgg_eval.data.coco_sgg has the loader's rules; docs/sgg_benchmark.md)."""

from __future__ import annotations

import argparse

from sgg_eval.cli.options import seed


def add_split_sources(src) -> None:
    """``--coco-sgg`` in ``split``'s source group, with its two options."""
    src.add_argument(
        "--coco-sgg",
        metavar="DIR",
        help="COCO-style scene graphs as SGG-Benchmark (REACT) lays them out: DIR/<split>/_annotations.coco.json; "
        "images without a relation are dropped, boxes [x, y, w, h] clipped to [0, W] x [0, H]; what its loader "
        "drops silently is counted and printed",
    )
    src.add_argument(
        "--draw-seed",
        type=seed,
        default=None,
        metavar="N",
        help="with --coco-sgg: the seed of the draw that keeps one predicate per (subject, object) pair in val and "
        "test, as SGG-Benchmark's evaluation draws it with NumPy's global generator seeded N (default: 0)",
    )
    src.add_argument(
        "--keep-all-relations",
        action="store_true",
        help="with --coco-sgg: keep every relation in every split (no draw)",
    )


def check_flags(args: argparse.Namespace) -> None:
    """The COCO-style options with --coco-sgg only, and nothing of another dataset's with it."""
    from sgg_eval.core.defaults import NUM_VAL_IM
    from sgg_eval.core.errors import InputError

    for flag, given in (("--draw-seed", args.draw_seed is not None), ("--keep-all-relations", args.keep_all_relations)):
        if given and not args.coco_sgg:
            raise InputError(f"{flag} is for COCO-style files: give it with --coco-sgg", field=flag)
    if args.coco_sgg and args.draw_seed is not None and args.keep_all_relations:
        raise InputError("--keep-all-relations draws nothing: leave out --draw-seed", field="--draw-seed")
    if args.coco_sgg and args.num_val_im != NUM_VAL_IM:
        raise InputError("--num-val-im: the COCO-style files have their own val split; nothing is held out")


def dataset_conf(args: argparse.Namespace) -> dict:
    """The ``conf/dataset`` entry of ``--coco-sgg``."""
    return {
        "kind": "coco_sgg",
        "name": "coco_sgg",
        "raw": args.coco_sgg,
        "draw_seed": 0 if args.draw_seed is None else args.draw_seed,
        "keep_all_relations": args.keep_all_relations,
        "clip_boxes": not args.no_clip,
    }


def print_dropped(paths: dict) -> None:
    """One line per written split store whose loader left something out."""
    from sgg_eval.data.coco_sgg import dropped_summary
    from sgg_eval.data.store import SplitStore

    for path in paths.values():
        with SplitStore(path) as store:
            said = dropped_summary(store.meta.extra)
        if said:
            print(f"{path}: left out as SGG-Benchmark's loader leaves them out: {said}")


def add_export(sub) -> None:
    """``sgg-eval export --coco-sgg DIR STORE...``."""
    p = sub.add_parser(
        "export",
        help="write split stores as SGG-Benchmark's COCO-style files (docs/sgg_benchmark.md)",
        description="Write split stores (`sgg-eval split`'s .h5 files, any dataset) as COCO-style scene graphs, "
        "DIR/<split>/_annotations.coco.json, the files `split --coco-sgg` and SGG-Benchmark read.",
        epilog="example:\n  sgg-eval export data/vg150/splits/train.h5 data/vg150/splits/test.h5 --coco-sgg "
        "data/vg150_coco\n  # read back: every relation, boxes as written\n  sgg-eval split --coco-sgg data/vg150_coco "
        "--keep-all-relations --no-clip --splits train,test -o data/vg150_again",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("stores", nargs="+", metavar="STORE", help="split stores (.h5), one per split")
    p.add_argument("--coco-sgg", required=True, metavar="DIR", help="folder to write <split>/_annotations.coco.json in")
    p.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> None:
    from sgg_eval.data.coco_sgg_write import export_coco_sgg

    for w in export_coco_sgg(args.stores, args.coco_sgg):
        notes = [f"{n} {what}" for n, what in ((w.without_relations, "without a relation (the loader drops them)"),
                 (w.past_the_border, "boxes past the border (the loader clips them)")) if n]  # fmt: skip
        print(f"{w.path}: {w.images} images" + (f"; {'; '.join(notes)}" if notes else ""))
