"""The panoptic data model: one GT image of ``psg.json`` (:class:`PsgImage`), a split of them (:class:`PsgGT`) and
one image of a model's predictions (:class:`SubmissionImage`), whichever file it came from (``psg_json``,
``sgbench_submission``, ``openpsg_submit``). The box side's equivalents are in ``data.types``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PsgImage:
    """One image with relations: its id, segment ids and 0-based classes (``segments_info`` order), unique GT
    triplets ``[M, 3]`` (subject, object: segment indices; predicate), boxes ``[N, 4]`` xyxy, PNG name, and
    the ``relations`` rows as given (duplicates kept: what training statistics count)."""

    image_id: int | str
    position: int
    segment_ids: np.ndarray
    labels: np.ndarray
    triplets: np.ndarray
    boxes: np.ndarray
    png: str
    relations: np.ndarray


@dataclass(frozen=True)
class PsgGT:
    """The images with relations of one split (file order), names, and the split's images without relations."""

    path: str
    root: str
    object_classes: tuple[str, ...]
    predicate_classes: tuple[str, ...]
    images: list[PsgImage]
    without_relations: int

    @property
    def num_predicates(self) -> int:
        return len(self.predicate_classes)


@dataclass
class SubmissionImage:
    """One image's predictions: instance classes ``[N]`` and boxes ``[N, 4]``; ``triplets`` and ``ng_triplets``
    ``[T, 3]`` de-duplicated in their order; the TIFF's name (mask mode); ``rows``, the triplets as given. The
    rows are int16 (int32 past 32,767 instances or predicates): compute keys from them in int64."""

    image_id: int | str
    position: int
    labels: np.ndarray
    boxes: np.ndarray
    triplets: np.ndarray
    ng_triplets: np.ndarray
    duplicates: int
    seg_filename: str | None
    rows: np.ndarray  # the triplets as given, duplicates included (what OpenPSG's protocol ranks)
    segment_ids: np.ndarray | None = None  # OpenPSG's submit folder: each instance's id in its PNG
