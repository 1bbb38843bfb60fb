"""The ``sgg-eval`` command line. Each sub-command is one library call; bad input exits 2 with one line.

One module per group of commands (``data``, ``evaluate``, ``protocols``, ``audit``, ``s2g``, ``scores``,
``service``), each with its parsers (``add...(sub)``) and a ``run_<command>(args)`` per command; ``options`` holds
what they share."""

from __future__ import annotations

import argparse
import sys

import sgg_eval.cli.audit as audit
import sgg_eval.cli.coco_sgg as coco_sgg
import sgg_eval.cli.data as data
import sgg_eval.cli.evaluate as evaluate
import sgg_eval.cli.protocols as protocols
import sgg_eval.cli.s2g as s2g
import sgg_eval.cli.scores as scores
import sgg_eval.cli.service as service
from sgg_eval.cli.options import Parser
from sgg_eval.core.errors import EXIT_USER, guarded


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="sgg-eval",
        description="Exact, fast evaluation of scene graph generation (SGG): splits, statistics, metrics.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="print the traceback of any error (also: SGG_EVAL_DEBUG=1)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # in the order of --help (and of a user's work: data, evaluation, audit, simulation, PKO, pipeline)
    data.add_datasets(sub)
    coco_sgg.add_export(sub)
    evaluate.add(sub)
    protocols.add(sub)
    audit.add(sub)
    s2g.add(sub)
    data.add_simulate(sub)
    scores.add(sub)
    data.add_params(sub)
    service.add(sub)
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
