"""An SGBench image's instance list, under each of its published spellings: ``annotation: [{bbox, category}]``
(what sgbench 1.0.0 reads), ``instances: [{bbox, category}]`` (the SGBench paper) and image-level ``bboxes`` +
``categories`` (sgbench's README). A file written for more than one of them (sgbench's code and its README)
may give several: they are read when they hold the same instances in the same order (sgbench, reading
``annotation``, then gives the same numbers), and refused naming both keys and the first difference when not.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonfast import ObjectMarks, box_rows, is_array, is_object, number_rows, unique_keys_each

# the spellings of an image's instance list: sgbench 1.0.0 reads `annotation`, the SGBench paper writes `instances`,
# sgbench's README `bboxes` + `categories`; a file may give several if they hold the same instances
SPELLINGS = ("annotation", "instances", "bboxes")


def read_instances(entry, where: dict, marks: ObjectMarks | None = None) -> tuple:
    """(categories, boxes) arrays from the spellings the image uses: one, or several holding the same list.
    ``marks``: the entry's text marks where the caller has them (faster checks of number lists)."""
    marks = marks or ObjectMarks(None)
    spelled = [k for k in SPELLINGS[:2] if k in entry] + (
        ["bboxes"] if "bboxes" in entry or "categories" in entry else []
    )
    if not spelled:
        raise InputError(
            "no instances: give 'annotation' or 'instances' ([{bbox, category}]), or 'bboxes' + 'categories'",
            field="instances",
            **where,
        )
    first, *others = [(key, _spelled(entry, key, marks, where)) for key in spelled]
    for other in others:
        _same_instances(first, other, where)
    return first[1]


def _spelled(entry, key: str, marks: ObjectMarks, where: dict) -> tuple[np.ndarray, np.ndarray]:
    if key == "bboxes":
        labels = number_rows(entry.get("categories"), None, integer=True, field="categories", where=where, marks=marks)
        return labels, _boxes(entry.get("bboxes"), len(labels), marks, where)
    listed = entry[key]
    if not is_array(listed) or not all(is_object(i) for i in listed):
        raise InputError("expected a list of {bbox, category}", field=key, **where)
    cats = [i.get("category") for i in listed]
    if not all(type(c) is int for c in cats):
        raise InputError("expected an integer category per instance", field=f"{key}.category", **where)
    boxes = box_rows([i.get("bbox") for i in listed], f"{key}.bbox", where)
    unique_keys_each(listed, key, where, found=2)  # each has its category and bbox
    return np.array(cats, dtype=np.int64), boxes


def _same_instances(first: tuple, other: tuple, where: dict) -> None:
    """Refuse two spellings of the instance list that differ, naming both keys and the first difference."""
    (key_a, (cats_a, boxes_a)), (key_b, (cats_b, boxes_b)) = first, other
    name_a, name_b = (f"'{k}'" if k != "bboxes" else "'bboxes' + 'categories'" for k in (key_a, key_b))
    if len(cats_a) != len(cats_b):
        why = f"{len(cats_a)} instances under {name_a}, {len(cats_b)} under {name_b}"
    elif (cats_a != cats_b).any():
        i = int(np.flatnonzero(cats_a != cats_b)[0])
        why = f"instance {i}'s category is {cats_a[i]} under {name_a} and {cats_b[i]} under {name_b}"
    elif (boxes_a != boxes_b).any():
        i = int(np.flatnonzero((boxes_a != boxes_b).any(axis=1))[0])
        why = f"instance {i}'s bbox is {boxes_a[i].tolist()} under {name_a} and {boxes_b[i].tolist()} under {name_b}"
    else:
        return
    raise InputError(
        f"the instances are given twice and differ: {why} (give them once, or the same)", field=key_b, **where
    )


def _boxes(value, count: int, marks: ObjectMarks, where: dict) -> np.ndarray:
    boxes = number_rows(value, 4, integer=False, field="bboxes", where=where, marks=marks)
    if len(boxes) != count:
        raise InputError(f"{len(boxes)} boxes for {count} categories", field="bboxes", **where)
    return boxes
