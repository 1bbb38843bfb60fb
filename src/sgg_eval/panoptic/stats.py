"""``sgg-eval stats --psg psg.json``: training statistics of PSG, for zero-shot recall and wIMR on PSG.

The training split is every ``psg.json`` entry outside ``test_image_ids`` (OpenPSG's train and val images)
that has relations; the test split (for the zero-shot set) is the test images with relations. Each becomes a
``GTImage`` (segment boxes from ``annotations``, classes and predicates shifted to 1-based: index 0 is
background in the statistics' arrays) and ``stats.compute_stats`` counts them with the box rules it applies to
VG150 (docs/definitions.md §4), so every statistic means the same thing on both datasets.
"""

from __future__ import annotations

import os

from sgg_eval.core.errors import InputError
from sgg_eval.data.stats import TrainingStats, compute_stats
from sgg_eval.data.types import GTImage, Vocabulary
from sgg_eval.panoptic.psg_json import read_psg
from sgg_eval.panoptic.types import PsgGT


def psg_vocabulary(gt: PsgGT) -> Vocabulary:
    """PSG's names in id order from 1 (``thing_classes + stuff_classes``; ``predicate_classes``)."""
    return Vocabulary(tuple(gt.object_classes), tuple(gt.predicate_classes))


def psg_training_stats(
    psg: str | os.PathLike,
    *,
    drop_non_overlapping: bool = False,
    background_must_overlap: bool = True,
    simulated: bool = False,
) -> TrainingStats:
    """The statistics of ``psg``'s training split (module docstring); ``simulated``: the file is the pipeline's
    simulated PSG-like benchmark (the statistics then say so)."""
    train = read_psg(psg, boxes=True, split="train")
    if not train.images:
        raise InputError(
            "no training image with relations (every entry is a test image, or has none)",
            path=os.fspath(psg),
            field="data",
        )
    test = read_psg(psg, boxes=True)
    return compute_stats(
        (_gt_image(i) for i in train.images),
        psg_vocabulary(train),
        (_gt_image(i) for i in test.images),
        drop_non_overlapping=drop_non_overlapping,
        background_must_overlap=background_must_overlap,
        simulated=simulated,
        source=f"PSG training split of {os.path.basename(os.fspath(psg))} ({len(train.images)} images with relations)",
    )


def _gt_image(image) -> GTImage:
    """The image as ``compute_stats`` reads it (its width and height, which no statistic uses, are the boxes'
    extent: psg.json's are not read)."""
    boxes = image.boxes
    width = int(boxes[:, 2].max()) if len(boxes) else 0
    height = int(boxes[:, 3].max()) if len(boxes) else 0
    rels = image.relations.copy()
    rels[:, 2] += 1
    return GTImage(image.position, width, height, boxes, image.labels + 1, rels)
