"""``sgg-eval s2g``: Sentence-to-Graph retrieval (docs/s2g.md), Tang et al.'s downstream test of a model's SGDet
graphs: a retrieval model trained on them, then captions matched to images. Needs the optional extra
``sgg-eval[s2g]`` (torch); without it the command says so in one line (exit 2)."""

from __future__ import annotations

import argparse
import os
import sys

from sgg_eval.cli.options import bounded, seed
from sgg_eval.core.defaults import S2G_TRAINING

_EPILOG = """example (Scene-Graph-Benchmark.pytorch's SGDet outputs on the three splits, its caption-graph file):
  sgg-eval s2g --train train/eval_results.pytorch --val val/eval_results.pytorch \\
      --test test/eval_results.pytorch --captions vg_capgraphs_anno.json -o s2g.json
  # sgg-eval prediction stores carry no ground truth: --splits names the folder of train.h5, val.h5, test.h5
  sgg-eval s2g --train tr.h5 --val va.h5 --test te.h5 --splits data/vg150/splits --captions caps.json -o s2g.json
"""


def add(sub) -> None:
    p = sub.add_parser(
        "s2g",
        help="Sentence-to-Graph retrieval: train Tang et al.'s retrieval model on SGDet graphs, rank captions",
        description="Sentence-to-Graph retrieval (S2G) as Scene-Graph-Benchmark.pytorch computes it (docs/s2g.md): "
        "a model's SGDet graphs of the train, val and test images and the captions' graphs train its retrieval "
        "model (PyTorch: pip install 'sgg-eval[s2g]'); the test block's images and captions are then ranked, "
        "Recall@K on galleries of 1,000 and 5,000 images.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--train", required=True, help="SGDet predictions on the training images (any format sgg-eval reads)"
    )
    p.add_argument("--val", required=True, help="SGDet predictions on the validation images (trained on, as upstream)")
    p.add_argument("--test", required=True, help="SGDet predictions on the test images (the galleries come from them)")
    p.add_argument(
        "--captions", required=True, help="caption-graph file in the upstream layout (vg_capgraphs_anno.json)"
    )
    p.add_argument("-o", "--output", required=True, help="metrics JSON to write")
    p.add_argument("--splits", help="folder of the GT split stores train.h5, val.h5, test.h5 (for prediction stores)")
    p.add_argument("--epochs", type=bounded(int, 1, 1000), default=S2G_TRAINING["epochs"],
                   help=f"training epochs (default {S2G_TRAINING['epochs']}, upstream's command)")  # fmt: skip
    p.add_argument("--seed", type=seed, default=S2G_TRAINING["seed"],
                   help=f"seed of weights, dropout, shuffles, negatives (default {S2G_TRAINING['seed']})")  # fmt: skip
    p.add_argument("--lr", type=bounded(float, 0, 10, lo_open=True), default=S2G_TRAINING["base_lr"],
                   help=f"base learning rate, times the batch of {S2G_TRAINING['batch']} per parameter "
                   f"(default {S2G_TRAINING['base_lr']}, upstream's)")  # fmt: skip
    p.add_argument(
        "--train-images", type=bounded(int, 2), help="train on the first N training images only (quick runs)"
    )
    p.add_argument("--device", default="cpu", help="torch device (default cpu; e.g. cuda)")
    p.set_defaults(func=run_s2g_command)


def run_s2g_command(args: argparse.Namespace) -> None:
    from sgg_eval.core.errors import InputError
    from sgg_eval.io.atomic import write_json
    from sgg_eval.retrieval.evaluate import run_s2g, torch_missing

    missing = torch_missing()
    if missing:
        raise InputError(missing, field="s2g")
    _check_device(args.device)
    gts = {}
    if args.splits:
        gts = {name: os.path.join(args.splits, f"{name}.h5") for name in ("train", "val", "test")}
        absent = [p for p in gts.values() if not os.path.isfile(p)]
        if absent:
            raise InputError("no such split store (--splits needs train.h5, val.h5 and test.h5)", path=absent[0])
    doc = run_s2g(
        args.train, args.val, args.test, args.captions, gts=gts, epochs=args.epochs, seed=args.seed,
        base_lr=args.lr, device=args.device, train_images=args.train_images,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )  # fmt: skip
    write_json(args.output, doc)
    print_summary(doc)


def _check_device(device: str) -> None:
    import torch

    from sgg_eval.core.errors import InputError

    try:
        torch.empty(0, device=torch.device(device))
    except (RuntimeError, AssertionError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"torch cannot use device {device!r}: {first}", field="--device") from None


def print_summary(doc: dict) -> None:
    """A line per gallery and direction: R@K as the reference prints it, then the mean and median rank."""
    from sgg_eval.core.defaults import S2G_GALLERIES, S2G_KS
    from sgg_eval.metrics.names import metric_name
    from sgg_eval.retrieval.ranking import DIRECTIONS

    for size, gallery in doc["galleries"].items():
        name = f"gallery of {int(size):,}" if int(size) in S2G_GALLERIES else "the whole test block"
        for direction in DIRECTIONS:
            m = gallery[direction]
            recalls = " ".join(f"{metric_name('R', k)}={100 * m[metric_name('R', k)]:.2f}" for k in S2G_KS)
            print(f"{name} ({gallery['images']:,} usable images), {direction}: {recalls} "
                  f"mean rank {m['mean_rank']:.1f}, median {m['median_rank']:g}")  # fmt: skip
    for size, why in doc["galleries_not_reported"].items():
        print(f"gallery of {int(size):,} not reported: {why}")
    if doc.get("collapsed"):
        print(f"the trained model collapsed: {doc['collapsed']}")
