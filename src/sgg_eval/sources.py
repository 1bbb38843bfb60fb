"""Prediction sources: any supported file, paired with its ground truth, as a re-openable image stream.

Formats: Scene-Graph-Benchmark.pytorch ``eval_results.pytorch`` (GT inside; stored order), SGBench JSON
(GT from a split store; stored order; ranks only) and our prediction store (GT from a split store; ranked
by the GC triplet score). Predictions and GT are joined by image id; a GT image without a prediction is an
error naming it.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from sgg_eval.data.store import PredictionStore, SplitStore
from sgg_eval.data.types import GTImage, PredImage, Vocabulary
from sgg_eval.errors import InputError
from sgg_eval.formats.eval_results import EvalResults
from sgg_eval.formats.sgbench_json import read_sgbench_json

Pairs = Iterator[tuple[GTImage, PredImage]]


@dataclass(frozen=True)
class PredictionSource:
    """``pairs()`` opens a fresh stream each call; ``order``/``score_kind`` tell the engine how to rank."""

    path: str
    fmt: str
    vocab: Vocabulary
    order: str
    score_kind: str
    simulated: bool
    notes: tuple[str, ...]
    pairs: Callable[[], Pairs]


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


def _join_store(gt_path: str, pred_path: str) -> Pairs:
    with SplitStore(gt_path) as split, PredictionStore(pred_path) as store:
        ids = store.image_ids
        if np.array_equal(ids, split.image_ids):  # the usual case: same order, stream both
            yield from zip(split, store)
            return
        row_of = {int(i): r for r, i in enumerate(ids)}
        for gt in split:
            if gt.image_id not in row_of:
                raise InputError("no prediction for this GT image", path=pred_path, image_id=gt.image_id)
            yield gt, store.image(row_of[gt.image_id])


def _join_dict(gt_path: str, preds: dict[int, PredImage], pred_path: str) -> Pairs:
    with SplitStore(gt_path) as split:
        for gt in split:
            if gt.image_id not in preds:
                raise InputError("no prediction for this GT image", path=pred_path, image_id=gt.image_id)
            yield gt, preds[gt.image_id]


def _renumber(pairs: Pairs, ids: np.ndarray | None) -> Pairs:
    for i, (gt, pred) in enumerate(pairs):
        if ids is not None:
            gt.image_id = pred.image_id = int(ids[i])
        yield gt, pred


def open_predictions(path: str, *, gt: str | None = None, vocab: Vocabulary | None = None) -> PredictionSource:
    """Recognise ``path`` and pair it with its ground truth (inside the file, or the split store ``gt``).

    An ``eval_results.pytorch`` carries its own GT; given ``gt`` too, its images take the split's ids by
    position (the reference evaluates the test split in order), so derived stores join back to the split.
    """
    path = os.fspath(path)
    fmt = detect_format(path)
    if fmt == "eval_results":
        loaded = EvalResults(path, vocab)
        vocab, count = loaded.vocab, len(loaded)
        ids = None
        if gt:  # the file numbers images by position; the split (same order, as the reference) has real ids
            with SplitStore(gt) as split:
                ids = split.image_ids
            if len(ids) != count:
                raise InputError(f"{count} images, but the GT split {gt} has {len(ids)}: not the same test set",
                                 path=path)
        return PredictionSource(path, fmt, vocab, "stored", "probabilities", False, (),
                                lambda: _renumber(loaded.pairs(), ids))
    if not gt:
        raise InputError(f"{fmt} predictions need the ground truth: pass --gt SPLIT_STORE", path=path)
    with SplitStore(gt) as split:
        gt_vocab = split.vocab
    if fmt == "sgbench_json":
        preds, dropped = read_sgbench_json(path, gt_vocab)
        notes = (f"{dropped} duplicate triplets dropped (first kept)",) if dropped else ()
        return PredictionSource(path, fmt, gt_vocab, "stored", "ranked", False, notes,
                                lambda: _join_dict(gt, preds, path))
    with PredictionStore(path) as store:
        if store.vocab != gt_vocab:
            raise InputError("class or predicate names differ from the GT split's", path=path)
        meta = store.meta
    notes = ("SIMULATED predictions",) if meta.simulated else ()
    return PredictionSource(path, fmt, gt_vocab, "score", meta.score_kind, meta.simulated, notes,
                            lambda: _join_store(gt, path))
