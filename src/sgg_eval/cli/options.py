"""What the ``sgg-eval`` commands share: the one-line argparse parser, checked argument types, and the options
several commands take. Nothing heavy is imported here: ``--help`` stays light."""

from __future__ import annotations

import argparse

from sgg_eval.core.defaults import IOU_THRESHOLD
from sgg_eval.core.errors import EXIT_USER
from sgg_eval.core.tasks import TASKS


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line (exit 2), like every other user error."""

    def error(self, message: str):
        self.exit(EXIT_USER, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def bounded(kind, lo=None, hi=None, *, lo_open: bool = False):
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


# a seed the command line takes: what NumPy's RandomState accepts
seed = bounded(int, 0, 2**32 - 1)


def option(name: str):
    """An argparse type for the evaluation option ``name``: the range check of ``metrics.options``, the one
    every entry point runs."""
    from sgg_eval.core.errors import InputError
    from sgg_eval.metrics.options import check_option  # no numpy: --help stays light

    def parse(text: str) -> float:
        try:
            return check_option(name, float(text))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        except InputError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    return parse


def add_scored_inputs(p: argparse.ArgumentParser, task_default: str | None) -> None:
    """The inputs of commands that transform saved scores: predictions, their GT, statistics, task."""
    p.add_argument("predictions", help="eval_results.pytorch or an sgg-eval prediction store")
    p.add_argument("--gt", help="ground-truth split store (for a prediction store)")
    p.add_argument("--stats", required=True, help="training statistics from `sgg-eval stats`")
    p.add_argument("--task", choices=TASKS, required=task_default is None, default=task_default)


def add_iou_threshold(p: argparse.ArgumentParser, default: float | None = IOU_THRESHOLD) -> None:
    p.add_argument(
        "--iou-threshold",
        type=option("iou_threshold"),
        default=default,
        metavar="T",
        help="SGDet: a predicted object matches a GT object of its label at IoU >= this, in the "
        f"recalls and InstR (default: {IOU_THRESHOLD}, the reference's; PredCls and SGCls use the GT "
        "boxes, so it changes nothing there; det_mAP keeps COCO's thresholds). With --psg: masks or boxes "
        "match at this IoU (every PSG protocol's is 0.5; another value is a variant, said in the notes)",
    )


def add_jobs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-j",
        "--jobs",
        type=bounded(int, 1, 1024),
        default=None,
        help="processes ranking images in parallel (default: every core); the result does not depend on it",
    )
