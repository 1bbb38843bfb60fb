"""The PSG ground truth as ProVision reads it (issue 48, ``--protocol provision``; ``get_psg_gt`` in
``osprey/eval/psg/get_scene_graph_metric.py``, and the ``gt_*`` fields its end-to-end answers carry):

    {"data": [{"index": 7, "relations": [[s, o, p], ...], "segments_info": [{"category_id": c}, ...],
               "annotations": [{"bbox": [x1, y1, x2, y2]}, ...]}, ...]}

An image's objects are its ``segments_info`` (class ``category_id``) with the box of the annotation at the same
position; relations index them, predicates index PSG's 56. Its file (``psg_asv2_val_test.json``) is not public:
images are keyed by ``index`` as it keys them, else (OpenPSG's own ``psg.json``) by ``image_id``. Class ids are
PSG's 133 (80 things, then 53 stuff; ``resources/psg_facts.json``), as ProVision's category file is taken to list
them (it is not public either). Refused in one line naming the file, the image and the field: an object, box or
relation that is not one, an index outside its list, a repeated key.
"""

from __future__ import annotations

import functools
import os

from sgg_eval.arrays.torch_tensors import as_tensor
from sgg_eval.core.errors import InputError
from sgg_eval.data.psg_facts import psg_facts
from sgg_eval.io.jsonio import parse_json, read_bytes

MAX_GT_BYTES = 1 << 33
GroundTruth = tuple  # (relations [(s, o, p)], class per object, box per object as written)


@functools.cache
def psg_names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """PSG's 133 object classes and 56 predicates, in index order (read once: every GT image is checked on them)."""
    facts = psg_facts()
    return tuple(facts["object_classes"]), tuple(facts["predicate_classes"])


def read_provision_gt(path: str | os.PathLike) -> dict[str, GroundTruth]:
    """``str(key)`` -> :data:`GroundTruth` of every image of the PSG-style file at ``path``."""
    path = os.fspath(path)
    doc = parse_json(read_bytes(path, "PSG ground-truth JSON", MAX_GT_BYTES), path)
    images = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(images, list) or not images:
        raise InputError("expected an object with a non-empty 'data' list of images", path=path, field="data")
    out = {}
    for position, image in enumerate(images):
        where = dict(path=path, position=position)
        if not isinstance(image, dict):
            raise InputError("an image must be an object", field="data", **where)
        field = "index" if "index" in image else "image_id"
        key = image.get(field)
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            raise InputError("missing or not an integer or string", field=field, **where)
        where["image_id"] = key
        if str(key) in out:
            raise InputError("repeated image key", field=field, **where)
        segments, annotations = image.get("segments_info"), image.get("annotations")
        if not isinstance(segments, list) or not isinstance(annotations, list) or len(annotations) < len(segments):
            raise InputError("segments_info and annotations must be lists, an annotation per segment",
                             field="segments_info", **where)  # fmt: skip
        if not all(isinstance(x, dict) for x in segments + annotations):
            raise InputError("every segment and annotation must be an object", field="segments_info", **where)
        classes = [s.get("category_id") for s in segments]
        boxes = [a.get("bbox") for a in annotations[: len(segments)]]
        out[str(key)] = check_gt(image.get("relations"), classes, boxes, where, ("relations", "category_id", "bbox"))
    return out


def check_gt(relations, classes, boxes, where: dict, fields: tuple[str, str, str]) -> GroundTruth:
    """One image's GT, checked: relations ``[s, o, p]`` within the objects and PSG's predicates, classes within
    PSG's, boxes of 4 numbers (``fields`` name the three in the user's file)."""
    objects, predicates = psg_names()
    if not isinstance(classes, list) or not all(_index(c, len(objects)) for c in classes):
        raise InputError(f"object classes must be integers in [0, {len(objects)})", field=fields[1], **where)
    if not isinstance(boxes, list) or len(boxes) != len(classes) or as_tensor(boxes) is None:
        raise InputError(f"expected {len(classes)} boxes of 4 numbers, one per object", field=fields[2], **where)
    if not isinstance(relations, list):
        raise InputError("must be a list of [subject, object, predicate]", field=fields[0], **where)
    for r in relations:
        if not (isinstance(r, list) and len(r) == 3 and _index(r[0], len(classes)) and _index(r[1], len(classes))
                and _index(r[2], len(predicates))):  # fmt: skip
            raise InputError(
                f"{str(r)[:40]}: not [subject, object, predicate] within {len(classes)} objects and "
                f"{len(predicates)} predicates",
                field=fields[0],
                **where,
            )
    return [tuple(r) for r in relations], classes, boxes


def _index(value, size: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < size
