"""A panoptic evaluation's documents, one per protocol, from its reductions (``work.Reduced``) and what the
run shares (:class:`Run`): the metrics, the counts and the notes a reader must see. Both the command
(``evaluate.evaluate_protocols``) and the Python API (``api.psg_evaluator``) assemble them here."""

from __future__ import annotations

from dataclasses import dataclass

from sgg_eval.core.defaults import IOU_THRESHOLD
from sgg_eval.core.protocols import PER_TRIPLET
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.core.tasks import SGDET
from sgg_eval.data.stats import TrainingStats
from sgg_eval.metrics.document import BEYOND
from sgg_eval.metrics.engine import confusion_section
from sgg_eval.metrics.longtail import add_group_recalls, predicate_groups
from sgg_eval.metrics.reduce import wimr_weights
from sgg_eval.panoptic.reduce import psg_metrics, split_by_protocol
from sgg_eval.panoptic.stats import psg_vocabulary
from sgg_eval.panoptic.types import PsgGT

_ABSENT = {
    "openpsg": "are skipped (as OpenPSG)",
    "sgbench": "count 0 in R@K and InstR and are left out of mR@K and PRk (as sgbench)",
    "sgbench-paper": "count 0 in every recall and are left out of PRk",
}


def documents(run: Run, reduced: dict, gt: PsgGT, mode: str, inputs: dict | None, longtail: str) -> dict[str, dict]:
    """Every protocol's document from its reduction (``work.Reduced``), with the head/body/tail recalls of rule
    ``longtail``; ``inputs`` is the document's ``input`` (None: no file, the Python API's)."""
    docs = {p: _document(run, reduced[p], p, gt, mode, inputs) for p in reduced}
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
    def of(cls, work: list, *, extra: int, has_ng: bool, train, zeroshot, stats_name, tau, iou_threshold) -> Run:
        """From ``work``, every test image with its prediction (None: absent); ``zeroshot``: ``train``'s."""
        absent = [image for image, pred in work if pred is None]
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


def _document(run: Run, r, protocol: str, gt: PsgGT, mode: str, inputs: dict | None) -> dict:
    """``protocol``'s metrics document from its reduction ``r`` (``work.Reduced``)."""
    rules = protocol_record(protocol)
    metrics, per_predicate, notes = psg_metrics(
        r.acc,
        r.reach,
        r.cells,
        run.absent,
        protocol,
        gt.predicate_classes,
        run.has_ng,
        zs=run.train is not None,
        absent_zs=run.absent_zs if rules.counts_unpredicted else 0,
        wimr_weights=None if run.train is None else wimr_weights(run.train.num_pairs, run.tau),
    )
    skipped = 0 if rules.counts_unpredicted else run.no_rows
    _run_notes(notes, protocol, run, skipped)
    if r.empty_gt:
        notes.append(
            f"WARNING: {r.empty_gt} GT segments of the evaluated images are listed in psg.json but carried by no "
            "pixel of their PNG: each is an empty GT mask, which no prediction can match (the tools read them so too)"
        )
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
            "images_input": run.images,
            "images_evaluated": r.acc.images,
            "images_absent": run.absent,
            "images_skipped_no_pred": skipped,
            "images_skipped_no_gt": gt.without_relations,
            "predicted_images_not_in_test": run.extra,
            "gt_segments_without_pixels": r.empty_gt,
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
    if run.dropped and protocol_record(protocol).matching != PER_TRIPLET:
        notes.append(f"{run.dropped} duplicate triplets dropped (first kept)")
