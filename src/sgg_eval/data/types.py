"""The data model (docs/definitions.md §1): one ground-truth image, one prediction image, and the metadata of a split.

Conventions shared by every module:
- object classes are ``1..C_obj`` and predicates ``1..C_pred``; ``0`` is background everywhere;
- boxes are ``x1, y1, x2, y2`` in image pixels, float32;
- relations are ``(subject index, object index, predicate)`` with indices local to the image.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.core.tasks import TASKS
from sgg_eval.data.image_ids import check_image_id

SCORE_KINDS = ("probabilities", "logits")


@dataclass(frozen=True)
class Vocabulary:
    """Names of the object classes and predicates, in id order starting at id 1."""

    object_classes: tuple[str, ...]
    predicate_classes: tuple[str, ...]

    @property
    def num_objects(self) -> int:
        return len(self.object_classes)

    @property
    def num_predicates(self) -> int:
        return len(self.predicate_classes)


@dataclass
class GTImage:
    """Ground truth of one image.

    boxes ``[N, 4]`` float32 xyxy pixels; labels ``[N]`` int64 in ``1..C_obj``;
    rels ``[M, 3]`` int64 rows ``(subject index, object index, predicate)``. Duplicate rows are kept.
    Arrays are converted to these dtypes but never reshaped (a transposed or truncated array must fail
    :meth:`validate`, not be silently reinterpreted); empty arrays take their canonical shape.
    """

    image_id: int | str
    width: int
    height: int
    boxes: np.ndarray
    labels: np.ndarray
    rels: np.ndarray

    def __post_init__(self) -> None:
        self.boxes = _float_array(self.boxes, (4,))
        self.labels = _int_array(self.labels, ())
        self.rels = _int_array(self.rels, (3,))

    def validate(self, vocab: Vocabulary, source: str, position: int | None = None) -> None:
        """Raise :class:`InputError` naming ``source``, the image (id, position) and the field on any
        inconsistency: shapes, integer dtypes, finite boxes with ``x2 >= x1``, label, index and predicate ranges."""
        where = dict(path=source, image_id=self.image_id, position=position)
        check_image_id(self.image_id, where)
        check_xyxy(self.boxes, "boxes", where)
        _check_ints(self.labels, (len(self.boxes),), "labels", where)
        _check_range(self.labels, 1, vocab.num_objects, "labels", where)
        _check_ints(self.rels, (None, 3), "rels", where)
        if len(self.rels):
            _check_range(self.rels[:, :2], 0, len(self.labels) - 1, "rels (object index)", where)
            _check_range(self.rels[:, 2], 1, vocab.num_predicates, "rels (predicate)", where)

    def clipped(self, edge: int = 1) -> GTImage:
        """This image with its boxes clipped to the image (:func:`clip_to_image`)."""
        return GTImage(
            self.image_id, self.width, self.height, clip_to_image(self.boxes, self.width, self.height, edge),
            self.labels, self.rels,
        )  # fmt: skip


def clip_to_image(boxes: np.ndarray, width: int, height: int, edge: int = 1) -> np.ndarray:
    """A copy of xyxy ``boxes`` clipped to ``[0, W - edge] x [0, H - edge]``: ``edge`` 1 as Scene-Graph-Benchmark's
    loader clips GT, 0 as SGG-Benchmark's ``box_clip`` does (``core.protocols.Protocol.gt_clip_edge``)."""
    out = np.array(boxes, dtype=np.float32, copy=True)
    np.clip(out[:, 0::2], 0, width - edge, out=out[:, 0::2])
    np.clip(out[:, 1::2], 0, height - edge, out=out[:, 1::2])
    return out


@dataclass
class PredImage:
    """A model's output for one image (docs/definitions.md §1).

    boxes ``[Q, 4]``, labels ``[Q]``, obj_scores ``[Q]``; pairs ``[P, 2]`` (subject, object) indices into
    this prediction's objects; rel_scores ``[P, C_pred + 1]`` with column 0 = background, either softmax
    probabilities or raw logits as declared by the store's ``score_kind``. Converted, never reshaped.
    """

    image_id: int | str
    boxes: np.ndarray
    labels: np.ndarray
    obj_scores: np.ndarray
    pairs: np.ndarray
    rel_scores: np.ndarray
    # rel_scores' row maxima over predicates 1.., when a reader computed them in the pass that validated the
    # scores (``keep_row_maxima``), held with the array they belong to; see :meth:`row_maxima`.
    _row_maxima: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.boxes = _float_array(self.boxes, (4,))
        self.labels = _int_array(self.labels, ())
        self.obj_scores = _float_array(self.obj_scores, (), "f")
        self.pairs = _int_array(self.pairs, (2,))
        rel = np.asarray(self.rel_scores)
        if rel.size == 0 and rel.ndim != 2:
            rel = np.zeros((0, 0), dtype=np.float32)
        self.rel_scores = rel  # an integer or bool dtype is refused by validate(): scores are floats

    def validate(
        self, vocab: Vocabulary, source: str, position: int | None = None, *, probabilities: bool = False
    ) -> None:
        """Raise :class:`InputError` naming ``source``, the image (id, position) and the field on any
        inconsistency: shapes, dtypes, finite boxes and scores, object scores >= 0, label and pair-index ranges; with
        ``probabilities``, relation scores within [0, 1] (logits saved as probabilities would rank wrongly)."""
        where = dict(path=source, image_id=self.image_id, position=position)
        check_image_id(self.image_id, where)
        q = len(self.boxes)
        check_xyxy(self.boxes, "boxes", where)
        _check_ints(self.labels, (q,), "labels", where)
        _check_range(self.labels, 1, vocab.num_objects, "labels", where)
        _check_floats(self.obj_scores, (q,), "obj_scores", where)
        if q and float(self.obj_scores.min()) < 0.0:
            raise InputError(
                f"value {float(self.obj_scores.min()):.4g}: {NEGATIVE_OBJECT_SCORE}", field="obj_scores", **where
            )
        _check_ints(self.pairs, (None, 2), "pairs", where)
        if self.rel_scores.ndim != 2 or len(self.rel_scores) != len(self.pairs):
            raise InputError(
                f"{len(self.rel_scores) if self.rel_scores.ndim else 0} score rows for {len(self.pairs)} "
                "pairs: one row per pair",
                field="rel_scores",
                **where,
            )
        if len(self.pairs):
            _check_range(self.pairs, 0, q - 1, "pairs", where)
            _check_floats(
                self.rel_scores,
                (len(self.pairs), vocab.num_predicates + 1),
                "rel_scores",
                where,
                within=(0.0, 1.0 + PROBABILITY_SLACK) if probabilities else None,
            )

    def keep_row_maxima(self, maxima: np.ndarray) -> None:
        """Keep ``rel_scores[:, 1:].max(axis=1)`` (float32), computed by a reader in the pass that validated the
        scores: ranking needs them, and an SGDet image's ~1.3 MB of scores then need not be read again for
        them (issue 11)."""
        self._row_maxima = (self.rel_scores, maxima)

    def row_maxima(self) -> np.ndarray | None:
        """The kept row maxima, if they were kept for these very scores: a copy of the image with other scores
        (``dataclasses.replace``, as PKO makes) or scores assigned since never uses them; else None."""
        kept = self._row_maxima
        return kept[1] if kept is not None and kept[0] is self.rel_scores else None


def check_predcls_pairs(gt: GTImage, pred: PredImage, source: str) -> None:
    """PredCls pairs index the GT objects (the task gives the model the GT boxes and labels): a pair index past
    them means an SGDet or SGCls output given as PredCls."""
    if len(pred.pairs) and pred.pairs.max() >= len(gt.labels):
        raise InputError(
            f"pair index {pred.pairs.max()} but the GT has {len(gt.labels)} objects: PredCls "
            "pairs index the GT objects, so this looks like an SGDet output (detected boxes) "
            "given as PredCls; check --task",
            path=source,
            image_id=gt.image_id,
            field="pairs",
        )


_INT64, _FLOAT32 = np.dtype(np.int64), np.dtype(np.float32)


def _int_array(x, tail: tuple[int, ...]) -> np.ndarray:
    """int64 when the values have an integer dtype; anything else (bool, float, object) is kept as it is for
    validate() to refuse: a bool index array would select, not index, and a float label is not a label."""
    if type(x) is np.ndarray and x.dtype == _INT64 and x.size:  # already canonical (a reader's view): as is
        return x
    a = np.asarray(x)
    if a.size == 0 and a.dtype.kind in "iuf":
        return np.zeros((0, *tail), dtype=np.int64)
    if a.dtype.kind in "iu":
        return a.astype(np.int64, copy=False)
    return a


def _float_array(x, tail: tuple[int, ...], kinds: str = "fiu") -> np.ndarray:
    """float32 when the dtype is of ``kinds`` (boxes: floats or integer pixels; scores: floats only); anything
    else (bool, object, integer scores) is kept as it is for validate() to refuse."""
    if type(x) is np.ndarray and x.dtype == _FLOAT32 and x.size:  # already canonical: as is
        return x
    a = np.asarray(x)
    if a.size == 0 and a.dtype.kind in "iuf":
        return np.zeros((0, *tail), dtype=np.float32)
    return a.astype(np.float32, copy=False) if a.dtype.kind in kinds else a


def _check_shape(a: np.ndarray, shape: tuple, name: str, where: dict) -> None:
    """``shape`` entries of ``None`` match any length."""
    if a.ndim != len(shape) or any(want is not None and got != want for got, want in zip(a.shape, shape)):
        expected = "[" + ", ".join("n" if d is None else str(d) for d in shape) + "]"
        raise InputError(f"shape {list(a.shape)}, expected {expected}", field=name, **where)


def _check_ints(a: np.ndarray, shape: tuple, name: str, where: dict) -> None:
    if a.dtype.kind not in "iu":
        raise InputError(f"values must be integers, got dtype {a.dtype}", field=name, **where)
    _check_shape(a, shape, name, where)


def _check_floats(
    a: np.ndarray, shape: tuple, name: str, where: dict, within: tuple[float, float] | None = None
) -> None:
    """Numbers of ``shape``, all finite (and within ``within``, inclusive, when given). One pass for the
    minimum and one for the maximum (both propagate NaN): an SGDet image holds ~300,000 scores."""
    if a.dtype.kind != "f":
        raise InputError(f"values must be numbers, got dtype {a.dtype}", field=name, **where)
    _check_shape(a, shape, name, where)
    if a.size == 0:
        return
    lo, hi = float(a.min()), float(a.max())
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise InputError(f"non-finite value ({a[~np.isfinite(a)].flat[0]})", field=name, **where)
    if within is not None and not (within[0] <= lo and hi <= within[1]):
        # compared as float64, as lo and hi were: numpy would round the bound to a float32 array's dtype
        # (1 + slack up to 1.00100005), and find no value outside it
        wide = a.astype(np.float64)
        bad = (wide < within[0]) | (wide > within[1])
        raise InputError(
            f"value {a[bad].flat[0]:.4g} is not a probability in [0, 1] (logits saved as probabilities?)",
            field=name,
            **where,
        )


PROBABILITY_SLACK = 1e-3  # float16 rounding of a softmax can exceed 1 by a few ulps
# Object scores are confidences: a triplet's score multiplies its subject's and object's, so a negative one would
# turn the ranking around (and the NG top's pruning relies on products that grow with p_c).
NEGATIVE_OBJECT_SCORE = (
    "a negative object score: triplet scores multiply the subject's and object's scores, "
    "which must be >= 0 (logits saved as scores?)"
)


def check_xyxy(boxes: np.ndarray, name: str, where: dict) -> None:
    """Boxes ``[n, 4]`` of floats, finite, with ``x1 <= x2`` and ``y1 <= y2`` (every reader's box rule)."""
    _check_floats(boxes, (None, 4), name, where)
    bad = (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"box {i} = {boxes[i].tolist()} has x2 < x1 or y2 < y1 (expected x1, y1, x2, y2)", field=name, **where
        )


@dataclass(frozen=True)
class SplitMeta:
    """What a split store says about itself. ``simulated`` is True for every artefact of the simulator."""

    split: str
    vocab: Vocabulary
    dataset: str
    simulated: bool
    source: str
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PredictionMeta:
    """What a prediction store says about itself (task, score kind, provenance)."""

    task: str
    score_kind: str
    vocab: Vocabulary
    model: str
    simulated: bool
    source: str
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise InputError(f"task must be one of {TASKS}, got {self.task!r}", field="task")
        if self.score_kind not in SCORE_KINDS:
            raise InputError(f"score_kind must be one of {SCORE_KINDS}, got {self.score_kind!r}", field="score_kind")


def _check_range(values: np.ndarray, lo: int, hi: int, name: str, where: dict) -> None:
    if values.size == 0:
        return
    bad = (values < lo) | (values > hi)
    if bad.any():
        value = values[bad].flat[0]
        raise InputError(f"value {value} outside [{lo}, {hi}]", field=name, **where)


def triplet_key(subject_class, object_class, predicate, num_objects: int, num_predicates: int):
    """Flat index of ``(subject class, object class, predicate)`` into an array of shape
    ``[C_obj + 1, C_obj + 1, C_pred + 1]`` (the training counts ``A[s, o, p]``): the one triplet encoding."""
    return (subject_class * (num_objects + 1) + object_class) * (num_predicates + 1) + predicate
