"""Scene-Graph-Benchmark.pytorch ``eval_results.pytorch``: ``{'groundtruths': [BoxList], 'predictions': [BoxList]}``.

GT BoxList fields: ``labels``, ``relation_tuple`` [M, 3] (s, o, p). Prediction fields: ``pred_labels``,
``pred_scores``, ``rel_pair_idxs`` [P, 2], ``pred_rel_scores`` [P, C + 1] (softmax incl. background), stored
sorted by the GC triplet score: evaluate with ``order='stored'``. Images are numbered by list position.
Tensors stay memory-mapped until an image is converted, so the file is streamed; what is kept per image is a
row of tensor indices (``boxlists``, ``tensor_table``), not the pickle's object graph.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator

import numpy as np

from sgg_eval.core import tuning
from sgg_eval.core.errors import InputError
from sgg_eval.data.batch_checks import Fold, Sink, batch_is_valid
from sgg_eval.data.types import GTImage, PredImage, Vocabulary
from sgg_eval.data.vg150_facts import vg150_vocabulary
from sgg_eval.formats.torch.boxlists import MODES, BoxListStandIn, BoxListTable
from sgg_eval.formats.torch.bulk_pickle import BulkBoxList
from sgg_eval.formats.torch.reader import load
from sgg_eval.formats.torch.tensor_table import TensorTable
from sgg_eval.io.archive import map_file
from sgg_eval.io.integrity import crc32
from sgg_eval.io.processes import Isolated, run_isolated, start_isolated

GT_FIELDS = ("bbox", "labels", "relation_tuple")
PRED_FIELDS = ("bbox", "pred_labels", "pred_scores", "rel_pair_idxs", "pred_rel_scores")


def read_eval_results(
    path: str | os.PathLike, vocab: Vocabulary | None = None
) -> tuple[Vocabulary, int, Iterator[tuple[GTImage, PredImage]]]:
    """Vocabulary, image count and a generator of (GT, prediction) pairs. Without ``vocab``, a file with
    50 predicates is taken to be VG150 (the embedded names)."""
    loaded = EvalResults(path, vocab)
    return loaded.vocab, len(loaded), loaded.pairs()


class EvalResults:
    """An ``eval_results.pytorch`` parsed once; ``pairs()`` streams it, again and again if needed, without
    re-reading the file. What stays in memory is, per image, the tensor indices of its fields
    (``gt_tensors[image, GT_FIELDS]``, ``pred_tensors[image, PRED_FIELDS]``) and the file's tensor table:
    a few hundred bytes, in arrays a ``--jobs`` worker reads without copying them."""

    def __init__(
        self,
        path: str | os.PathLike,
        vocab: Vocabulary | None = None,
        parsing: Isolated | None = None,
        *,
        row_maxima: bool = False,
    ):
        """``parsing``: this file's parse already under way (:func:`start_parse`), else it is parsed here.
        ``row_maxima``: SGDet-sized score matrices keep the row maxima their validation computes, for ranking
        (``batch_is_valid(keep_row_maxima=True)``); reading alone (the bench's floor) does without."""
        self.path = os.fspath(path)
        self.row_maxima = row_maxima
        # parsed in a child process: the parse's transient objects never fragment this one's heap
        parsed = parsing.result() if parsing is not None else run_isolated(_parse, self.path)
        self.table, self.gt_rows, self.pred_rows, self.gt_tensors, self.pred_tensors = parsed
        self.table.tensors.whole = map_file(self.path) if len(self.gt_rows) else None
        # storages no image field reads (pred_rel_labels, stray ones): checked a share per block of images read
        # (``_crc``), so --jobs workers split them, instead of here, before the workers start
        self.others = np.zeros(0, dtype=np.int64)
        if self.table.tensors.whole is not None:
            ids = self._tensor_ids(0, len(self)).ravel()
            self.others = self.table.tensors.other_tensors(ids[ids >= 0])
        if vocab is None:
            width = next(self._batch(0, 1, validate=False))[1].rel_scores.shape[-1] if len(self) else 51
            if width != 51:
                raise InputError(
                    f"{width - 1} predicates: not VG150, pass the vocabulary (e.g. --gt or --stats)",
                    path=self.path,
                    field="pred_rel_scores",
                )
            vocab = vg150_vocabulary()
        self.vocab = vocab

    def __len__(self) -> int:
        return len(self.gt_rows)

    def pairs(self) -> Iterator[tuple[GTImage, PredImage]]:
        return self.read(0, len(self))

    def read(self, start: int, stop: int) -> Iterator[tuple[GTImage, PredImage]]:
        """Images at positions ``start:stop``: random access, so each ``--jobs`` worker reads its own block
        from the parsed file (inherited on fork) instead of receiving the arrays through a pipe."""
        stop = min(stop, len(self))
        for first in range(start, stop, tuning.EVAL_RESULTS_READ_BATCH):
            yield from self._batch(first, min(first + tuning.EVAL_RESULTS_READ_BATCH, stop))

    def release(self, start: int, stop: int) -> None:
        """This process is done with images ``start:stop``: drop its page-table entries for their bytes (the
        file stays in the page cache). A worker that has read GBs of an SGDet file otherwise unmaps them all
        when it exits, ~25 ms the run waits for at its end; per block, it is spread over the run."""
        whole = self.table.tensors.whole
        stop = min(stop, len(self))
        if whole is None or not len(whole) or start >= stop:
            return
        ids = self._tensor_ids(start, stop).ravel()
        ids = ids[ids >= 0]
        if not len(ids):
            return
        tensors = self.table.tensors
        lo = int(tensors.t_byte[ids].min())
        hi = int((tensors.t_byte[ids] + np.maximum(tensors.t_nbytes[ids], 0)).max())
        lo, hi = -(-lo // mmap.PAGESIZE) * mmap.PAGESIZE, hi // mmap.PAGESIZE * mmap.PAGESIZE  # whole pages inside
        if hi > lo:
            whole.base.obj.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def _tensor_ids(self, start: int, stop: int) -> np.ndarray:
        """``[image, GT_FIELDS + PRED_FIELDS]`` tensor indices of images ``start:stop`` (below 0: none)."""
        return np.concatenate([self.gt_tensors[start:stop], self.pred_tensors[start:stop]], axis=1)

    def _batch(self, start: int, stop: int, validate: bool = True) -> Iterator[tuple[GTImage, PredImage]]:
        """Images ``start:stop``, validated, and their bytes checked against the file's CRC-32s before any is
        yielded. SGDet-sized score matrices and pair arrays have their CRC-32 folded over their bytes by the
        validation pass while the bytes are in cache (``_FoldedCrc``); the rest is read once more (``_crc``)."""
        ids = self._tensor_ids(start, stop)
        views = self.table.tensors.arrays(np.maximum(ids.ravel(), 0))
        width = ids.shape[1]
        names = GT_FIELDS + PRED_FIELDS
        images: list[tuple[GTImage, PredImage]] = []
        folded = _FoldedCrc(
            self.table.tensors, {f: ids[:, names.index(f, len(GT_FIELDS))] for f in _FOLDED}, self.path, start
        )
        try:
            for k, i in enumerate(range(start, stop)):
                got = views[k * width : (k + 1) * width]
                for j in range(width):
                    if ids[k, j] < 0 or got[j] is None:
                        row = (self.gt_rows if j < len(GT_FIELDS) else self.pred_rows)[i]
                        raise InputError(
                            self.table.problem(int(row), names[j], int(ids[k, j])),
                            path=self.path,
                            image_id=i,
                            field=names[j],
                        )
                gt_row, pred_row = int(self.gt_rows[i]), int(self.pred_rows[i])
                width_px, height_px = _size(self.table, gt_row, self.path, i)
                gt = GTImage(i, width_px, height_px, _xyxy(self.table, gt_row, got[0], self.path, i), got[1], got[2])
                images.append((gt, PredImage(i, _xyxy(self.table, pred_row, got[3], self.path, i), *got[4:])))
            if validate and not self._check(images, fold=folded):
                self._check(images, each=True)  # raises, naming the first bad image (below, after the CRC-32s)
        except InputError:
            folded.settle()
            self._crc(start, stop)  # corrupt bytes are named as such first
            if validate:  # an earlier image's problem is reported first, as when images were checked one by one
                self._check(images, each=True)
            raise
        folded.settle()
        self._crc(start, stop)
        yield from images

    def _crc(self, start: int, stop: int) -> None:
        """Check the CRC-32 of images ``start:stop``'s tensors not yet checked, and of their share of the storages
        no image reads (``others``: reading every image checks all of them); a failure names the first image
        whose bytes are corrupt."""
        ids = self._tensor_ids(start, stop)
        share = len(self.others) * start // len(self), len(self.others) * stop // len(self)
        tensors = self.table.tensors
        try:
            tensors.check(np.concatenate([ids[ids >= 0], self.others[share[0] : share[1]]]))
        except InputError as exc:
            for k in range(len(ids)):
                try:
                    tensors.check(ids[k][ids[k] >= 0])
                except InputError:
                    raise InputError(exc.message, path=self.path, image_id=start + k) from None
            raise InputError(exc.message, path=self.path) from None

    def _check(self, images: list[tuple[GTImage, PredImage]], each: bool = False, fold: Fold | None = None) -> bool:
        """Validate a batch at once (False if it fails); image by image, raising on the first bad one, with
        ``each`` (only once it has failed)."""
        if each:
            for gt, pred in images:
                _validate(gt, pred, self.vocab, self.path, gt.image_id)
            return True
        return batch_is_valid(
            [g for g, _ in images],
            [p for _, p in images],
            self.vocab,
            probabilities=True,
            keep_row_maxima=self.row_maxima,
            fold=fold,
        )


# the fields whose CRC-32 validation folds over their bytes (``batch_is_valid(fold=)``)
_FOLDED = ("rel_pair_idxs", "pred_rel_scores")


class _FoldedCrc:
    """The CRC-32s of a batch's ``_FOLDED`` tensors, folded over each block as validation reads it
    (``batch_is_valid(fold=)``); a tensor whose bytes are not exactly its zip member's, or which the pass did
    not go through whole, is left to ``TensorTable.check``. Nothing is looked up for a field no block of
    reaches (PredCls's small arrays are all checked in line)."""

    def __init__(self, tensors: TensorTable, ids: dict[str, np.ndarray], path: str, start: int):
        self.tensors, self.ids, self.path, self.start = tensors, ids, path, start
        self.roots: dict[str, list[int]] = {}  # per field, made at its first block: ``whole_storages``
        self.folded: dict[tuple[int, int], list[int]] = {}  # (image, field's place in _FOLDED) -> [crc, bytes]

    def __call__(self, field: str, k: int) -> Sink | None:
        """Where image ``k``'s ``field`` blocks go: a CRC-32 folded over them, or None (nothing to check)."""
        roots = self.roots.get(field)
        if roots is None:
            roots = self.roots[field] = self.tensors.whole_storages(self.ids[field]).tolist()
        if roots[k] < 0:
            return None
        state = self.folded.setdefault((k, _FOLDED.index(field)), [0, 0])

        def sink(block: np.ndarray) -> None:  # one call per block: the least Python per 256 kB
            state[0] = crc32(block, state[0])
            state[1] += block.nbytes

        return sink

    def settle(self) -> None:
        """Compare every CRC-32 folded over a whole tensor; InputError names the first corrupt image."""
        for k, field in sorted(self.folded):
            root = self.roots[_FOLDED[field]][k]
            crc, seen = self.folded[k, field]
            if seen == self.tensors.crcs.nbytes[root]:
                try:
                    self.tensors.crcs.settle(root, crc)
                except InputError as exc:
                    raise InputError(exc.message, path=self.path, image_id=self.start + k) from None
        self.folded.clear()  # settled once


def start_parse(path: str | os.PathLike) -> Isolated:
    """The parse of ``path`` started in a child process, for ``EvalResults(path, parsing=...)``; this process
    may open the GT split meanwhile. Use it in a ``with`` block (leaving it unused stops the child)."""
    return start_isolated(_parse, os.fspath(path))


def _parse(path: str) -> tuple[BoxListTable, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The file's BoxList table (its tensor table without the file mapping), each image's GT and prediction
    rows, and their ``[image, field]`` tensor indices."""
    obj = load(path)
    if not isinstance(obj, dict) or "groundtruths" not in obj or "predictions" not in obj:
        raise InputError("expected a dict with 'groundtruths' and 'predictions'", path=path)
    gts, preds = obj["groundtruths"], obj["predictions"]
    if not isinstance(gts, (list, tuple)) or not isinstance(preds, (list, tuple)):
        raise InputError("'groundtruths' and 'predictions' must be lists of BoxLists", path=path)
    if len(gts) != len(preds):
        raise InputError(f"{len(gts)} groundtruths but {len(preds)} predictions", path=path)
    table = _table(path, gts, preds)
    gt_rows, pred_rows = _rows(gts), _rows(preds)
    del obj, gts, preds  # the object graph goes: only the tables' arrays stay
    table.tensors.whole = None  # mapped again by the reader
    return (table, gt_rows, pred_rows, _columns(table, gt_rows, GT_FIELDS), _columns(table, pred_rows, PRED_FIELDS))


def _table(path: str, gts, preds) -> BoxListTable:
    """The BoxList table every entry's row belongs to (one per file)."""
    entries = list(gts) + list(preds)
    if not entries:
        return BoxListTable.empty()
    cls = type(entries[0])
    for i, b in enumerate(entries):
        if type(b) is not cls or not isinstance(b, (BoxListStandIn, BulkBoxList)) or not hasattr(b, "row"):
            raise InputError("entry is not a BoxList", path=path, image_id=i % max(1, len(gts)))
    return cls.table


def _rows(entries) -> np.ndarray:
    return np.fromiter((b.row for b in entries), dtype=np.int64, count=len(entries))


def _columns(table: BoxListTable, rows: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """``[image, field]`` tensor indices (MISSING / NOT_A_TENSOR below 0)."""
    if len(rows) == 0:
        return np.zeros((0, len(names)), dtype=np.int64)
    return np.column_stack([table.bbox[rows] if n == "bbox" else table.column(n)[rows] for n in names])


def _xyxy(table: BoxListTable, row: int, b: np.ndarray, path: str, index: int) -> np.ndarray:
    if b.size == 0:
        return np.zeros((0, 4), dtype=np.float32)
    if b.ndim != 2 or b.shape[1] != 4 or b.dtype.kind not in "fiu":
        raise InputError(
            f"shape {list(b.shape)} dtype {b.dtype}, expected [n, 4] numbers", path=path, image_id=index, field="bbox"
        )
    b = b.astype(np.float32, copy=False)  # a float32 view of the file stays a (read-only) view
    mode = int(table.mode[row])
    if mode == MODES.index("xywh"):  # maskrcnn_benchmark: x2 = x1 + w - 1
        b = np.column_stack([b[:, :2], b[:, :2] + b[:, 2:] - 1])
    elif mode != MODES.index("xyxy"):
        raise InputError(f"unknown box mode {table.odd.get((row, 'mode'))}", path=path, image_id=index, field="mode")
    return b


def _size(table: BoxListTable, row: int, path: str, index: int) -> tuple[int, int]:
    width, height = float(table.width[row]), float(table.height[row])
    if width != width:
        raise InputError(
            f"image size {table.odd.get((row, 'size'))}, expected (width, height)",
            path=path,
            image_id=index,
            field="size",
        )
    return int(width), int(height)


def _validate(gt: GTImage, pred: PredImage, vocab: Vocabulary, path: str, i: int) -> None:
    """Shapes, ranges and finite values of one image, named as the file names its fields (softmax outputs)."""
    validate_named(gt, pred, vocab, (f"{path} (groundtruths)", f"{path} (predictions)"), i)


def validate_named(
    gt: GTImage,
    pred: PredImage,
    vocab: Vocabulary,
    sources: tuple[str, str],
    position: int,
    names: tuple[dict, dict] | None = None,
    probabilities: bool = True,
) -> None:
    """``gt`` and ``pred`` validated (``GTImage.validate``, ``PredImage.validate``), an error naming the GT's or
    the prediction's ``sources`` and the field by ``names`` (ours -> the user's; default: a BoxList's)."""
    gt_names, pred_names = names or (BOXLIST_GT_NAMES, BOXLIST_PRED_NAMES)
    try:
        gt.validate(vocab, sources[0], position)
    except InputError as exc:
        raise exc.renamed(gt_names) from None
    try:
        pred.validate(vocab, sources[1], position, probabilities=probabilities)
    except InputError as exc:
        raise exc.renamed(pred_names) from None


# our field names -> the BoxList field names of the file, for error messages
BOXLIST_GT_NAMES = {"boxes": "bbox", "rels": "relation_tuple"}
BOXLIST_PRED_NAMES = {
    "boxes": "bbox",
    "labels": "pred_labels",
    "obj_scores": "pred_scores",
    "pairs": "rel_pair_idxs",
    "rel_scores": "pred_rel_scores",
}
