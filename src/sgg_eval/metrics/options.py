"""The options of one evaluation, checked once where they are made. Every entry point (the CLI, the pipeline's
stages, the Python API) builds this one object; the engine, the ranking and the matcher only read it.
Its own module so the ranking (``candidates``, ``blocks``) can read it without importing the engine."""

from __future__ import annotations

from dataclasses import dataclass

from sgg_eval.defaults import IOU_THRESHOLD, PROTOCOL, PROTOCOLS, TAU
from sgg_eval.tasks import Task, task_spec

ORDERS = ("stored", "score")


@dataclass(frozen=True)
class EvalOptions:
    """``order='stored'`` evaluates relations in file order (reference files, SGBench JSON); ``'score'``
    ranks pairs by the GC triplet score, stable. ``score_kind='ranked'`` means the file has no usable
    scores (one-hot rows in ranked order): score-based families are then reported as null."""

    task: str
    protocol: str = PROTOCOL
    order: str = "score"
    score_kind: str = "probabilities"
    tau: float = TAU
    ng_limit: int = 100
    iou_threshold: float = IOU_THRESHOLD

    @property
    def task_spec(self) -> Task:
        """What the task's predictions are given (``sgg_eval.tasks``)."""
        return task_spec(self.task)

    def __post_init__(self) -> None:
        task_spec(self.task)  # an unknown task is refused here, where the options are made
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}")
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}")
        if not 0.0 <= self.tau <= 1.0:
            raise ValueError("tau must lie in [0, 1]")
        if not 0.0 < self.iou_threshold <= 1.0:
            raise ValueError("iou_threshold must lie in (0, 1]")
