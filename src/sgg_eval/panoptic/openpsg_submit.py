"""OpenPSG's ``--submit`` folder, a legacy panoptic SGG input (``tools/grade.py`` of OpenPSG writes and reads it).

``FOLDER/relation.json`` is a list with one entry per test image of OpenPSG's dataset, in its order (the test
images of ``psg.json`` that have relations, in file order), matched **by position**: ``{"relations": [[s, o,
p], ...], "segments_info": [{"id", "category_id"}, ...], "pan_seg_file_name": "<idx>.png"}``.
``FOLDER/panseg/<idx>.png`` holds every predicted mask painted in one RGB image; a segment's pixels are those
whose ``R + 256·G + 256²·B`` equals its ``id``. Classes and predicates are 1-based there (OpenPSG keeps 0 for
background); sgg-eval subtracts 1. The relations are the ranking, best first.

The format's limits, which no reader can lift:
- masks cannot overlap: ``save_results`` adds the colours of overlapping masks, so their shared pixels
  belong to neither (or to a third id);
- two segments that drew the same random colour cannot be told apart: refused;
- no boxes (mask mode only) and no ``ng_triplets``;
- OpenPSG's ``grade.py`` keeps the first 20 relations of an image; all are read here (R@20 and mR@20 are the
  same either way; R@50 and R@100 need more).
"""

from __future__ import annotations

import os

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonio import json_array, load_json
from sgg_eval.panoptic.panoptic_png import read_panoptic_png
from sgg_eval.panoptic.types import SubmissionImage

RELATIONS = "relation.json"
MASKS = "panseg"


def is_openpsg_submit(path: str | os.PathLike) -> bool:
    """A folder holding OpenPSG's ``relation.json``."""
    return os.path.isfile(os.path.join(path, RELATIONS))


class OpenPsgSubmit:
    """The folder read against the ids of the test images with relations (``test_ids``, in psg.json order):
    ``images`` by (type, id) and ``masks(image, shape)``, as :class:`sgbench_submission.Submission`."""

    kind, mode = "openpsg submit folder", "masks"

    def __init__(self, path: str | os.PathLike, test_ids: list, num_classes: int, num_predicates: int):
        self.path = os.fspath(path)
        doc = load_json(os.path.join(self.path, RELATIONS))
        if not isinstance(doc, list):
            raise InputError("expected a list with one entry per test image", path=self._json, field="relation.json")
        if len(doc) != len(test_ids):
            raise InputError(
                f"{len(doc)} entries, and psg.json's test split has {len(test_ids)} images with "
                "relations: OpenPSG's submissions match images by position",
                path=self._json,
            )
        self.images = {}
        for position, (entry, image_id) in enumerate(zip(doc, test_ids)):
            self.images[(type(image_id), image_id)] = self._image(
                entry, position, image_id, num_classes, num_predicates
            )

    @property
    def _json(self) -> str:
        return os.path.join(self.path, RELATIONS)

    def _image(self, entry, position: int, image_id, num_classes: int, num_predicates: int) -> SubmissionImage:
        where = dict(path=self._json, image_id=image_id, position=position)
        if not isinstance(entry, dict) or not isinstance(entry.get("segments_info"), list):
            raise InputError("expected {relations, segments_info, pan_seg_file_name}", field="segments_info", **where)
        segments = entry["segments_info"]
        if not all(isinstance(s, dict) for s in segments):
            raise InputError("expected a list of {id, category_id}", field="segments_info", **where)
        ids = json_array([s.get("id") for s in segments], (None,), integer=True, field="segments_info.id", where=where)
        labels = (
            json_array(
                [s.get("category_id") for s in segments],
                (None,),
                integer=True,
                field="segments_info.category_id",
                where=where,
            )
            - 1
        )
        if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
            raise InputError(
                f"category_id outside [1, {num_classes}] (OpenPSG's are 1-based)",
                field="segments_info.category_id",
                **where,
            )
        if len(ids) and (ids.min() < 1 or ids.max() >= 1 << 24):
            raise InputError("segment id outside [1, 256³ − 1]", field="segments_info.id", **where)
        if len(np.unique(ids)) != len(ids):
            raise InputError(
                "two segments share one id (one colour): their masks cannot be told apart",
                field="segments_info.id",
                **where,
            )
        rows = json_array(entry.get("relations"), (None, 3), integer=True, field="relations", where=where)
        rows = rows - np.array([0, 0, 1])
        if len(rows) and (rows[:, :2].min() < 0 or rows[:, :2].max() >= len(labels)):
            raise InputError(f"segment index outside [0, {len(labels) - 1}]", field="relations", **where)
        if len(rows) and (rows[:, 2].min() < 0 or rows[:, 2].max() >= num_predicates):
            raise InputError(
                f"predicate outside [1, {num_predicates}] (OpenPSG's are 1-based)", field="relations", **where
            )
        png = entry.get("pan_seg_file_name")
        if not isinstance(png, str) or "/" in png or "\\" in png or png in ("", ".", ".."):
            raise InputError("expected a PNG file name in panseg/", field="pan_seg_file_name", **where)
        _, first = np.unique(rows, axis=0, return_index=True)
        return SubmissionImage(
            image_id,
            position,
            labels,
            np.zeros((0, 4)),
            rows[np.sort(first)],
            np.zeros((0, 3), dtype=np.int64),
            len(rows) - len(first),
            png,
            rows,
            segment_ids=ids,
        )

    def masks(self, image: SubmissionImage, shape: tuple[int, int]) -> np.ndarray:
        """``[N, H, W]`` uint8: 1 where a pixel has the segment's id in the image's PNG."""
        file = os.path.join(self.path, MASKS, image.seg_filename)
        ids = read_panoptic_png(file, dict(path=file, image_id=image.image_id), shape)
        if ids.shape != tuple(shape):
            raise InputError(
                f"masks of {ids.shape[1]}x{ids.shape[0]} px, the GT image is {shape[1]}x{shape[0]}",
                path=file,
                image_id=image.image_id,
            )
        return (ids[None, :, :] == image.segment_ids.astype(ids.dtype)[:, None, None]).view(np.uint8)
