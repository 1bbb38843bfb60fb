"""Content checks of a batch of store images, vectorised over the batch's blocks (one numpy call per rule
for thousands of images, instead of a dozen per image).

Same rules as :meth:`GTImage.validate` / :meth:`PredImage.validate`: dtypes and row shapes, finite boxes with
``x2 >= x1`` and ``y2 >= y1``, finite scores (object scores >= 0), labels in ``1..C_obj``, predicates in
``1..C``, and object indices within their own image. A failure names the file, the first offending image
(id and position) and the field.
"""

from __future__ import annotations

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.image_ids import image_id_value
from sgg_eval.data.types import NEGATIVE_OBJECT_SCORE, PROBABILITY_SLACK, Vocabulary

# column -> (dtype kinds, row shape); the same for every store written by sgg-eval or by hand
_COLUMNS = {
    "boxes": ("fiu", (4,)),
    "labels": ("iu", ()),
    "obj_scores": ("f", ()),
    "rels": ("iu", (3,)),
    "pairs": ("iu", (2,)),
    "rel_scores": ("f", None),
}


def check_columns(datasets: dict, vocab: Vocabulary, path: str) -> None:
    """Dtypes and row shapes of the store's datasets, checked once when the store is opened."""
    for name, ds in datasets.items():
        kinds, row = _COLUMNS[name]
        row = (vocab.num_predicates + 1,) if row is None else row
        if ds.dtype.kind not in kinds or ds.ndim != 1 + len(row) or tuple(ds.shape[1:]) != row:
            raise InputError(
                f"dtype {ds.dtype} rows {list(ds.shape[1:])}, expected rows {list(row)} of "
                f"{'integers' if kinds == 'iu' else 'numbers'}",
                path=path,
                field=name,
            )


def check_batch(
    blocks: dict[str, np.ndarray],
    offsets: dict[str, np.ndarray],
    image_ids: np.ndarray,
    start: int,
    vocab: Vocabulary,
    path: str,
    *,
    probabilities: bool = False,
) -> None:
    """Raise :class:`InputError` for the first bad row of the batch (images ``start ..``); with
    ``probabilities``, relation scores must lie in [0, 1]."""
    objects = offsets["objects"]

    def fail(bad: np.ndarray, seg: str, field: str, message: str) -> None:
        row = int(np.flatnonzero(bad)[0])
        k = int(np.searchsorted(offsets[seg], row, side="right") - 1)
        raise InputError(message, path=path, image_id=image_id_value(image_ids[k]), position=start + k, field=field)

    boxes = blocks["boxes"]
    bad = ~np.isfinite(boxes).all(axis=1)
    if bad.any():
        fail(bad, "objects", "boxes", "non-finite box coordinate")
    bad = (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1])
    if bad.any():
        fail(bad, "objects", "boxes", "a box has x2 < x1 or y2 < y1 (expected x1, y1, x2, y2)")
    labels = blocks["labels"]
    bad = (labels < 1) | (labels > vocab.num_objects)
    if bad.any():
        fail(bad, "objects", "labels", f"value {labels[bad][0]} outside [1, {vocab.num_objects}]")
    if "obj_scores" in blocks and not np.isfinite(blocks["obj_scores"]).all():
        fail(~np.isfinite(blocks["obj_scores"]), "objects", "obj_scores", "non-finite value")
    if "obj_scores" in blocks and (blocks["obj_scores"] < 0).any():
        fail(blocks["obj_scores"] < 0, "objects", "obj_scores", NEGATIVE_OBJECT_SCORE)
    seg, col = ("relations", "rels") if "rels" in blocks else ("pairs", "pairs")
    rows = blocks[col]
    n_objects = np.repeat(np.diff(objects), np.diff(offsets[seg]))  # objects of each row's own image
    bad = (rows[:, :2] < 0).any(axis=1) | (rows[:, :2] >= n_objects[:, None]).any(axis=1)
    if bad.any():
        fail(bad, seg, f"{col} (object index)", "object index outside the image's objects")
    if col == "rels":
        bad = (rows[:, 2] < 1) | (rows[:, 2] > vocab.num_predicates)
        if bad.any():
            fail(bad, seg, "rels (predicate)", f"value {rows[bad][0, 2]} outside [1, {vocab.num_predicates}]")
    else:
        scores = blocks["rel_scores"]
        bad = ~np.isfinite(scores).all(axis=1)
        if bad.any():
            fail(bad, seg, "rel_scores", "non-finite score")
        if probabilities:
            bad = ((scores < 0) | (scores > 1 + PROBABILITY_SLACK)).any(axis=1)
            if bad.any():
                fail(bad, seg, "rel_scores", "a score is not a probability in [0, 1] (logits saved as probabilities?)")
