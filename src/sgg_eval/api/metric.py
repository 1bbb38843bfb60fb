"""``sgg_eval.SceneGraphMetric``: :class:`~sgg_eval.api.evaluator.Evaluator` as a ``torchmetrics.Metric``, so a
Lightning module logs R@K, mR@K and IMR@K like any other metric (the optional extra ``sgg-eval[torchmetrics]``).

``update(gt, pred)`` is ``Evaluator.add``; ``compute()`` returns the chosen metrics as float64 tensors (a
metric the run leaves undefined, such as zR@K without training statistics, is left out); ``reset()`` starts
over. Under ``torch.distributed`` every rank's evaluator is gathered (``all_gather_object``: the job's own
processes, never a file) and merged in rank order (``Evaluator.merge``), so every rank computes the same
numbers over all images. torchmetrics' own state syncing is off: the evaluator is the state.
"""

from __future__ import annotations

import copy

import torch
import torchmetrics

from sgg_eval.api.evaluator import Evaluator
from sgg_eval.core.defaults import IMR_KS, RECALL_KS
from sgg_eval.metrics.names import metric_name

# what compute() returns unless told: the headline recalls and the paper's IMR (Li et al. 2022)
DEFAULT_KEYS = (
    *(metric_name(f, k) for f in ("R", "mR") for k in RECALL_KS),
    *(metric_name("IMR", k) for k in IMR_KS),
)


class SceneGraphMetric(torchmetrics.Metric):
    """``SceneGraphMetric(task, keys=DEFAULT_KEYS, **options)``: ``options`` are ``Evaluator``'s (``stats``,
    ``protocol``, ``tau``, ...); ``keys`` the metrics ``compute`` returns (any key of the command's JSON
    ``metrics``)."""

    full_state_update = False
    is_differentiable = False
    higher_is_better = True

    def __init__(self, task: str, *, keys: tuple[str, ...] = DEFAULT_KEYS, **options):
        super().__init__(sync_on_compute=False)
        self.evaluator = Evaluator(task, **options)
        self.keys = tuple(keys)

    def update(self, gt, pred) -> None:
        self.evaluator.add(gt, pred)

    def compute(self) -> dict[str, torch.Tensor]:
        metrics = self.gathered().compute()
        unknown = [k for k in self.keys if k not in metrics]
        if unknown:
            raise KeyError(f"{unknown[0]!r} is not a metric of this run (keys of the command's JSON 'metrics')")
        return {k: torch.tensor(metrics[k], dtype=torch.float64) for k in self.keys if metrics[k] is not None}

    def reset(self) -> None:
        super().reset()
        self.evaluator.reset()

    def gathered(self) -> Evaluator:
        """This rank's evaluator, or under ``torch.distributed`` every rank's merged in rank order."""
        dist = torch.distributed
        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size(self.process_group) < 2:
            return self.evaluator
        ranks = [None] * dist.get_world_size(self.process_group)
        dist.all_gather_object(ranks, self.evaluator, group=self.process_group)
        merged = copy.deepcopy(ranks[0])
        for other in ranks[1:]:
            merged.merge(other)
        return merged
