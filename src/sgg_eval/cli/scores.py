"""``sgg-eval pko`` and ``blind-replace``: transformations of a model's saved scores (the IMR/PKO paper)."""

from __future__ import annotations

import argparse
import sys

from sgg_eval.cli.options import add_scored_inputs, bounded
from sgg_eval.core.defaults import BLIND_K, EPS, LAM
from sgg_eval.core.tasks import PREDCLS
from sgg_eval.metrics.names import metric_name


def run_pko(args: argparse.Namespace) -> None:
    from sgg_eval.boxes.pko import PKOParams, pko_predictions
    from sgg_eval.boxes.sources import open_predictions
    from sgg_eval.data.stats import read_stats

    stats = read_stats(args.stats)
    source = open_predictions(args.predictions, gt=args.gt, vocab=stats.vocab)
    n = pko_predictions(source, args.task, stats, args.output, PKOParams(lam=args.lam, eps=args.eps), only=args.only)
    print(f"{args.output}: {n} images, {'PKO-only' if args.only else 'PKO'} logits")


def run_blind_replace(args: argparse.Namespace) -> None:
    from sgg_eval.boxes.pko import blind_replacement
    from sgg_eval.boxes.sources import open_predictions
    from sgg_eval.data.stats import read_stats
    from sgg_eval.io.atomic import write_json
    from sgg_eval.metrics.misuse import warning_summary

    stats = read_stats(args.stats)
    source = open_predictions(args.predictions, gt=args.gt, vocab=stats.vocab)
    rows, warnings = blind_replacement(source, stats, args.task, max_n=args.max_n)
    if args.output:
        write_json(args.output, {"task": args.task, "rows": rows, "notes": warnings})
    metric = metric_name("mR", BLIND_K)
    print(f"{'N':>2}  {'predicate':14} {'pairs':>5}  {metric:>7}  {'gain':>6}")
    for r in rows:
        pairs = "" if r["num_type_pairs"] is None else r["num_type_pairs"]
        print(f"{r['N']:>2}  {r['predicate']:14} {pairs:>5}  {100 * r[metric]:7.2f}  {100 * r['improvement']:+6.2f}")
    if warnings:
        print(warning_summary(warnings), file=sys.stderr)


def add(sub) -> None:
    """The sub-commands ``pko`` and ``blind-replace`` of ``sub``."""
    p = sub.add_parser(
        "pko",
        help="add the PKO prior to saved predictions (or PKO-only)",
        description="z = z_hat + lam * b on the predicate columns, b = log P^s(k|i) + log P^o(k|j) "
        "from the training statistics (docs/definitions.md §5). Reads logits or probabilities "
        "(via log p), writes a new store of logits; the input is never modified.",
        epilog="example:\n  sgg-eval pko eval_results.pytorch --stats stats.h5 --task predcls -o motifs_pko.h5",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scored_inputs(p, task_default=None)
    p.add_argument(
        "--lam", type=bounded(float, -1e6, 1e6), default=LAM, help="prior weight lambda (default: %(default)s)"
    )
    p.add_argument(
        "--eps",
        type=bounded(float, 0.0, 1e6, lo_open=True),
        default=EPS,
        help="count smoothing epsilon (default: %(default)s)",
    )
    p.add_argument("--only", action="store_true", help="PKO-only: z = lam * b, no model evidence")
    p.add_argument("-o", "--output", required=True, help="prediction store to write (.h5)")
    p.set_defaults(func=run_pko)

    p = sub.add_parser(
        "blind-replace",
        help="paper Table 1: blindly replace the N tail predicates",
        description="For N = 0..max-n, replace the prediction on every pair composable with one of "
        "the N predicates of fewest composable pairs (training) by that predicate, "
        "and report mR@100.",
        epilog="example:\n  sgg-eval blind-replace motifs_predcls.h5 --gt test.h5 --stats stats.h5 --task predcls",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scored_inputs(p, task_default=PREDCLS.name)
    p.add_argument("--max-n", type=bounded(int, 0, 1000), default=6, help="largest N (default: %(default)s)")
    p.add_argument("-o", "--output", help="also write the rows as JSON")
    p.set_defaults(func=run_blind_replace)
