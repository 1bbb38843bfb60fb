"""CONTRIBUTING.md's "a metric", done once: one registered reduction appears, with no other file edited, in
- a box evaluation: the metrics JSON, MLflow's metrics and the full-metrics table;
- a panoptic evaluation, under every protocol: the document's ``beyond_protocol`` section (no protocol's source
  reports it), MLflow's metrics and the panoptic full-metrics table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from psg_fixture import write_psg_fixture
from test_metrics_reference import VOCAB, _cases

from sgg_eval.metrics import reductions
from sgg_eval.metrics.document import BEYOND, every_metric
from sgg_eval.metrics.engine import evaluate
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.panoptic.evaluate import evaluate_protocols
from sgg_eval.panoptic.reduce import PROTOCOL_METRICS
from sgg_eval.pipeline.tracking import metrics_of
from sgg_eval.report.psg_tables import psg_tables
from sgg_eval.report.tables import paper_tables

ROOT = Path(__file__).resolve().parents[1]


def _recipe() -> str:
    """The code block of CONTRIBUTING.md's "a metric", exactly as a contributor reads it."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text[text.index("### a metric") :]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


@pytest.fixture
def early_share(monkeypatch):
    """The example of CONTRIBUTING.md (the share of R@100's hits already found at K = 20), registered by running
    its code block as written, with ``reduction`` as ``metrics/reductions.py`` defines it."""
    monkeypatch.setattr(reductions, "REDUCTIONS", {})
    namespace = {"reduction": reductions.reduction}
    exec(_recipe(), namespace)
    assert list(reductions.REDUCTIONS) == ["early_share"]
    return namespace["early_share"]


def test_a_registered_reduction_reaches_the_json_mlflow_and_the_full_table(early_share):
    doc = evaluate(iter(_cases("predcls", seed=3)), VOCAB, EvalOptions(task="predcls"))
    assert doc["metrics"]["early@20"] == pytest.approx(doc["metrics"]["R@20"] / doc["metrics"]["R@100"])
    assert metrics_of("predcls", doc)["predcls/early_at_20"] == doc["metrics"]["early@20"]
    doc["entry"] = {"backbone": "B", "method": "M", "simulated": True}
    tables = paper_tables({("m", "predcls"): doc}, ["m"], blind=None, simulated=True, tau=0.5, task_labels={})
    full = next(t for t in tables if t.name == "full_metrics")
    assert "early@20" in full.columns and full.rows[0].values["early@20"] == doc["metrics"]["early@20"]


def test_the_same_reduction_reaches_every_panoptic_protocol(early_share, tmp_path):
    files = write_psg_fixture(tmp_path, seed=5, test=12, other=4)
    docs = evaluate_protocols(str(files["zip"]), str(files["psg"]), str(files["root"]), tuple(PROTOCOL_METRICS))
    for protocol, doc in docs.items():
        beyond = doc[BEYOND]["metrics"]
        assert "early@20" not in doc["metrics"], protocol  # no protocol's source reports it
        r20, r100 = (every_metric(doc)[f"R@{k}"] for k in (20, 100))
        assert beyond["early@20"] == pytest.approx(r20 / r100), protocol
        assert metrics_of("panoptic", {**doc, "metrics": every_metric(doc)})["panoptic/early_at_20"] == pytest.approx(
            beyond["early@20"]
        )
    result = {"entry": {"backbone": "B", "method": "M", "simulated": True}, "protocols": docs}
    tables = psg_tables({"m": result}, list(docs), "psg", simulated=True, tau=0.5)
    full = next(t for t in tables if t.name == "psg_full_metrics")
    assert any("early@20" in column for column in full.columns)


def test_a_reduction_cannot_overwrite_a_metric(monkeypatch):
    monkeypatch.setattr(reductions, "REDUCTIONS", {})
    reductions.reduction(lambda acc: {"R@50": 1.0})
    with pytest.raises(ValueError, match="already a metric"):
        evaluate(iter(_cases("predcls", seed=3)), VOCAB, EvalOptions(task="predcls"))
