"""Evaluation in blocks of images, on one or several processes, with a result independent of how many.

Images are grouped into consecutive blocks (``block_images``: 256, SGDet 32); each block is ranked and
accumulated on its own (:func:`rank_block`), and the block accumulators are merged in block order
(``Accumulator.merge``). Their sums are exact (``arrays.exact_sum``), so neither the blocks nor ``jobs`` can
move a bit: ``jobs = 1`` and ``jobs = N`` give bit-identical documents. From a random-access source
(:class:`ImageSource`) blocks are read in tasks of a few (:func:`tasks_of`; SGDet: 4), which changes nothing
but the cost: with ``jobs > 1`` each forked worker reads, converts and validates its own tasks from the parsed
file (inherited), and only accumulators (~80 kB a block) come back; a plain stream is read in this process and
its blocks are shipped to the workers. Either way at most ``2 · jobs`` tasks are in flight, so memory stays
flat however long the file is.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

import numpy as np

from sgg_eval.core import tuning
from sgg_eval.core.defaults import RECALL_KS
from sgg_eval.core.tasks import task_spec
from sgg_eval.data.types import GTImage, PredImage, Vocabulary
from sgg_eval.io.allocator import reuse_freed_memory
from sgg_eval.io.processes import can_fork, worker_pool
from sgg_eval.metrics.iou import BOX_IOUS
from sgg_eval.metrics.longtail import GROUPS
from sgg_eval.metrics.misuse import block_signals, empty_signals
from sgg_eval.metrics.openvocab import Prepared, prepare_images, row_subsets
from sgg_eval.metrics.rank_records import BlockRanks
from sgg_eval.metrics.ranking.block_ranks import block_ranks
from sgg_eval.metrics.ranking.candidates import prepare_block
from sgg_eval.metrics.ranking.gt_rows import row_lookups, row_triplets, zeroshot_table
from sgg_eval.metrics.ranking.per_image import image_records
from sgg_eval.metrics.ranking.totals import COLLECTORS, PREPARED_KEYS, Totals, count_keys, prepares_gt
from sgg_eval.metrics.reduce import Accumulator


def block_images(task: str) -> int:
    """Images per block for ``task``."""
    return max(1, tuning.BLOCK_IMAGES // tuning.SGDET_BLOCK_DIVISOR) if task_spec(task).detects else tuning.BLOCK_IMAGES


def rank_block(
    block: list[tuple[GTImage, PredImage]],
    vocab: Vocabulary,
    opts,
    source: str,
    zs_table: np.ndarray | None,
    triplet_counts: np.ndarray | None,
) -> tuple[Accumulator, dict]:
    """Rank and accumulate one block of images: the block's accumulator and image counts. ``zs_table`` flags
    the zero-shot triplets by ``triplet_key`` (:func:`zeroshot_table`)."""
    acc = Accumulator(vocab.num_predicates)
    counts = {**dict.fromkeys(count_keys(opts), 0), **empty_signals()}  # misuse signals are summed like counts
    sizes = (vocab.num_objects, vocab.num_predicates)
    with_gt_pairs = opts.task_spec.gt_boxes
    flat_counts = triplet_counts.reshape(-1) if triplet_counts is not None else None
    n_rels = np.array([len(gt.rels) for gt, _ in block], dtype=np.int64)
    no_pred = np.array([len(pred.pairs) == 0 for _, pred in block]) & (not opts.rules.counts_unpredicted)
    counts["images_input"] += len(block)
    counts["images_skipped_no_gt"] += int(np.count_nonzero(n_rels == 0))
    counts["images_skipped_no_pred"] += int(np.count_nonzero(no_pred & (n_rels > 0)))
    for i in np.flatnonzero(no_pred & (n_rels > 0)).tolist():  # kept for the strict variant (a miss per row)
        acc.add_missed(block[i][0].rels[:, 2])
    kept = [block[i] for i in np.flatnonzero((n_rels > 0) & ~no_pred).tolist()]  # ranked and reduced together
    counts["images_evaluated"] += len(kept)
    block_signals(counts, kept, opts.task, opts.score_kind)
    looked_up = bool(kept) and (zs_table is not None or flat_counts is not None or opts.openvocab is not None)
    triplets = row_triplets(kept) if looked_up else None  # once for the lookups and the subsets
    zs_rows, tc_rows, zs_images = row_lookups(kept, triplets, sizes, zs_table, flat_counts)
    counts["images_with_zeroshot_gt"] += zs_images
    ranked = []
    for chunk, large in _by_pairs(kept, tuning.MAX_RANKED_PAIRS):
        gts, cands = [g for g, _ in chunk], prepare_block(chunk, opts, source, apart=large)
        ranks = block_ranks(
            gts,
            cands,
            ng_limit=opts.ng_limit,
            gt_pair_family=with_gt_pairs,
            triplet_family=with_gt_pairs,
            iou_threshold=opts.iou_threshold,
            iou=BOX_IOUS[opts.iou],
        )
        ranked.append(ranks)
        if opts.per_image:  # --per-image: the images' graphs, kept with the block's sums until merged
            acc.records += image_records(gts, cands, ranks, vocab, opts.per_image, opts.per_image_ids)
    if ranked:
        joined = ranked[0] if len(ranked) == 1 else BlockRanks.of(ranked)
        acc.add_many(joined, zs_rows, tc_rows)
        if opts.openvocab is not None:
            flags = row_subsets(opts.openvocab, *triplets, sizes)
            for name, ks in opts.openvocab.subsets():
                acc.add_subset(name, joined, flags[name], ks, zs_rows, tc_rows)
        if opts.longtail is not None:  # R@K on each group's rows (metrics.longtail)
            codes = np.array((-1, *opts.longtail))[joined.predicates]
            for g, group in enumerate(GROUPS):
                acc.add_subset(group, joined, codes == g, RECALL_KS)
    return acc, counts


def rank_task(
    images: list[tuple[GTImage, PredImage]],
    sizes: list[int],
    vocab: Vocabulary,
    opts,
    source: str,
    zs_table: np.ndarray | None,
    triplet_counts: np.ndarray | None,
    collectors: tuple[str, ...] = (),
) -> tuple[list[tuple[Accumulator, dict]], dict]:
    """Consecutive blocks of ``sizes`` images, read together: each block ranked and accumulated on its own
    (:func:`rank_block`; merged block by block, float sums group exactly as they would one block at a time),
    and every image (with or without relations) added to each of ``collectors`` (``COLLECTORS``), at once. The
    GT is first prepared as the protocol's loader prepares it (``metrics.openvocab.prepare_gt``), for all of them."""
    ranked, lo = [], 0
    prepares = prepares_gt(opts)
    if prepares:
        images = list(images)
    for n in sizes:
        done = Prepared()
        if prepares:
            images[lo : lo + n] = prepare_images(images[lo : lo + n], opts.protocol, opts.clip_gt, done)
        ranked.append(rank_block(images[lo : lo + n], vocab, opts, source, zs_table, triplet_counts))
        if prepares:
            ranked[-1][1].update({key: getattr(done, attr) for key, attr in PREPARED_KEYS.items()})
        lo += n
    extras = {}
    for name in collectors:
        extras[name] = COLLECTORS[name](opts)
        extras[name].add(images)
        extras[name].finish()
    return ranked, extras


def _by_pairs(kept: list, limit: int) -> Iterator[tuple[list, bool]]:
    """Consecutive runs of (GT, candidates) with at most ``limit`` predicted pairs in all (at least one
    image), each with whether its images are large (``tuning.LARGE_IMAGE_PAIRS``): large and small images never share
    a run. ng-IMR compares each GT row with every pair of its image, so memory follows the pair count."""
    run, total, large = [], 0, False
    for item in kept:
        n = len(item[1].pairs)
        if run and (total + n > limit or (n > tuning.LARGE_IMAGE_PAIRS) != large):
            yield run, large
            run, total = [], 0
        run.append(item)
        total, large = total + n, n > tuning.LARGE_IMAGE_PAIRS
    if run:
        yield run, large


def _blocks(pairs: Iterable, size: int) -> Iterator[list]:
    block = []
    for item in pairs:
        block.append(item)
        if len(block) == size:
            yield block
            block = []
    if block:
        yield block


class ImageSource(Protocol):
    """Random access to a stream of images: ``count`` of them; ``read(start, stop)`` yields the (GT,
    prediction) pairs at positions ``start:stop`` (``sources.PredictionSource`` is one). An optional
    ``release(start, stop)`` is told when a process is done with a block (a mapped file drops its pages)."""

    count: int

    def read(self, start: int, stop: int) -> Iterator[tuple[GTImage, PredImage]]: ...


# A worker's fixed arguments, set once by the pool initializer (the training counts are ~9 MB), and, on fork,
# the source's block reader (inherited, never pickled).
_WORKER: tuple = ()
_READ = _RELEASE = None


def _init_worker(read, release, *fixed) -> None:
    global _WORKER, _READ, _RELEASE
    _READ, _RELEASE, _WORKER = read, release, fixed
    reuse_freed_memory()


def _rank_in_worker(block):
    return rank_task(block, [len(block)], *_WORKER)


def _read_and_rank_in_worker(spans: list[tuple[int, int]]):
    return _read_and_rank(_READ, _RELEASE, spans, _WORKER)


def _read_and_rank(read, release, spans: list[tuple[int, int]], fixed: tuple):
    """A task: its blocks (consecutive ``spans``) read at once, ranked, then released."""
    lo, hi = spans[0][0], spans[-1][1]
    result = rank_task(list(read(lo, hi)), [b - a for a, b in spans], *fixed)
    if release is not None:
        release(lo, hi)
    return result


def tasks_of(spans: list[tuple[int, int]], size: int, jobs: int) -> list[list[tuple[int, int]]]:
    """The block ``spans`` grouped into tasks: ``TASK_IMAGES // size`` blocks each, the last ``2 · jobs`` alone."""
    per_task = max(1, tuning.TASK_IMAGES // size)
    tail = max(0, len(spans) - 2 * jobs) if jobs > 1 else len(spans)  # where the single blocks start
    return [spans[i : min(i + per_task, tail)] for i in range(0, tail, per_task)] + [[span] for span in spans[tail:]]


def accumulate(
    images: Iterable[tuple[GTImage, PredImage]] | ImageSource,
    vocab: Vocabulary,
    opts,
    *,
    source: str = "",
    zs_keys: np.ndarray | None = None,
    triplet_counts: np.ndarray | None = None,
    jobs: int = 1,
    collectors: tuple[str, ...] = (),
    progress: Callable[[int], None] | None = None,
    on_records: Callable[[list[dict]], None] | None = None,
) -> tuple[Accumulator, dict, dict]:
    """All images accumulated block by block (on ``jobs`` processes), merged in block order; the counts hold
    the image counts (``COUNT_KEYS``) and the misuse signals (``misuse.SIGNAL_KEYS``); the last item holds
    each of ``collectors`` (``COLLECTORS``: ``boxes``, the objects for the detector's box mAP; ``oi_records``, the
    Open Images V6 protocol's records) over every image.

    ``images`` is a stream of (GT, prediction) pairs, or an :class:`ImageSource`: then, where processes fork,
    each worker reads its own blocks, so the main process neither converts images nor pipes their arrays
    (an SGDet block is ~80 MB of scores). ``progress(n)`` is told the number of images done after each block;
    ``on_records(records)`` is given each block's per-image records, in order (``opts.per_image``:
    ``ranking.per_image``).
    """
    totals = Totals(vocab, opts, collectors)

    def merge(result) -> None:
        totals.add(result, on_records, progress)

    zs_table = None if zs_keys is None else zeroshot_table(zs_keys, vocab)
    fixed = (vocab, opts, source, zs_table, triplet_counts, tuple(collectors))
    random_access = hasattr(images, "read") and hasattr(images, "count")
    size = block_images(opts.task)
    spans = [(lo, min(images.count, lo + size)) for lo in range(0, images.count, size)] if random_access else []
    if jobs <= 1 or (random_access and len(spans) <= 1):
        reuse_freed_memory()
        if not random_access:
            for block in _blocks(images, size):
                merge(rank_task(block, [len(block)], *fixed))
        for task in tasks_of(spans, size, 1):
            merge(_read_and_rank(images.read, _release_of(images), task, fixed))
    else:
        _in_workers(images, random_access, spans, size, jobs, fixed, merge)
    return totals.acc, totals.counts, totals.collected


def _release_of(images) -> Callable | None:
    return getattr(images, "release", None)


def _in_workers(images, random_access: bool, spans: list, size: int, jobs: int, fixed: tuple, merge) -> None:
    """The blocks ranked by ``jobs`` workers, merged in order as they come (at most ``2 · jobs`` pending)."""
    if random_access and can_fork():
        tasks = ((_read_and_rank_in_worker, task) for task in tasks_of(spans, size, jobs))
        read, release = images.read, _release_of(images)
    else:  # a plain stream, or no fork (the reader would have to be pickled): read here, ship the arrays
        stream = images.read(0, images.count) if random_access else images
        tasks = ((_rank_in_worker, block) for block in _blocks(stream, size))
        read = release = None
    # fork: workers inherit the imported modules and the parsed source (no re-import, no re-parse per worker)
    with worker_pool(jobs, _init_worker, (read, release, *fixed)) as pool:
        pending: deque = deque()
        for func, arg in tasks:
            pending.append(pool.apply_async(func, (arg,)))
            while len(pending) >= 2 * jobs:  # bounded: reading never runs far ahead of ranking
                merge(pending.popleft().get())
        while pending:
            merge(pending.popleft().get())
