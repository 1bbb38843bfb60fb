"""``sgg-eval evaluate PRED --psg psg.json --psg-root ROOT``: a panoptic SGG submission against PSG's test split.

PRED is an SGBench ZIP or folder (masks: evaluated on masks) or its JSON alone (boxes); ``boxes=True`` forces
boxes. OpenPSG's ``--submit`` folder (``formats.openpsg_submit``) is read too, matched by position. The
protocol (``metrics.panoptic_reduce``) is ``sgbench`` (what the sgbench 1.0.0 command computes),
``sgbench-paper`` (the SGBench paper's definitions) or ``openpsg`` (OpenPSG's evaluator, behind most
published PSG numbers). Images are matched by id (value and type, as the files have them); an image of the
test split absent from the predictions is counted and noted, never silent. Work is spread over ``jobs``
forked processes, a chunk of images each; chunks are reduced in file order, so any number gives the same
document.
"""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass

import numpy as np

from sgg_eval.data.types import triplet_key
from sgg_eval.errors import InputError
from sgg_eval.evaluate import check_tau
from sgg_eval.formats.openpsg_submit import OpenPsgSubmit, is_openpsg_submit
from sgg_eval.formats.psg_gt import PsgGT, PsgImage, read_psg, segment_index
from sgg_eval.formats.sgbench_submission import Submission, submission_mode
from sgg_eval.metrics.panoptic import assign, assign_one_to_one, box_ious, mask_ious
from sgg_eval.metrics.panoptic_ranks import (graph_constrained, image_ranks, instance_ok, predicate_rank_cells,
                                             triplet_ok)
from sgg_eval.metrics.panoptic_reduce import PROTOCOLS, psg_metrics
from sgg_eval.metrics.rank_records import BlockRanks
from sgg_eval.metrics.reduce import Accumulator, wimr_weights
from sgg_eval.psg_stats import psg_vocabulary
from sgg_eval.stats import TrainingStats, read_stats

_CHUNK = 16  # images a worker evaluates per task


def run_psg_evaluation(predictions: str, psg: str, root: str = "", *, protocol: str = "sgbench",
                       boxes: bool = False, stats: str | None = None, tau: float = 0.5, jobs: int = 1) -> dict:
    """The metrics document (``task``, ``protocol``, ``mode``, ``tau``, ``metrics``, ``per_predicate``,
    ``counts``, ``notes``). ``stats``: statistics of PSG's training split (``sgg-eval stats --psg``), for
    zR@K and wIMR@K (exponent ``tau``)."""
    if protocol not in PROTOCOLS:
        raise InputError(f"protocol {protocol!r} is not one of {', '.join(PROTOCOLS)} for panoptic SGG",
                         field="protocol")
    check_tau(tau)
    legacy = os.path.isdir(predictions) and is_openpsg_submit(predictions)
    if legacy and boxes:
        raise InputError("OpenPSG's submit folder has masks only: no boxes to evaluate", path=predictions,
                         field="--boxes")
    gt = read_psg(psg, root, boxes=submission_mode(predictions, boxes) == "boxes")
    if not gt.images:
        raise InputError("no test image with relations: nothing to evaluate", path=gt.path)
    if legacy:
        sub = OpenPsgSubmit(predictions, [image.image_id for image in gt.images], len(gt.object_classes),
                            gt.num_predicates)
    else:
        sub = Submission(predictions, len(gt.object_classes), gt.num_predicates, boxes=boxes)
    work = [(gt.images[i], sub.images.get((type(gt.images[i].image_id), gt.images[i].image_id)))
            for i in range(len(gt.images))]
    present = [(image, pred) for image, pred in work if pred is not None]
    absent, with_predictions = len(work) - len(present), len(present)
    if protocol == "openpsg":  # images without a predicted triplet are skipped, not counted 0
        present = [(image, pred) for image, pred in present if len(pred.rows)]
    no_rows = with_predictions - len(present)
    has_ng = any(len(pred.ng_triplets) for pred in sub.images.values())
    train = _training(stats, gt)
    zeroshot = None if train is None else _ZeroShot.of(train)
    acc, reach, cells = _map(gt, sub, present, jobs, protocol, has_ng, zeroshot)
    counted_absent = [image for image, pred in work if pred is None] if protocol != "openpsg" else []
    absent_zs = 0 if zeroshot is None else sum(bool(zeroshot.rows(image).any()) for image in counted_absent)
    weights = None if train is None else wimr_weights(train.num_pairs, tau)
    metrics, per_predicate, notes = psg_metrics(acc, reach, cells, absent, protocol, gt.predicate_classes, has_ng,
                                                zs=zeroshot is not None, absent_zs=absent_zs, wimr_weights=weights)
    if train is not None:
        notes.append(f"zero-shot set and n_c: {os.path.basename(stats)} ({train.source}; "
                     f"{len(train.zeroshot_triplets)} zero-shot triplets)")
    test_ids = {(type(i.image_id), i.image_id) for i in gt.images}
    extra = sum(key not in test_ids for key in sub.images)
    _check_id_types(gt, sub, test_ids)
    if absent:
        how = {"openpsg": "are skipped (as OpenPSG)",
               "sgbench": "count 0 in R@K and InstR and are left out of mR@K and PRk (as sgbench)",
               "sgbench-paper": "count 0 in every recall and are left out of PRk"}[protocol]
        notes.insert(0, f"WARNING: {absent} test images with relations have no prediction: they {how}")
    if no_rows:
        notes.append(f"{no_rows} images without a predicted triplet were skipped (as OpenPSG)")
    if extra:
        notes.append(f"{extra} predicted images are not test images with relations and were not evaluated")
    dropped = sum(pred.duplicates for _, pred in present)
    if dropped:
        notes.append(f"{dropped} duplicate triplets dropped (first kept)")
    return {"task": "sgdet", "protocol": protocol, "mode": sub.mode, "tau": tau, "metrics": metrics,
            "per_predicate": per_predicate,
            "counts": {"images_input": len(work), "images_evaluated": len(present), "images_absent": absent,
                       "images_skipped_no_pred": no_rows,
                       "images_skipped_no_gt": gt.without_relations, "predicted_images_not_in_test": extra},
            "notes": notes, "input": {"predictions": os.path.basename(predictions), "psg": os.path.basename(psg),
                                      "format": sub.kind if legacy else f"sgbench {sub.kind}"}}


def _training(stats: str | None, gt: PsgGT) -> TrainingStats | None:
    if stats is None:
        return None
    train = read_stats(stats)
    if train.vocab != psg_vocabulary(gt):
        raise InputError("class or predicate names differ from psg.json's: not statistics of this PSG file",
                         path=stats, field="object_classes/predicate_classes")
    return train


@dataclass(frozen=True)
class _ZeroShot:
    """The zero-shot class triplets of the statistics as sorted ``triplet_key`` values (1-based ids)."""

    keys: np.ndarray
    sizes: tuple[int, int]

    @classmethod
    def of(cls, train: TrainingStats) -> _ZeroShot:
        zs, sizes = train.zeroshot_triplets, (train.vocab.num_objects, train.vocab.num_predicates)
        return cls(np.unique(triplet_key(zs[:, 0], zs[:, 1], zs[:, 2], *sizes)), sizes)

    def rows(self, image: PsgImage) -> np.ndarray:
        """Per GT row of ``image``, whether its class triplet is zero-shot."""
        t, labels = image.triplets, image.labels + 1
        return np.isin(triplet_key(labels[t[:, 0]], labels[t[:, 1]], t[:, 2] + 1, *self.sizes), self.keys)


def _check_id_types(gt: PsgGT, sub: Submission, test_ids: set) -> None:
    """Ids are compared with their type; a prediction whose id matches a test image only as text is a file
    written with the other type (PSG's ids are strings), refused rather than counted absent."""
    as_text = {str(image_id) for _, image_id in test_ids}
    for kind, image_id in sub.images:
        if (kind, image_id) not in test_ids and str(image_id) in as_text:
            theirs = type(gt.images[0].image_id).__name__
            raise InputError(f"image id {image_id!r} is a {kind.__name__}, but psg.json's ids are {theirs}s "
                             "(strings in PSG): write the ids as psg.json has them", path=sub.path, image_id=image_id,
                             field="id")


def _map(gt: PsgGT, sub: Submission, present: list, jobs: int, protocol: str, has_ng: bool,
         zeroshot: _ZeroShot | None) -> tuple[Accumulator, Accumulator, np.ndarray]:
    """The run's accumulated ranks, reach ranks and PRk cells, chunk results reduced in file order."""
    chunks = [present[i:i + _CHUNK] for i in range(0, len(present), _CHUNK)]
    if jobs <= 1 or len(chunks) <= 1:
        parts = [_evaluate_chunk(gt, sub, chunk, protocol, has_ng, zeroshot) for chunk in chunks]
    else:
        global _SHARED
        # inherited by the forked workers: only results are pickled
        _SHARED = (gt, sub, chunks, protocol, has_ng, zeroshot)
        try:
            with multiprocessing.get_context("fork").Pool(min(jobs, len(chunks))) as pool:
                parts = list(pool.imap(_worker, range(len(chunks)), chunksize=1))
        finally:
            _SHARED = None
    acc, reach = Accumulator(gt.num_predicates), Accumulator(gt.num_predicates)
    for part_acc, part_reach, _ in parts:
        acc.merge(part_acc)
        reach.merge(part_reach)
    cells = np.concatenate([p[2] for p in parts]) if parts else np.zeros((0, gt.num_predicates))
    return acc, reach, cells


_SHARED: tuple | None = None


def _worker(index: int) -> tuple[Accumulator, Accumulator, np.ndarray]:
    gt, sub, chunks, protocol, has_ng, zeroshot = _SHARED
    return _evaluate_chunk(gt, sub, chunks[index], protocol, has_ng, zeroshot)


def _evaluate_chunk(gt: PsgGT, sub: Submission, chunk: list, protocol: str, has_ng: bool,
                    zeroshot: _ZeroShot | None) -> tuple[Accumulator, Accumulator, np.ndarray]:
    ranks, reaches = [], []
    cells = np.full((len(chunk), gt.num_predicates), np.nan)
    for j, (image, pred) in enumerate(chunk):
        if sub.mode == "masks":
            seg = segment_index(gt, image)
            iou = mask_ious(seg, len(image.labels), sub.masks(pred, seg.shape))
        else:
            iou = box_ious(image.boxes, pred.boxes)
        ng = pred.ng_triplets if has_ng else None
        if protocol == "openpsg":
            ok, gc = triplet_ok(iou, pred.labels, image.labels), pred.rows
        else:
            pred2gt = (assign if protocol == "sgbench" else assign_one_to_one)(iou, pred.labels, image.labels)
            ok = instance_ok(pred2gt, len(image.labels))
            gc = pred.triplets if protocol == "sgbench" else graph_constrained(pred.triplets)
            cells[j] = predicate_rank_cells(image.triplets, len(image.labels), pred2gt, pred.ng_triplets,
                                            gt.num_predicates)
        image_rank, reach = image_ranks(image.triplets, ok, gc, ng)
        ranks.append(image_rank)
        reaches.append(reach)
    acc, reach_acc = Accumulator(gt.num_predicates), Accumulator(gt.num_predicates)
    if ranks:
        flags = None if zeroshot is None else np.concatenate([zeroshot.rows(image) for image, _ in chunk])
        acc.add_many(BlockRanks.of(ranks), zeroshot=flags)
        reach_acc.add_many(BlockRanks.of(reaches))
    return acc, reach_acc, cells
