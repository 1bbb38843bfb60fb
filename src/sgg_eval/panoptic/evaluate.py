"""``sgg-eval evaluate PRED --psg psg.json --psg-root ROOT``: a panoptic SGG submission against PSG's test split.

PRED is an SGBench ZIP or folder (masks: evaluated on masks) or its JSON alone (boxes); ``boxes=True`` forces
boxes. OpenPSG's ``--submit`` folder (``panoptic.openpsg_submit``) is read too, matched by position. The
protocol (``panoptic.reduce``) is ``sgbench`` (what the sgbench 1.0.0 command computes),
``sgbench-paper`` (the SGBench paper's definitions) or ``openpsg`` (OpenPSG's evaluator, behind most
published PSG numbers). Images are matched by id (value and type, as the files have them); an image of the
test split absent from the predictions is counted and noted, never silent. Work is spread over ``jobs``
forked processes (``psg_work``); any number gives the same document.
"""

from __future__ import annotations

import functools
import os

from sgg_eval.core.defaults import IOU_THRESHOLD, LONGTAIL_RULE, PSG_PROTOCOL, TAU
from sgg_eval.core.defaults import PSG_PROTOCOLS as PROTOCOLS
from sgg_eval.core.errors import InputError
from sgg_eval.data.stats import TrainingStats, read_stats
from sgg_eval.io.processes import start_isolated
from sgg_eval.metrics.options import check_option
from sgg_eval.panoptic.documents import Run, documents
from sgg_eval.panoptic.openpsg_submit import OpenPsgSubmit, is_openpsg_submit
from sgg_eval.panoptic.psg_json import read_psg, read_psg_names
from sgg_eval.panoptic.sgbench_submission import Submission, submission_mode
from sgg_eval.panoptic.stats import psg_vocabulary
from sgg_eval.panoptic.types import PsgGT
from sgg_eval.panoptic.work import ZeroShot, reduce_images


def run_psg_evaluation(
    predictions: str,
    psg: str,
    root: str = "",
    *,
    protocol: str = PSG_PROTOCOL,
    boxes: bool = False,
    stats: str | None = None,
    tau: float = TAU,
    jobs: int = 1,
    iou_threshold: float = IOU_THRESHOLD,
    longtail: str = LONGTAIL_RULE,
) -> dict:
    """The metrics document: ``task``, ``protocol``, ``mode``, ``tau``, ``iou_threshold``, ``metrics`` and
    ``per_predicate`` (the numbers the protocol's source reports), ``beyond_protocol`` (the rest, with what
    they are: ``panoptic.reduce.PROTOCOL_METRICS``), ``counts``, ``notes``. ``stats``: statistics of
    PSG's training split (``sgg-eval stats --psg``), for zR@K and wIMR@K (exponent ``tau``).
    ``iou_threshold``: instances match at this IoU (every protocol's is 0.5; another value is a variant, said
    in the notes). ``longtail``: the head/body/tail rule (:func:`evaluate_protocols`)."""
    if protocol not in PROTOCOLS:
        raise InputError(
            f"protocol {protocol!r} is not one of {', '.join(PROTOCOLS)} for panoptic SGG", field="protocol"
        )
    return evaluate_protocols(
        predictions,
        psg,
        root,
        (protocol,),
        boxes=boxes,
        stats=stats,
        tau=tau,
        jobs=jobs,
        iou_threshold=iou_threshold,
        longtail=longtail,
    )[protocol]


def evaluate_protocols(
    predictions: str,
    psg: str,
    root: str,
    protocols: tuple[str, ...],
    *,
    boxes: bool = False,
    stats: str | None = None,
    tau: float = TAU,
    jobs: int = 1,
    iou_threshold: float = IOU_THRESHOLD,
    longtail: str = LONGTAIL_RULE,
) -> dict[str, dict]:
    """One metrics document per protocol, from one pass over the images (each read and matched once); each with
    the head/body/tail mean recall of rule ``longtail`` beyond the protocol (``metrics.longtail``: on PSG's
    predicates, the frequency rule on ``stats``)."""
    check_option("tau", tau)
    check_option("iou_threshold", iou_threshold)
    legacy = os.path.isdir(predictions) and is_openpsg_submit(predictions)
    if legacy and boxes:
        raise InputError(
            "OpenPSG's submit folder has masks only: no boxes to evaluate", path=predictions, field="--boxes"
        )
    gt, sub = _read(predictions, psg, root, boxes=boxes, legacy=legacy, jobs=jobs)
    test_ids = {(type(i.image_id), i.image_id) for i in gt.images}
    _check_id_types(gt, sub, test_ids)
    work = [(image, sub.images.get((type(image.image_id), image.image_id))) for image in gt.images]
    present = [(image, pred) for image, pred in work if pred is not None]
    has_ng = any(len(pred.ng_triplets) for pred in sub.images.values())
    train = _training(stats, gt)
    zeroshot = None if train is None else ZeroShot.of(train)
    reduced = reduce_images(
        gt, sub, present, protocols, has_ng=has_ng, zeroshot=zeroshot, jobs=jobs, iou_threshold=iou_threshold
    )
    inputs = {
        "predictions": os.fspath(predictions),
        "psg": os.fspath(psg),
        "format": sub.kind if legacy else f"sgbench {sub.kind}",
    }
    run = Run.of(
        work,
        extra=sum(key not in test_ids for key in sub.images),
        has_ng=has_ng,
        train=train,
        zeroshot=zeroshot,
        stats_name=None if stats is None else os.path.basename(stats),
        tau=tau,
        iou_threshold=iou_threshold,
    )
    return documents(run, reduced, gt, sub.mode, inputs, longtail)


def _read(
    predictions: str, psg: str, root: str, *, boxes: bool, legacy: bool, jobs: int
) -> tuple[PsgGT, Submission | OpenPsgSubmit]:
    """The test split and the predictions. With ``jobs`` > 1 psg.json is read in a forked child while this
    process reads an SGBench submission (the two largest parses of a run: ~1 s and ~2 s at PSG's size) and
    only needs psg.json's names for its checks. Errors come in the order of a serial read: psg.json's first."""
    gt_boxes = submission_mode(predictions, boxes) == "boxes"
    if legacy or jobs < 2:  # OpenPSG's submit folder is matched to the test images by position
        gt = _with_images(read_psg(psg, root, boxes=gt_boxes))
        if legacy:
            ids = [image.image_id for image in gt.images]
            return gt, OpenPsgSubmit(predictions, ids, len(gt.object_classes), gt.num_predicates)
        return gt, Submission(predictions, len(gt.object_classes), gt.num_predicates, boxes=boxes)
    with start_isolated(functools.partial(read_psg, psg, root, boxes=gt_boxes)) as reading:
        classes, predicates = read_psg_names(psg)
        try:
            sub = Submission(predictions, len(classes), len(predicates), boxes=boxes, jobs=jobs)
        except InputError:
            _with_images(reading.result())  # a psg.json error comes first, as in a serial read
            raise
        return _with_images(reading.result()), sub


def _with_images(gt: PsgGT) -> PsgGT:
    if not gt.images:
        raise InputError("no test image with relations: nothing to evaluate", path=gt.path)
    return gt


def _training(stats: str | None, gt: PsgGT) -> TrainingStats | None:
    if stats is None:
        return None
    train = read_stats(stats)
    if train.vocab != psg_vocabulary(gt):
        raise InputError(
            "class or predicate names differ from psg.json's: not statistics of this PSG file",
            path=stats,
            field="object_classes/predicate_classes",
        )
    return train


def _check_id_types(gt: PsgGT, sub: Submission, test_ids: set) -> None:
    """Ids are compared with their type; a prediction whose id matches a test image only as text is a file
    written with the other type (PSG's ids are strings), refused rather than counted absent."""
    as_text = {str(image_id) for _, image_id in test_ids}
    for kind, image_id in sub.images:
        if (kind, image_id) not in test_ids:
            check_id_type(gt, image_id, as_text, {"path": sub.path, "field": "id"})


def check_id_type(gt: PsgGT, image_id, as_text: set, where: dict) -> None:
    """Refuse ``image_id``, not an id of ``gt``'s test images, when it is one of them as text (``as_text``)."""
    if str(image_id) in as_text:
        theirs = type(gt.images[0].image_id).__name__
        raise InputError(
            f"image id {image_id!r} is a {type(image_id).__name__}, but psg.json's ids are {theirs}s "
            "(strings in PSG): write the ids as psg.json has them",
            image_id=image_id,
            **where,
        )
