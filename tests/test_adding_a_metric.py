"""CONTRIBUTING.md's "a metric", done once: one registered reduction appears in the metrics JSON, in MLflow's
metrics and in the full-metrics table, with no other file edited (issue 28)."""

from __future__ import annotations

import pytest
from test_metrics_reference import VOCAB, _cases

from sgg_eval.metrics import reductions
from sgg_eval.metrics.engine import evaluate
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.pipeline.tracking import metrics_of
from sgg_eval.report.tables import paper_tables


@pytest.fixture
def early_share(monkeypatch):
    """The example of CONTRIBUTING.md: the share of R@100's hits already found at K = 20."""
    monkeypatch.setattr(reductions, "REDUCTIONS", {})

    @reductions.reduction
    def early_share(acc, vocab, opts):
        hits = acc.recall["gc"]
        at_100 = hits[acc.k_index(100)]
        return {"early@20": hits[acc.k_index(20)] / at_100 if at_100 else None}

    return early_share


def test_a_registered_reduction_reaches_the_json_mlflow_and_the_full_table(early_share):
    doc = evaluate(iter(_cases("predcls", seed=3)), VOCAB, EvalOptions(task="predcls"))
    assert doc["metrics"]["early@20"] == pytest.approx(doc["metrics"]["R@20"] / doc["metrics"]["R@100"])
    assert metrics_of("predcls", doc)["predcls/early_at_20"] == doc["metrics"]["early@20"]
    doc["entry"] = {"backbone": "B", "method": "M", "simulated": True}
    tables = paper_tables({("m", "predcls"): doc}, ["m"], blind=None, simulated=True, tau=0.5, task_labels={})
    full = next(t for t in tables if t.name == "full_metrics")
    assert "early@20" in full.columns and full.rows[0].values["early@20"] == doc["metrics"]["early@20"]


def test_a_reduction_cannot_overwrite_a_metric(monkeypatch):
    monkeypatch.setattr(reductions, "REDUCTIONS", {})
    reductions.reduction(lambda acc, vocab, opts: {"R@50": 1.0})
    with pytest.raises(ValueError, match="already a metric"):
        evaluate(iter(_cases("predcls", seed=3)), VOCAB, EvalOptions(task="predcls"))
