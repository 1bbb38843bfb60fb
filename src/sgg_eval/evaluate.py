"""``sgg-eval evaluate``: recognise the prediction file, pair it with its ground truth, run the engine.

Sources: a Scene-Graph-Benchmark.pytorch ``eval_results.pytorch`` (GT inside; stored order), an SGBench
JSON (GT from a split store; stored order, ranks only) or our prediction store (GT from a split store;
ranked by the GC triplet score). Pairs are streamed; predictions and GT are joined by image id.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator
from importlib import resources

import numpy as np

from sgg_eval.data.store import PredictionStore, SplitStore
from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.errors import InputError
from sgg_eval.formats.eval_results import read_eval_results
from sgg_eval.formats.sgbench_json import read_sgbench_json
from sgg_eval.formats.torchfile import load
from sgg_eval.metrics.engine import EvalOptions, evaluate
from sgg_eval.stats import TrainingStats, read_stats


def detect_format(path: str) -> str:
    """``eval_results`` | ``sgbench_json`` | ``store``, from the file's first bytes."""
    if not os.path.exists(path):
        raise InputError("file not found", path=path)
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head.startswith(b"\x89HDF"):
        return "store"
    if zipfile.is_zipfile(path) or head[:1] == b"\x80":
        return "eval_results"
    if head.lstrip()[:1] == b"{":
        return "sgbench_json"
    raise InputError("unknown prediction format (expected eval_results.pytorch, SGBench JSON or an sgg-eval store)",
                     path=path)


def _join(gt_path: str, preds: dict[int, PredImage] | None, store: PredictionStore | None
          ) -> Iterator[tuple[GTImage, PredImage]]:
    """GT images in split order with their predictions; a GT image without prediction is an error."""
    with SplitStore(gt_path) as split:
        if store is not None:
            ids = np.asarray(store._reader.images["image_id"])
            row_of = {int(i): r for r, i in enumerate(ids)}
            gt_ids = np.asarray(split._reader.images["image_id"])
            aligned = len(ids) == len(gt_ids) and np.array_equal(ids, gt_ids)
            pred_iter = iter(store) if aligned else None
        for gt in split:
            if store is not None:
                if pred_iter is not None:
                    pred = next(pred_iter)
                elif gt.image_id in row_of:
                    pred = store.image(row_of[gt.image_id])
                else:
                    raise InputError("no prediction for this GT image", path=store.path, image_id=gt.image_id)
            else:
                if gt.image_id not in preds:
                    raise InputError("no prediction for this GT image", image_id=gt.image_id, path=gt_path)
                pred = preds[gt.image_id]
            yield gt, pred


def _progress(pairs, enabled: bool):
    """Yield ``pairs`` unchanged; on a terminal, show a running count on stderr."""
    if not enabled:
        yield from pairs
        return
    import sys

    n = 0
    for n, item in enumerate(pairs, 1):
        if n % 500 == 0:
            print(f"\r  evaluated {n} images", end="", file=sys.stderr, flush=True)
        yield item
    print(f"\r  evaluated {n} images", file=sys.stderr)


def run_evaluation(predictions: str, task: str, *, gt: str | None = None, protocol: str = "reference",
                   stats: str | None = None, zeroshot: str | None = None, tau: float = 0.5,
                   progress: bool = False) -> dict:
    """Evaluate ``predictions`` and return the metrics document."""
    fmt = detect_format(predictions)
    train: TrainingStats | None = read_stats(stats) if stats else None
    notes: list[str] = []
    if fmt == "eval_results":
        vocab, _, pairs = read_eval_results(predictions, train.vocab if train else None)
        opts = EvalOptions(task=task, protocol=protocol, order="stored", tau=tau)
    else:
        if not gt:
            raise InputError(f"{fmt} predictions need the ground truth: pass --gt SPLIT_STORE", path=predictions)
        with SplitStore(gt) as split:
            vocab = split.vocab
        if fmt == "sgbench_json":
            preds, dropped = read_sgbench_json(predictions, vocab)
            if dropped:
                notes.append(f"{dropped} duplicate triplets dropped (first kept)")
            pairs = _join(gt, preds, None)
            opts = EvalOptions(task=task, protocol=protocol, order="stored", score_kind="ranked", tau=tau)
        else:
            store = PredictionStore(predictions)
            if store.vocab != vocab:
                raise InputError("class or predicate names differ from the GT split's", path=predictions)
            if store.meta.task != task:
                notes.append(f"the store says task '{store.meta.task}', evaluated as '{task}'")
            pairs = _join(gt, None, store)
            opts = EvalOptions(task=task, protocol=protocol, order="score", score_kind=store.meta.score_kind, tau=tau)
            if store.meta.simulated:
                notes.append("SIMULATED predictions")
    zs, zs_source = None, ""
    if zeroshot == "vg150":  # the reference codebase's own VG150 list, shipped with sgg-eval
        zeroshot = str(resources.files("sgg_eval.data").joinpath("resources/zeroshot_triplet.pytorch"))
    if zeroshot:
        zs = np.asarray(load(zeroshot).numpy(), dtype=np.int64).reshape(-1, 3)
        zs_source = f"file {zeroshot} ({len(zs)} triplets)"
    elif train is not None:
        zs, zs_source = train.zeroshot_triplets, f"computed from {stats} ({len(train.zeroshot_triplets)} triplets)"
    if train is not None and train.vocab != vocab:
        raise InputError("class or predicate names differ from the predictions'", path=stats)
    result = evaluate(_progress(pairs, progress), vocab, opts, source=predictions,
                      triplet_counts=train.triplet_counts if train else None,
                      num_pairs=train.num_pairs if train else None, zeroshot=zs, zeroshot_source=zs_source)
    result["notes"] = notes + result["notes"]
    result["input"] = {"predictions": os.path.basename(predictions), "format": fmt}
    return result
