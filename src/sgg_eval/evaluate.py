"""``sgg-eval evaluate``: open a prediction source, run the engine with the right ranking, return the JSON."""

from __future__ import annotations

import os
import sys
import time
from importlib import resources

import numpy as np

from sgg_eval.errors import InputError
from sgg_eval.formats.torchfile import LazyTensor, load
from sgg_eval.metrics.engine import EvalOptions, evaluate
from sgg_eval.sources import open_predictions
from sgg_eval.stats import TrainingStats, check_zeroshot_ids, read_stats


def _progress(pairs, enabled: bool, every_s: float = 15.0):
    """Yield ``pairs`` unchanged, reporting progress on stderr: a running count on a terminal, otherwise (a
    DVC stage, a log file) one line every ``every_s`` seconds, so a long evaluation never looks hung."""
    if not enabled:
        yield from pairs
        return
    tty, start = sys.stderr.isatty(), time.monotonic()
    last, n = start, 0
    for n, item in enumerate(pairs, 1):
        if tty and n % 500 == 0:
            print(f"\r  evaluated {n} images", end="", file=sys.stderr, flush=True)
        elif not tty and n % 64 == 0 and time.monotonic() - last >= every_s:
            last = time.monotonic()
            print(f"  evaluated {n} images ({n / (last - start):.0f}/s)", file=sys.stderr, flush=True)
        yield item
    if tty:
        print(f"\r  evaluated {n} images", file=sys.stderr)


def load_zeroshot(spec: str) -> tuple[np.ndarray, str]:
    """A zero-shot triplet file ([Z, 3] subject, object, predicate; torch format), or ``vg150`` for the
    reference codebase's own list shipped with sgg-eval."""
    if spec == "vg150":
        spec = str(resources.files("sgg_eval.data").joinpath("resources/zeroshot_triplet.pytorch"))
    obj = load(spec)
    raw = obj.numpy() if isinstance(obj, LazyTensor) else None
    if raw is None or raw.ndim != 2 or raw.shape[1] != 3 or raw.dtype.kind not in "iu":
        what = f"shape {list(raw.shape)} dtype {raw.dtype}" if raw is not None else type(obj).__name__
        raise InputError(f"expected one integer tensor [Z, 3] (subject, object, predicate), got {what}",
                         path=spec, field="zeroshot")
    zs = np.asarray(raw, dtype=np.int64)
    return zs, f"file {os.path.basename(spec)} ({len(zs)} triplets)"


def check_tau(tau: float) -> None:
    """wIMR's exponent τ must be a finite number in [0, 1] (SPEC §3)."""
    if not (isinstance(tau, (int, float)) and np.isfinite(tau) and 0.0 <= tau <= 1.0):
        raise InputError(f"tau = {tau} must be in [0, 1]", field="tau")


def run_evaluation(predictions: str, task: str, *, gt: str | None = None, protocol: str = "reference",
                   stats: str | None = None, zeroshot: str | None = None, tau: float = 0.5,
                   progress: bool = False, jobs: int = 1) -> dict:
    """Evaluate ``predictions`` and return the metrics document; ``jobs`` processes rank blocks of images
    in parallel (``metrics.blocks``), with the same document for any number."""
    check_tau(tau)
    train: TrainingStats | None = read_stats(stats) if stats else None
    source = open_predictions(predictions, gt=gt, vocab=train.vocab if train else None)
    if train is not None and train.vocab != source.vocab:
        raise InputError("class or predicate names differ from the predictions'", path=stats)
    zs, zs_source = None, ""
    if zeroshot:
        zs, zs_source = load_zeroshot(zeroshot)
        check_zeroshot_ids(zs, source.vocab, zeroshot, "zeroshot")
    elif train is not None:
        zs = train.zeroshot_triplets
        zs_source = f"computed from {os.path.basename(stats)} ({len(zs)} triplets)"
    opts = EvalOptions(task=task, protocol=protocol, order=source.order, score_kind=source.score_kind, tau=tau)
    result = evaluate(_progress(source.pairs(), progress), source.vocab, opts, source=predictions,
                      jobs=jobs,
                      triplet_counts=train.triplet_counts if train else None,
                      num_pairs=train.num_pairs if train else None, zeroshot=zs, zeroshot_source=zs_source)
    result["notes"] = list(source.notes) + result["notes"]
    result["input"] = {"predictions": os.path.basename(predictions), "format": source.fmt}
    return result
