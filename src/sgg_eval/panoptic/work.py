"""The per-image work of a panoptic evaluation, for one or several protocols at once, spread over processes.

Each image is read and its IoUs computed once (masks: the GT PNG and the submission's layers; boxes), then
ranked under every protocol asked for (``panoptic.ranks``) and reduced into one
:class:`~sgg_eval.metrics.reduce.Accumulator` per protocol (and one for the reach ranks of R@inf), plus the
PRk cells. The images go in chunks of ``tuning.PSG_CHUNK``, ``jobs`` consecutive runs of chunks computed at once in
forked processes (``io.processes.in_parts``); the parent merges the chunks in file order, so the result is the same
for any number of processes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sgg_eval.core import tuning
from sgg_eval.core.protocols import ONE_TO_ONE, PER_TRIPLET
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.data.stats import TrainingStats
from sgg_eval.data.types import triplet_key
from sgg_eval.io.processes import in_parts
from sgg_eval.metrics.iou import sgbench_box_iou
from sgg_eval.metrics.rank_records import BlockRanks
from sgg_eval.metrics.reduce import Accumulator
from sgg_eval.panoptic.matching import IOU, assign, assign_one_to_one, mask_ious
from sgg_eval.panoptic.panoptic_png import segment_indexes
from sgg_eval.panoptic.ranks import (
    graph_constrained,
    image_ranks,
    predicate_rank_cells,
    top_predicates,
    triplet_ok,
)
from sgg_eval.panoptic.types import PsgGT, PsgImage


@dataclass(frozen=True)
class ZeroShot:
    """The zero-shot class triplets of the statistics as sorted ``triplet_key`` values (1-based ids)."""

    keys: np.ndarray
    sizes: tuple[int, int]

    @classmethod
    def of(cls, train: TrainingStats) -> ZeroShot:
        zs, sizes = train.zeroshot_triplets, (train.vocab.num_objects, train.vocab.num_predicates)
        return cls(np.unique(triplet_key(zs[:, 0], zs[:, 1], zs[:, 2], *sizes)), sizes)

    def rows(self, image: PsgImage) -> np.ndarray:
        """Per GT row of ``image``, whether its class triplet is zero-shot."""
        t, labels = image.triplets, image.labels + 1
        return np.isin(triplet_key(labels[t[:, 0]], labels[t[:, 1]], t[:, 2] + 1, *self.sizes), self.keys)


@dataclass
class Reduced:
    """One protocol's reduction: ranks, reach ranks (R@inf), PRk cells ``[images, C]`` (file order) and the
    confusion counts ``[C + 1, C + 1]`` (GT predicate, the predicate ranked first for its pair; 0 unused)."""

    acc: Accumulator
    reach: Accumulator
    cells: np.ndarray
    confusion: np.ndarray
    empty_gt: int = 0  # GT segments of the evaluated images that no pixel of their PNG carries (an empty mask)

    def merge(self, other: Reduced) -> None:
        self.acc.merge(other.acc)
        self.reach.merge(other.reach)
        self.cells = np.concatenate([self.cells, other.cells])
        self.confusion += other.confusion
        self.empty_gt += other.empty_gt


def reduce_images(
    gt: PsgGT,
    sub,
    present: list,
    protocols: tuple[str, ...],
    *,
    has_ng: bool,
    zeroshot: ZeroShot | None,
    jobs: int,
    iou_threshold: float = IOU,
) -> dict[str, Reduced]:
    """Every protocol's reduction of the ``present`` (GT image, predicted image) pairs, instances matched at
    ``iou_threshold`` (the protocols' 0.5 by default). Under ``openpsg`` an image without a predicted triplet is
    skipped (OpenPSG's rule)."""
    chunks = [present[i : i + tuning.PSG_CHUNK] for i in range(0, len(present), tuning.PSG_CHUNK)]
    args = (gt, sub, protocols, has_ng, zeroshot, iou_threshold)
    # consecutive chunks in forked children (they inherit everything; only the results are pickled)
    return merged(gt, in_parts(lambda k: _chunk(*args, chunks[k]), len(chunks), jobs, least=1), protocols)


def merged(gt: PsgGT, parts, protocols: tuple[str, ...]) -> dict[str, Reduced]:
    """Every protocol's reduction of consecutive chunks' reductions ``parts``, merged in order."""
    total = {p: _empty(gt) for p in protocols}
    for part in parts:
        for protocol in protocols:
            total[protocol].merge(part[protocol])
    return total


def _empty(gt: PsgGT) -> Reduced:
    c = gt.num_predicates
    return Reduced(Accumulator(c), Accumulator(c), np.zeros((0, c)), np.zeros((c + 1, c + 1), dtype=np.int64))


def _chunk(
    gt: PsgGT, sub, protocols: tuple[str, ...], has_ng: bool, zeroshot: ZeroShot | None, threshold: float, chunk: list
) -> dict[str, Reduced]:
    ranked = []
    for image, pred in chunk:
        if sub.mode == "masks":  # each protocol's GT masks as its tool decodes the PNG (one decode for most PNGs)
            out = {}
            for group, (seg, gt_area) in segment_indexes(gt, image, protocols):
                masks = sub.masks(pred, seg.shape)
                iou = mask_ious(seg, len(image.labels), masks, pred.labels, image.labels, gt_area)
                empty = empty_segments(seg, gt_area, len(image.labels))
                out.update(rank_image(gt, image, pred, iou, group, has_ng, zeroshot, threshold, empty))
            ranked.append({p: out[p] for p in protocols})
        else:
            iou = sgbench_box_iou(image.boxes, pred.boxes)
            ranked.append(rank_image(gt, image, pred, iou, protocols, has_ng, zeroshot, threshold))
    return reduce_ranked(gt, ranked, protocols, zeroshot)


def rank_image(
    gt: PsgGT,
    image,
    pred,
    iou: np.ndarray,
    protocols: tuple[str, ...],
    has_ng: bool,
    zeroshot: ZeroShot | None,
    threshold: float,
    empty_gt: int = 0,
) -> dict[str, tuple | None]:
    """One image's first-hit ranks under every protocol, from its IoUs ``[predicted, GT]``: per protocol
    ``(ranks, reach ranks, PRk cells, zero-shot flags, top predicates, empty GT segments)``, or None where the
    protocol skips the image (openpsg: no predicted triplet). ``empty_gt``: its GT segments no pixel carries."""
    ng = pred.ng_triplets if has_ng else None
    zs = None if zeroshot is None else zeroshot.rows(image)
    out = {}
    for protocol in protocols:
        cells = np.full(gt.num_predicates, np.nan)
        rules = protocol_record(protocol)
        if rules.matching == PER_TRIPLET:
            if not len(pred.rows):
                out[protocol] = None
                continue
            match, gc = triplet_ok(iou, pred.labels, image.labels, threshold), pred.rows
        else:
            matcher = assign_one_to_one if rules.matching == ONE_TO_ONE else assign
            match = pred2gt = matcher(iou, pred.labels, image.labels, threshold)
            gc = graph_constrained(pred.triplets) if rules.graph_constrained else pred.triplets
            cells = predicate_rank_cells(
                image.triplets, len(image.labels), pred2gt, pred.ng_triplets, gt.num_predicates
            )
        ranked = image_ranks(image.triplets, len(image.labels), match, gc, ng)
        tops = top_predicates(image.triplets, len(image.labels), match, gc)
        out[protocol] = (*ranked, cells, zs, tops, empty_gt)
    return out


def empty_segments(seg: np.ndarray, area: np.ndarray | None, count: int) -> int:
    """How many of an image's ``count`` GT segments no pixel of its PNG carries, from their pixel ``area`` (or,
    where the PNG had too many colours to count them so, from the segment index ``seg``)."""
    if area is None:
        area = np.bincount(seg.ravel(), minlength=count + 1)[:count]
    return int(np.count_nonzero(np.asarray(area)[:count] == 0))


def reduce_ranked(
    gt: PsgGT, ranked: list[dict[str, tuple | None]], protocols: tuple[str, ...], zeroshot: ZeroShot | None
) -> dict[str, Reduced]:
    """Every protocol's reduction of consecutive images' :func:`rank_image` results (one chunk)."""
    out = {}
    c = gt.num_predicates + 1
    for protocol in protocols:
        kept = [r[protocol] for r in ranked if r[protocol] is not None]
        image_rank, reach, cells, flags, tops, empty = (list(col) for col in zip(*kept)) if kept else ([],) * 6
        reduced = _empty(gt)
        reduced.empty_gt = sum(empty)
        if image_rank:
            gp = np.concatenate([r.predicates for r in image_rank])
            top = np.concatenate(tops)
            ok = top >= 0
            reduced.confusion += np.bincount(gp[ok] * c + top[ok], minlength=c * c).reshape(c, c)
            reduced.acc.add_many(
                BlockRanks.of(image_rank), zeroshot=None if zeroshot is None else np.concatenate(flags)
            )
            reduced.reach.add_many(BlockRanks.of(reach))
            reduced.cells = np.array(cells)
        out[protocol] = reduced
    return out
