"""``sgg-eval evaluate PRED --psg psg.json --psg-root ROOT``: a panoptic SGG submission against PSG's test split.

PRED is an SGBench ZIP or folder (masks: evaluated on masks) or its JSON alone (boxes); ``boxes=True`` forces
boxes. OpenPSG's ``--submit`` folder (``formats.openpsg_submit``) is read too, matched by position. The
protocol (``metrics.panoptic_reduce``) is ``sgbench`` (what the sgbench 1.0.0 command computes),
``sgbench-paper`` (the SGBench paper's definitions) or ``openpsg`` (OpenPSG's evaluator, behind most
published PSG numbers). Images are matched by id (value and type, as the files have them); an image of the
test split absent from the predictions is counted and noted, never silent. Work is spread over ``jobs``
forked processes (``psg_work``); any number gives the same document.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from sgg_eval.core.defaults import IOU_THRESHOLD, LONGTAIL_RULE, PSG_PROTOCOL, TAU
from sgg_eval.core.defaults import PSG_PROTOCOLS as PROTOCOLS
from sgg_eval.core.errors import InputError
from sgg_eval.core.tasks import SGDET
from sgg_eval.data.stats import TrainingStats, read_stats
from sgg_eval.io.processes import start_isolated
from sgg_eval.metrics.document import BEYOND
from sgg_eval.metrics.engine import confusion_section
from sgg_eval.metrics.longtail import add_group_recalls, predicate_groups
from sgg_eval.metrics.options import check_option
from sgg_eval.metrics.reduce import wimr_weights
from sgg_eval.panoptic.openpsg_submit import OpenPsgSubmit, is_openpsg_submit
from sgg_eval.panoptic.psg_json import read_psg, read_psg_names
from sgg_eval.panoptic.reduce import psg_metrics, split_by_protocol
from sgg_eval.panoptic.sgbench_submission import Submission, submission_mode
from sgg_eval.panoptic.stats import psg_vocabulary
from sgg_eval.panoptic.types import PsgGT
from sgg_eval.panoptic.work import ZeroShot, reduce_images

_ABSENT = {
    "openpsg": "are skipped (as OpenPSG)",
    "sgbench": "count 0 in R@K and InstR and are left out of mR@K and PRk (as sgbench)",
    "sgbench-paper": "count 0 in every recall and are left out of PRk",
}


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
    they are: ``metrics.panoptic_reduce.PROTOCOL_METRICS``), ``counts``, ``notes``. ``stats``: statistics of
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
        gt,
        work,
        extra=sum(key not in test_ids for key in sub.images),
        has_ng=has_ng,
        train=train,
        stats_name=None if stats is None else os.path.basename(stats),
        tau=tau,
        iou_threshold=iou_threshold,
    )
    return documents(run, reduced, gt, sub.mode, inputs, longtail)


def documents(run: Run, reduced: dict, gt: PsgGT, mode: str, inputs: dict | None, longtail: str) -> dict[str, dict]:
    """Every protocol's document from its reduction (``work.Reduced``), with the head/body/tail recalls of rule
    ``longtail``; ``inputs`` is the document's ``input`` (None: no file, the Python API's)."""
    docs = {p: _document(run, reduced[p], p, gt, mode, run.images, inputs) for p in reduced}
    predicates, counts = psg_vocabulary(gt).predicate_classes, run.train and run.train.predicate_counts[1:]
    groups, rule = predicate_groups(predicates, counts, longtail)
    return {p: add_group_recalls(doc, predicates, groups, rule) for p, doc in docs.items()}


@dataclass(frozen=True)
class Run:
    """What every protocol's document of one run shares: the test images with relations (``images``), those
    absent from the predictions (``absent_zs`` of them with a zero-shot row), predicted images outside the test
    split (``extra``), present images without a triplet (``no_rows``), duplicate triplets dropped, and the
    settings (``stats_name``: the statistics' file name)."""

    images: int
    absent: int
    absent_zs: int
    extra: int
    no_rows: int
    dropped: int
    has_ng: bool
    train: TrainingStats | None
    stats_name: str | None
    tau: float
    iou_threshold: float

    @classmethod
    def of(cls, gt: PsgGT, work: list, *, extra: int, has_ng: bool, train, stats_name, tau, iou_threshold) -> Run:
        """From ``work``, every test image with its prediction (None: absent)."""
        zeroshot, absent = train and ZeroShot.of(train), [image for image, pred in work if pred is None]
        present = [pred for _, pred in work if pred is not None]
        return cls(
            images=len(work),
            absent=len(absent),
            absent_zs=0 if zeroshot is None else sum(bool(zeroshot.rows(image).any()) for image in absent),
            extra=extra,
            no_rows=sum(not len(pred.rows) for pred in present),
            dropped=sum(pred.duplicates for pred in present),
            has_ng=has_ng,
            train=train,
            stats_name=stats_name,
            tau=tau,
            iou_threshold=iou_threshold,
        )


def _document(run: Run, r, protocol: str, gt: PsgGT, mode: str, images: int, inputs: dict) -> dict:
    """``protocol``'s metrics document from its reduction ``r`` (``work.Reduced``)."""
    metrics, per_predicate, notes = psg_metrics(
        r.acc,
        r.reach,
        r.cells,
        run.absent,
        protocol,
        gt.predicate_classes,
        run.has_ng,
        zs=run.train is not None,
        absent_zs=0 if protocol == "openpsg" else run.absent_zs,
        wimr_weights=None if run.train is None else wimr_weights(run.train.num_pairs, run.tau),
    )
    skipped = run.no_rows if protocol == "openpsg" else 0
    _run_notes(notes, protocol, run, skipped)
    metrics, per_predicate, beyond = split_by_protocol(metrics, per_predicate, protocol)
    return {
        "task": SGDET.name,
        "protocol": protocol,
        "mode": mode,
        "tau": run.tau,
        "iou_threshold": run.iou_threshold,
        "metrics": metrics,
        "per_predicate": per_predicate,
        BEYOND: beyond,
        "counts": {
            "images_input": images,
            "images_evaluated": r.acc.images,
            "images_absent": run.absent,
            "images_skipped_no_pred": skipped,
            "images_skipped_no_gt": gt.without_relations,
            "predicted_images_not_in_test": run.extra,
        },
        "notes": notes,
        "input": inputs,
        "confusion": confusion_section(r.confusion, gt.predicate_classes),
    }


def _run_notes(notes: list, protocol: str, run: Run, skipped: int) -> None:
    """What a reader of ``protocol``'s document must know about the run, added to the metrics' ``notes``."""
    if run.train is not None:
        notes.append(
            f"zero-shot set and n_c: {run.stats_name} ({run.train.source}; "
            f"{len(run.train.zeroshot_triplets)} zero-shot triplets)"
        )
    if run.absent:
        notes.insert(
            0, f"WARNING: {run.absent} test images with relations have no prediction: they {_ABSENT[protocol]}"
        )
    if skipped:
        notes.append(f"{skipped} images without a predicted triplet were skipped (as OpenPSG)")
    if run.extra:
        notes.append(f"{run.extra} predicted images are not test images with relations and were not evaluated")
    if run.iou_threshold != IOU_THRESHOLD:
        notes.append(
            f"instances matched at IoU {run.iou_threshold:g}, not the protocol's {IOU_THRESHOLD:g}: a variant, not "
            "comparable with published numbers"
        )
    if run.dropped and protocol != "openpsg":
        notes.append(f"{run.dropped} duplicate triplets dropped (first kept)")


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
        if (kind, image_id) not in test_ids and str(image_id) in as_text:
            theirs = type(gt.images[0].image_id).__name__
            raise InputError(
                f"image id {image_id!r} is a {kind.__name__}, but psg.json's ids are {theirs}s "
                "(strings in PSG): write the ids as psg.json has them",
                path=sub.path,
                image_id=image_id,
                field="id",
            )
