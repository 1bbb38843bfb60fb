"""``sgg-eval evaluate PRED --psg psg.json --psg-root ROOT``: a panoptic SGG submission against PSG's test split.

PRED is an SGBench ZIP or folder (masks: evaluated on masks) or its JSON alone (boxes); ``boxes=True`` forces
boxes. The protocol is ``sgbench`` (``metrics.panoptic``: what the sgbench 1.0.0 command computes) or
``openpsg`` (``metrics.panoptic_openpsg``: OpenPSG's evaluator, behind most published PSG numbers). Images
are matched by id (value and type, as the files have them); an image of the test split absent from the
predictions is counted and noted, never silent. Work is spread over ``jobs`` forked processes, a chunk of
images each, with the same result for any number.
"""

from __future__ import annotations

import multiprocessing
import os

from sgg_eval.errors import InputError
from sgg_eval.formats.psg_gt import PsgGT, read_psg, segment_index
from sgg_eval.formats.sgbench_submission import Submission, submission_mode
from sgg_eval.metrics import panoptic_openpsg as openpsg
from sgg_eval.metrics.panoptic import aggregate, assign, box_ious, image_metrics, mask_ious

PROTOCOLS = ("sgbench", "openpsg")
_CHUNK = 16  # images a worker evaluates per task


def run_psg_evaluation(predictions: str, psg: str, root: str = "", *, protocol: str = "sgbench",
                       boxes: bool = False, jobs: int = 1) -> dict:
    """The metrics document (``task``, ``protocol``, ``mode``, ``metrics``, ``counts``, ``notes``)."""
    if protocol not in PROTOCOLS:
        raise InputError(f"protocol {protocol!r} is not one of {', '.join(PROTOCOLS)} for panoptic SGG",
                         field="protocol")
    gt = read_psg(psg, root, boxes=submission_mode(predictions, boxes) == "boxes")
    if not gt.images:
        raise InputError("no test image with relations: nothing to evaluate", path=gt.path)
    sub = Submission(predictions, len(gt.object_classes), gt.num_predicates, boxes=boxes)
    work = [(gt.images[i], sub.images.get((type(gt.images[i].image_id), gt.images[i].image_id)))
            for i in range(len(gt.images))]
    present = [(image, pred) for image, pred in work if pred is not None]
    absent, with_predictions = len(work) - len(present), len(present)
    if protocol == "openpsg":  # images without a predicted triplet are skipped, not counted 0
        present = [(image, pred) for image, pred in present if len(pred.rows)]
    no_rows = with_predictions - len(present)
    results = _map(gt, sub, present, jobs, protocol)
    if protocol == "openpsg":
        metrics, notes = openpsg.aggregate(results, gt.num_predicates)
    else:
        metrics, notes = aggregate(results, absent, gt.num_predicates)
    test_ids = {(type(i.image_id), i.image_id) for i in gt.images}
    extra = sum(key not in test_ids for key in sub.images)
    _check_id_types(gt, sub, test_ids)
    if absent:
        how = "are skipped (as OpenPSG)" if protocol == "openpsg" else \
            "count 0 in R@K and InstR and are left out of mR@K and PRk (as sgbench)"
        notes.insert(0, f"WARNING: {absent} test images with relations have no prediction: they {how}")
    if no_rows:
        notes.append(f"{no_rows} images without a predicted triplet were skipped (as OpenPSG)")
    if extra:
        notes.append(f"{extra} predicted images are not test images with relations and were not evaluated")
    dropped = sum(pred.duplicates for _, pred in present)
    if dropped:
        notes.append(f"{dropped} duplicate triplets dropped (first kept)")
    return {"task": "sgdet", "protocol": protocol, "mode": sub.mode, "metrics": metrics,
            "counts": {"images_input": len(work), "images_evaluated": len(present), "images_absent": absent,
                       "images_skipped_no_pred": no_rows,
                       "images_skipped_no_gt": gt.without_relations, "predicted_images_not_in_test": extra},
            "notes": notes, "input": {"predictions": os.path.basename(predictions), "psg": os.path.basename(psg),
                                      "format": f"sgbench {sub.kind}"}}


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


def _map(gt: PsgGT, sub: Submission, present: list, jobs: int, protocol: str) -> list[dict]:
    chunks = [present[i:i + _CHUNK] for i in range(0, len(present), _CHUNK)]
    if jobs <= 1 or len(chunks) <= 1:
        return [m for chunk in chunks for m in _evaluate_chunk(gt, sub, chunk, protocol)]
    global _SHARED
    _SHARED = (gt, sub, chunks, protocol)  # inherited by the forked workers: nothing is pickled but the results
    try:
        with multiprocessing.get_context("fork").Pool(min(jobs, len(chunks))) as pool:
            return [m for part in pool.imap(_worker, range(len(chunks)), chunksize=1) for m in part]
    finally:
        _SHARED = None


_SHARED: tuple | None = None


def _worker(index: int) -> list[dict]:
    gt, sub, chunks, protocol = _SHARED
    return _evaluate_chunk(gt, sub, chunks[index], protocol)


def _evaluate_chunk(gt: PsgGT, sub: Submission, chunk: list, protocol: str) -> list[dict]:
    out = []
    for image, pred in chunk:
        if sub.mode == "masks":
            seg = segment_index(gt, image)
            iou = mask_ious(seg, len(image.labels), sub.masks(pred, seg.shape))
        else:
            iou = box_ious(image.boxes, pred.boxes)
        if protocol == "openpsg":
            out.append(openpsg.image_metrics(image.triplets, image.labels, iou, pred.labels, pred.rows,
                                             gt.num_predicates))
            continue
        pred2gt = assign(iou, pred.labels, image.labels)
        out.append(image_metrics(image.triplets, len(image.labels), pred2gt, pred.triplets, pred.ng_triplets,
                                 gt.num_predicates))
    return out
