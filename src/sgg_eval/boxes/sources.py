"""Prediction sources: any supported file, paired with its ground truth, as a re-openable image stream.

Formats: Scene-Graph-Benchmark.pytorch ``eval_results.pytorch`` (GT inside; stored order), SGBench JSON
(GT from a split store; stored order; ranks only) and our prediction store (GT from a split store; ranked
by the GC triplet score). Predictions and GT are joined by image id; a GT image without a prediction is an
error naming it.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from sgg_eval.boxes.split_gt import FILE_GT_EXTRA, Pairs, gt_boxes_of, on_split_gt
from sgg_eval.core.defaults import SPLIT_KEY
from sgg_eval.core.errors import InputError
from sgg_eval.data.image_ids import image_id_value
from sgg_eval.data.types import PredImage, Vocabulary
from sgg_eval.formats.eval_results import EvalResults, start_parse
from sgg_eval.formats.sgbench_json import read_sgbench_json
from sgg_eval.formats.sgg_benchmark_predictions import FORMAT as SGG_BENCHMARK
from sgg_eval.formats.sgg_benchmark_predictions import SggBenchmarkPredictions, is_prediction_list
from sgg_eval.io.integrity import SEAL_MAGIC


@dataclass(frozen=True)
class PredictionSource:
    """``count`` images in GT split order; ``read(start, stop)`` streams the (GT, prediction) pairs at
    positions ``start:stop``, opening what it needs on each call, so a forked ``--jobs`` worker reads its own
    block; ``pairs()`` streams them all; ``release(start, stop)`` says a block is done (a mapped file drops
    its pages from this process). ``order``/``score_kind`` tell the engine how to rank. ``gt_extra`` is what the
    GT split store says about itself (its ``extra``: the VG150 reader's split key and box clipping)."""

    path: str
    fmt: str
    vocab: Vocabulary
    order: str
    score_kind: str
    simulated: bool
    notes: tuple[str, ...]
    count: int
    read: Callable[[int, int], Pairs]
    release: Callable[[int, int], None] | None = None
    gt_extra: dict = field(default_factory=dict)

    def pairs(self) -> Pairs:
        return self.read(0, self.count)

    @property
    def gt_boxes(self) -> str:
        """How the GT stores its boxes: ``clipped`` to the image (a VG150 split, as Scene-Graph-Benchmark's loader
        does), ``unclipped`` (a VG150 split made with ``--no-clip``, as OvSGTR's and PGSG's loaders read them),
        ``the file's own`` (an eval_results.pytorch's groundtruths: clipped or not, nothing says) or ``as given``
        (any other source)."""
        return gt_boxes_of(self.gt_extra)

    @property
    def split_key(self) -> str:
        """The VG150 h5 key the GT's split codes came from (``split`` unless the split store says otherwise)."""
        return self.gt_extra.get("split_key", SPLIT_KEY)


_JSON_SPACE = b" \t\n\r"  # what JSON allows before a value


def _first_json_byte(fh, head: bytes) -> bytes:
    """The first byte of ``head`` and the rest of the open file ``fh`` that is not JSON whitespace (``b""`` for none):
    any amount of it may come before a JSON document's first brace, so it is skipped however long it runs."""
    chunk = head
    while chunk:
        rest = chunk.lstrip(_JSON_SPACE)
        if rest:
            return rest[:1]
        chunk = fh.read(1 << 16)
    return b""


def detect_format(path: str) -> str:
    """``eval_results`` | ``sgg_benchmark`` | ``sgbench_json`` | ``store``, from the file's first bytes."""
    if not os.path.exists(path):
        raise InputError("file not found", path=path)
    if not os.path.isfile(path):  # a folder, or a FIFO or device, which reading would wait on forever
        raise InputError("not a file, expected predictions", path=path)
    with open(path, "rb") as fh:
        head = fh.read(32)
        if head.startswith(b"\x89HDF") or head.startswith(SEAL_MAGIC):  # unsealed: refused by the store's reader
            return "store"
        if zipfile.is_zipfile(path):  # a torch.save file: SGG-Benchmark's list, or Scene-Graph-Benchmark's dict
            return SGG_BENCHMARK if is_prediction_list(path) else "eval_results"
        if head[:1] == b"\x80":  # the legacy torch layout
            return "eval_results"
        if _first_json_byte(fh, head) == b"{":
            return "sgbench_json"
    raise InputError(
        "unknown prediction format (expected eval_results.pytorch, SGG-Benchmark's predictions.pth, SGBench JSON or "
        "an sgg-eval store)",
        path=path,
    )


class _Opened:
    """A store kept open while its source is used, opened once per process: a forked ``--jobs`` worker opens
    its own (an HDF5 handle does not survive fork) instead of opening it for every block of images, which
    read the store's per-image columns each time (~3 ms per block, growing with the split). Or a store already
    read into memory (``loaded``), which every process uses as it is."""

    def __init__(self, kind: type, path: str, loaded=None):
        self.kind, self.path, self._pid, self._store = kind, path, None, None
        self._loaded = loaded  # a store read into memory (``_Store.load``): valid in any forked process

    def __call__(self):
        if self._loaded is not None:
            return self._loaded
        if self._pid != os.getpid():
            self._store, self._pid = self.kind(self.path), os.getpid()
        return self._store

    def __getstate__(self) -> dict:  # a copy in another process opens the store again
        return {**self.__dict__, "_pid": None, "_store": None, "_loaded": None}

    def __del__(self) -> None:  # with its source (a forked worker's copy closes in that worker)
        if self._store is not None and self._pid == os.getpid():
            self._store.close()


def _check_same_split(gt_ids: np.ndarray, pred_ids: np.ndarray, path: str, gt: str) -> None:
    """Refuse a prediction file that misses more than half of the split's images: it was made for another
    split (a few missing images are named one by one, as the join reaches them)."""
    missing = int(np.count_nonzero(~np.isin(gt_ids, pred_ids)))
    if 2 * missing <= len(gt_ids):
        return
    positions = len(pred_ids) and np.array_equal(np.sort(pred_ids), np.arange(len(pred_ids)))
    hint = (
        (
            f"; its images are numbered 0..{len(pred_ids) - 1}, as `sgg-eval pko` numbers an "
            f"eval_results.pytorch's images without --gt: write it again with --gt {gt}"
        )
        if positions
        else ""
    )
    raise InputError(
        f"{missing:,} of the {len(gt_ids):,} images of the GT split {gt} have no prediction here: "
        f"this file was made for another split{hint}",
        path=path,
    )


def _join_store(opened_split: _Opened, opened_store: _Opened, pred_path: str, start: int, stop: int) -> Pairs:
    split, store = opened_split(), opened_store()
    if np.array_equal(store.image_ids, split.image_ids):  # the usual case: same order, read both by rows
        yield from zip(split.images(start, stop), store.images(start, stop))
        return
    row_of = {image_id_value(i): r for r, i in enumerate(store.image_ids)}
    for gt in split.images(start, stop):
        if gt.image_id not in row_of:
            raise InputError("no prediction for this GT image", path=pred_path, image_id=gt.image_id)
        yield gt, store.image(row_of[gt.image_id])


def _join_dict(opened_split: _Opened, preds: dict[int, PredImage], pred_path: str, start: int, stop: int) -> Pairs:
    split = opened_split()
    for gt in split.images(start, stop):
        if gt.image_id not in preds:
            raise InputError("no prediction for this GT image", path=pred_path, image_id=gt.image_id)
        yield gt, preds[gt.image_id]


def _join_positions(opened_split: _Opened, preds: SggBenchmarkPredictions, start: int, stop: int) -> Pairs:
    split = opened_split()
    for position, gt in enumerate(split.images(start, stop), start):
        yield gt, preds.image(position, gt.image_id, split.vocab)


def _sgg_benchmark_source(path: str, gt: str, vocab: Vocabulary, count: int, gt_extra: dict) -> PredictionSource:
    """SGG-Benchmark's ``predictions.pth`` on the split store ``gt``: entry i is image i of the split, in the stored
    order (its evaluator never sorts), scores as the softmax it saves."""
    from sgg_eval.data.store import SplitStore

    preds = SggBenchmarkPredictions(path)
    if len(preds) != count:
        raise InputError(
            f"{len(preds)} images, but the GT split {gt} has {count}: SGG-Benchmark pairs them by position (a shorter "
            "list would silently leave out the last images), so they must be the same test set",
            path=path,
        )
    return PredictionSource(
        path, SGG_BENCHMARK, vocab, "stored", "probabilities", False,
        (f"scored on the GT split {os.path.basename(gt)}, image i of the list as image i of the split",), count,
        partial(_join_positions, _Opened(SplitStore, gt), preds), gt_extra=gt_extra,
    )  # fmt: skip


def open_predictions(path: str, *, gt: str | None = None, vocab: Vocabulary | None = None) -> PredictionSource:
    """:func:`_open_predictions`, refusing an input of no image: nothing would be evaluated, and every metric
    would be a silent 0 or null."""
    source = _open_predictions(path, gt=gt, vocab=vocab)
    if source.count == 0:
        raise InputError("no image to evaluate (0 images)", path=gt or path)
    return source


def _open_predictions(path: str, *, gt: str | None = None, vocab: Vocabulary | None = None) -> PredictionSource:
    """Recognise ``path`` and pair it with its ground truth (inside the file, or the split store ``gt``).

    An ``eval_results.pytorch`` carries its own GT, used when ``gt`` is not given. Given ``gt``, its images are
    the split's by position (the reference evaluates the test split in order) and are scored on the split's GT,
    after checking the file's GT equals it (``_on_split_gt``), so derived stores join back to the same GT.
    """
    path = os.fspath(path)
    fmt = detect_format(path)
    if fmt == "eval_results" and not gt:
        loaded = EvalResults(path, vocab, row_maxima=True)
        return PredictionSource(
            path, fmt, loaded.vocab, "stored", "probabilities", False, (), len(loaded), loaded.read, loaded.release,
            FILE_GT_EXTRA,  # the file's own groundtruths: Scene-Graph-Benchmark's loader clips them, but not every tool
        )  # fmt: skip
    if fmt == "eval_results":
        # the file parses in a child while this process imports h5py and reads the split's GT into memory
        # (~50 ms; forked workers then read it without opening the split)
        with start_parse(path) as parsing:
            from sgg_eval.data.store import SplitStore

            with SplitStore(gt) as split:
                n_split, split_vocab, gt_extra = len(split.image_ids), split.vocab, split.meta.extra
                split.load()
            if vocab is not None and vocab != split_vocab:
                raise InputError(f"class or predicate names differ from the GT split {gt}'s", path=path)
            loaded = EvalResults(path, split_vocab, parsing, row_maxima=True)
        vocab, count = loaded.vocab, len(loaded)
        if n_split != count:
            raise InputError(f"{count} images, but the GT split {gt} has {n_split}: not the same test set", path=path)
        return PredictionSource(
            path,
            fmt,
            vocab,
            "stored",
            "probabilities",
            False,
            (f"scored on the GT split {os.path.basename(gt)} (the file's groundtruths match it)",),
            count,
            partial(on_split_gt, loaded, _Opened(SplitStore, gt, split), path),
            loaded.release,
            gt_extra,
        )
    if not gt:
        raise InputError(f"{fmt} predictions need the ground truth: pass --gt SPLIT_STORE", path=path)
    from sgg_eval.data.store import PredictionStore, SplitStore  # h5py: only for inputs that use a store

    with SplitStore(gt) as split:
        gt_vocab, count, gt_ids = split.vocab, len(split), np.asarray(split.image_ids)
        gt_extra = split.meta.extra
    if fmt == SGG_BENCHMARK:
        return _sgg_benchmark_source(path, gt, gt_vocab, count, gt_extra)
    if fmt == "sgbench_json":
        preds, dropped = read_sgbench_json(path, gt_vocab)
        _check_same_split(gt_ids, np.fromiter(preds, dtype=np.int64, count=len(preds)), path, gt)
        notes = (f"{dropped} duplicate triplets dropped (first kept)",) if dropped else ()
        return PredictionSource(
            path,
            fmt,
            gt_vocab,
            "stored",
            "ranked",
            False,
            notes,
            count,
            partial(_join_dict, _Opened(SplitStore, gt), preds, path),
            gt_extra=gt_extra,
        )
    with PredictionStore(path) as store:
        if store.vocab != gt_vocab:
            raise InputError("class or predicate names differ from the GT split's", path=path)
        _check_same_split(gt_ids, np.asarray(store.image_ids), path, gt)
        meta = store.meta
    notes = ("SIMULATED predictions",) if meta.simulated else ()
    return PredictionSource(
        path,
        fmt,
        gt_vocab,
        "score",
        meta.score_kind,
        meta.simulated,
        notes,
        count,
        partial(_join_store, _Opened(SplitStore, gt), _Opened(PredictionStore, path), path),
        gt_extra=gt_extra,
    )
