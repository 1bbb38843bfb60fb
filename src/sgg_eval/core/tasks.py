"""The three SGG tasks, by what the predictions are given: every rule that depends on the task reads it here,
never a task's name (``tests/test_defaults.py`` fails on a task-name literal anywhere else).

A task's display label (PredCls, ...) is a setting of the pipeline's catalogue, ``conf/task/<name>.yaml``, so it
can be renamed without code.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    """``gt_boxes``: the model is given the GT boxes (no box matching; A@K and R_tr apply, InstR and the
    detector's mAP do not). ``gt_labels``: it is given the GT labels too, so only predicates are predicted."""

    name: str
    gt_boxes: bool
    gt_labels: bool

    @property
    def detects(self) -> bool:
        """The model finds the objects itself (SGDet): matched to the GT by IoU."""
        return not self.gt_boxes

    @property
    def predicts_labels(self) -> bool:
        """The model predicts the object labels (SGCls, SGDet)."""
        return not self.gt_labels

    @property
    def labels_on_gt_boxes(self) -> bool:
        """The model predicts labels for the GT boxes (SGCls): where GT labels could leak into its output."""
        return self.gt_boxes and not self.gt_labels


PREDCLS = Task("predcls", gt_boxes=True, gt_labels=True)
SGCLS = Task("sgcls", gt_boxes=True, gt_labels=False)
SGDET = Task("sgdet", gt_boxes=False, gt_labels=False)
BY_NAME = {t.name: t for t in (PREDCLS, SGCLS, SGDET)}
TASKS = tuple(BY_NAME)  # the names, in the papers' order


def task_spec(name: str) -> Task:
    """The task called ``name`` (one of :data:`TASKS`)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"task must be one of {TASKS}, got {name!r}") from None
