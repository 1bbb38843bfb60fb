"""The options of one evaluation, and the one place their values are checked.

Every entry point builds the same :class:`EvalOptions` (the CLI and the Python API through
``evaluate.run_evaluation``, the pipeline's stages through ``pipeline.eval_stages``); the engine, the ranking and
the matcher only read it. The range of each number is :data:`RANGES`, checked by :func:`check_option`, which
the options, the CLI's argument types and the pipeline's ``conf/`` check all call, each naming its own field
(``tau``, ``--tau``, ``metrics.tau``). Its own module so the ranking (``candidates``, ``blocks``) can read the
options without importing the engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sgg_eval.core.defaults import IOU_THRESHOLD, PROTOCOL, PROTOCOLS, TAU
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import Protocol
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.core.tasks import Task, task_spec
from sgg_eval.metrics.informative import Informative
from sgg_eval.metrics.openvocab import OpenVocab

ORDERS = ("stored", "score")
# name: (low, high, low end open). tau: wIMR's exponent (docs/definitions.md §3, 0 gives IMR); iou_threshold:
# the IoU at which a predicted object matches a GT object (0 would match disjoint boxes).
RANGES = {"tau": (0.0, 1.0, False), "iou_threshold": (0.0, 1.0, True)}


def check_option(name: str, value, field: str | None = None) -> float:
    """``value`` as the number option ``name`` takes, or an :class:`InputError` naming ``field`` (default:
    ``name``): a finite number (not a bool) within ``RANGES[name]``."""
    lo, hi, lo_open = RANGES[name]
    field = field or name
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{value!r:.40} is not a finite number", field=field)
    if (value <= lo if lo_open else value < lo) or value > hi:
        raise InputError(f"{value:g} is outside {'(' if lo_open else '['}{lo:g}, {hi:g}]", field=field)
    return float(value)


@dataclass(frozen=True)
class EvalOptions:
    """``order='stored'`` evaluates relations in file order (reference files, SGBench JSON); ``'score'``
    ranks pairs by the GC triplet score, stable. ``score_kind='ranked'`` means the file has no usable
    scores (one-hot rows in ranked order): score-based families are then reported as null. An open-vocabulary
    protocol comes with its ``openvocab`` (setting and split, ``metrics.openvocab``); ``clip_gt`` clips GT boxes to
    the image (a split made with ``--no-clip``: every protocol but ovsgtr clips, as its loader does); ``longtail``
    gives each predicate's head/body/tail group (0, 1, 2; ``metrics.longtail``) for the groups' recall. A bad task,
    protocol, τ or IoU threshold is an :class:`InputError` naming the field."""

    task: str
    protocol: str = PROTOCOL
    order: str = "score"
    score_kind: str = "probabilities"
    tau: float = TAU
    ng_limit: int = 100
    iou_threshold: float = IOU_THRESHOLD
    openvocab: OpenVocab | None = None
    clip_gt: bool = False
    longtail: tuple[int, ...] | None = None  # head/body/tail group of every predicate (metrics.longtail)
    per_image: int = 0  # record each image's top-K predicted triplets (--per-image; 0: no records)
    per_image_ids: frozenset | None = None  # record only these images (None: every evaluated image)
    informative: Informative | None = None  # caption triplets for IR@K (--captions; metrics.informative)
    box_iou: str = ""  # the IoU objects match by, when not the protocol's (a key of metrics.iou.BOX_IOUS; the audit)

    @property
    def rules(self) -> Protocol:
        """The protocol's record (``sgg_eval.core.protocols``): what it collects, skips and counts."""
        return protocol_record(self.protocol)

    @property
    def iou(self) -> str:
        """The IoU objects match by (``metrics.iou.BOX_IOUS``): ``box_iou`` where the audit sets it, else the
        protocol's."""
        return self.box_iou or self.rules.box_iou

    @property
    def collectors(self) -> tuple[str, ...]:
        """What the ranking gathers beside the ranks (``metrics.ranking.totals.COLLECTORS``): the detector's boxes
        when the task detects, and what the protocol collects."""
        return (
            (("boxes",) if self.task_spec.detects else ())
            + self.rules.collects
            + (("informative",) if self.informative is not None else ())
        )

    @property
    def task_spec(self) -> Task:
        """What the task's predictions are given (``sgg_eval.core.tasks``)."""
        return task_spec(self.task)

    def __post_init__(self) -> None:
        try:
            task_spec(self.task)
        except ValueError as exc:
            raise InputError(str(exc), field="task") from None
        if self.protocol not in PROTOCOLS:
            raise InputError(f"{self.protocol!r} is not one of {', '.join(PROTOCOLS)}", field="protocol")
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}")  # set by the reader, never by a user
        for name in RANGES:
            check_option(name, getattr(self, name))
        if self.openvocab is not None and not self.openvocab.audit and self.openvocab.protocol != self.protocol:
            raise ValueError("an OpenVocab of another protocol")  # built by the entry points from the protocol
        if self.task not in self.rules.tasks:
            why = self.rules.tasks_why or f"{self.protocol} scores {', '.join(self.rules.tasks)} only"
            raise InputError(f"{why} (evaluate {self.task} with another protocol, e.g. reference)", field="protocol")
