"""The data model (SPEC §1): one ground-truth image, one prediction image, and the metadata of a split.

Conventions shared by every module:
- object classes are ``1..C_obj`` and predicates ``1..C_pred``; ``0`` is background everywhere;
- boxes are ``x1, y1, x2, y2`` in image pixels, float32;
- relations are ``(subject index, object index, predicate)`` with indices local to the image.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sgg_eval.errors import InputError

TASKS = ("predcls", "sgcls", "sgdet")
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
    """

    image_id: int
    width: int
    height: int
    boxes: np.ndarray
    labels: np.ndarray
    rels: np.ndarray

    def __post_init__(self) -> None:
        self.boxes = np.asarray(self.boxes, dtype=np.float32).reshape(-1, 4)
        self.labels = np.asarray(self.labels, dtype=np.int64).reshape(-1)
        self.rels = np.asarray(self.rels, dtype=np.int64).reshape(-1, 3)

    def validate(self, vocab: Vocabulary, source: str) -> None:
        """Raise :class:`InputError` naming ``source``, the image and the field on any inconsistency."""
        where = dict(path=source, image_id=self.image_id)
        if len(self.labels) != len(self.boxes):
            raise InputError(f"{len(self.labels)} labels for {len(self.boxes)} boxes", field="labels", **where)
        _check_range(self.labels, 1, vocab.num_objects, "labels", where)
        if not np.all(np.isfinite(self.boxes)):
            raise InputError("non-finite box coordinate", field="boxes", **where)
        if len(self.rels):
            _check_range(self.rels[:, :2], 0, len(self.labels) - 1, "rels (object index)", where)
            _check_range(self.rels[:, 2], 1, vocab.num_predicates, "rels (predicate)", where)


@dataclass
class PredImage:
    """A model's output for one image (SPEC §1).

    boxes ``[Q, 4]``, labels ``[Q]``, obj_scores ``[Q]``; pairs ``[P, 2]`` (subject, object) indices into
    this prediction's objects; rel_scores ``[P, C_pred + 1]`` with column 0 = background, either softmax
    probabilities or raw logits as declared by the store's ``score_kind``.
    """

    image_id: int
    boxes: np.ndarray
    labels: np.ndarray
    obj_scores: np.ndarray
    pairs: np.ndarray
    rel_scores: np.ndarray

    def __post_init__(self) -> None:
        self.boxes = np.asarray(self.boxes, dtype=np.float32).reshape(-1, 4)
        self.labels = np.asarray(self.labels, dtype=np.int64).reshape(-1)
        self.obj_scores = np.asarray(self.obj_scores, dtype=np.float32).reshape(-1)
        self.pairs = np.asarray(self.pairs, dtype=np.int64).reshape(-1, 2)
        rel = np.asarray(self.rel_scores)
        if rel.dtype not in (np.float16, np.float32, np.float64):
            rel = rel.astype(np.float32)
        self.rel_scores = rel if rel.ndim == 2 else rel.reshape(len(self.pairs), -1)

    def validate(self, vocab: Vocabulary, source: str) -> None:
        """Raise :class:`InputError` naming ``source``, the image and the field on any inconsistency."""
        where = dict(path=source, image_id=self.image_id)
        q = len(self.boxes)
        for name in ("labels", "obj_scores"):
            if len(getattr(self, name)) != q:
                raise InputError(f"{len(getattr(self, name))} entries for {q} boxes", field=name, **where)
        _check_range(self.labels, 1, vocab.num_objects, "labels", where)
        if len(self.pairs):
            _check_range(self.pairs, 0, q - 1, "pairs", where)
            if self.rel_scores.shape != (len(self.pairs), vocab.num_predicates + 1):
                raise InputError(
                    f"shape {self.rel_scores.shape}, expected ({len(self.pairs)}, {vocab.num_predicates + 1})",
                    field="rel_scores",
                    **where,
                )
            if not np.all(np.isfinite(self.rel_scores)):
                raise InputError("non-finite score", field="rel_scores", **where)


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
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.score_kind not in SCORE_KINDS:
            raise ValueError(f"score_kind must be one of {SCORE_KINDS}, got {self.score_kind!r}")


def _check_range(values: np.ndarray, lo: int, hi: int, name: str, where: dict) -> None:
    if values.size == 0:
        return
    bad = (values < lo) | (values > hi)
    if bad.any():
        value = values[bad].flat[0]
        raise InputError(f"value {value} outside [{lo}, {hi}]", field=name, **where)
