"""R1-SGG's gathered file (issue 48, ``--protocol r1sgg``): what ``sgg_gather_preds.py`` writes from the answer folder,
the answers already read and their names already mapped, one entry per answer file:

    {"<image_id>": {"boxes": [[x1, y1, x2, y2], ...], "labels": [...], "scores": [...],
                    "graph": {"all_node_pairs": [[s, o], ...], "all_relation": [[0, 1, 0, ...], ...], ...}, ...}}

- ``labels`` are VG150's 1-based class ids, or PSG's 0-based ones (R1-SGG's PSG list has no background);
- each relation is a node pair with a one-hot row over ``[background] + predicates``;
- a failure and an answer without a kept object were both written as R1-SGG's placeholder (one object of label 0,
  one relation whose row is all zeros): they cannot be told apart here, so the failure rate is unknown.

Refused in one line naming the file, the image and the field: entries that are not of this shape (boxes not 4
finite numbers, labels out of range, node pairs naming no object, rows that are not one-hot over the predicates),
and images the GT rows lack.
"""

from __future__ import annotations

import math
import os

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import Vocabulary
from sgg_eval.io.jsonio import load_json
from sgg_eval.text.graphs import refuse_foreign
from sgg_eval.text.r1sgg.answers import MappedAnswer


def read_r1sgg_gathered(path: str | os.PathLike, gt_ids: set, vocab: Vocabulary, dataset: str) -> dict:
    """Image id -> :class:`MappedAnswer` (a placeholder as an empty one) of the gathered file ``path``."""
    path = os.fspath(path)
    doc = load_json(path)
    if not isinstance(doc, dict) or not doc:
        raise InputError("expected R1-SGG's gathered file: an object of image id -> prediction", path=path)
    refuse_foreign([k for k in doc if k not in gt_ids], path, "images the GT rows do not have")
    shift = 1 if dataset == "psg" else 0
    return {k: _entry(v, vocab, shift, dict(path=path, image_id=k)) for k, v in doc.items()}


def _entry(entry, vocab: Vocabulary, shift: int, where: dict) -> MappedAnswer:
    graph = entry.get("graph") if isinstance(entry, dict) else None
    if not isinstance(graph, dict):
        raise InputError("an entry must be an object with a 'graph'", **where)
    rows = _table(graph.get("all_relation"), vocab.num_predicates + 1, "graph.all_relation", where)
    if len(rows) and not rows.any():
        return _empty()  # the placeholder: a failure or an answer without a kept object
    boxes = _table(entry.get("boxes"), 4, "boxes", where)
    labels = _table(entry.get("labels"), None, "labels", where) + shift
    pairs = _table(graph.get("all_node_pairs"), 2, "graph.all_node_pairs", where)
    if (labels % 1).any() or (pairs % 1).any():
        raise InputError("labels and node pairs must be integers", field="labels", **where)
    if len(labels) != len(boxes) or ((labels < 1) | (labels > vocab.num_objects)).any():
        raise InputError("labels must give each box a class of the dataset", field="labels", **where)
    if (boxes[:, 2:] < boxes[:, :2]).any():
        raise InputError("a box has x2 < x1 or y2 < y1", field="boxes", **where)
    if len(pairs) != len(rows) or ((pairs < 0) | (pairs >= len(boxes))).any():
        raise InputError("node pairs must name boxes, one per relation row", field="graph.all_node_pairs", **where)
    one_hot = (rows[:, 1:].sum(axis=1) == 1) & (rows[:, 0] == 0) & ((rows == 0) | (rows == 1)).all(axis=1)
    if not one_hot.all():
        raise InputError("each relation row must be one-hot over the predicates", field="graph.all_relation", **where)
    predicates = rows.argmax(axis=1).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
    pairs = pairs.astype(np.int64)
    return MappedAnswer(labels.astype(np.int64), boxes, pairs[:, 0], pairs[:, 1], predicates)


def _table(value, width: int | None, field: str, where: dict) -> np.ndarray:
    """A list of numbers (``width`` None) or of lists of ``width`` numbers, as float64; refused otherwise."""
    ok = isinstance(value, list) and all(
        _number(v) if width is None else isinstance(v, list) and len(v) == width and all(_number(x) for x in v)
        for v in value
    )
    if not ok:
        shape = "numbers" if width is None else f"lists of {width} numbers"
        raise InputError(f"must be a list of {shape}", field=field, **where)
    return np.array(value, dtype=np.float64).reshape(-1, width) if width else np.array(value, dtype=np.float64)


def _number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def _empty() -> MappedAnswer:
    none = np.zeros(0, np.int64)
    return MappedAnswer(none, np.zeros((0, 4)), none, none, none)
