"""Every metric name comes from `metrics/names.py` (issue 28), and the names the metrics JSON has always had
stay exactly as they were: users' scripts read them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from psg_fixture import write_psg_fixture
from test_metrics_reference import VOCAB, _cases

from sgg_eval.metrics.engine import evaluate
from sgg_eval.metrics.names import box_metric_names, metric_name, mlflow_key
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.panoptic.evaluate import run_psg_evaluation

ROOT = Path(__file__).resolve().parents[1]
# The keys of a box evaluation's "metrics" before names.py existed, as the pipeline's saved results held them
# (data/vg150_sim/results/metrics/*/sgdet.json of 2026-11-26): sgg-eval's JSON since its first release.
RELEASED = """A@100 A@20 A@50 F1@100 F1@20 F1@50 IMR@10 IMR@20 IMR@50 InstR PR@100 PR@20 PR@50 PRk R@100 R@10x R@1x
R@20 R@2x R@50 R_tr@10 R_tr@15 R_tr@20 R_tr@5 R_tr@50 det_mAP det_mAP@50 mR@100 mR@10x mR@1x mR@20 mR@2x mR@50
ng-F1@100 ng-F1@20 ng-F1@50 ng-IMR@10 ng-IMR@20 ng-IMR@50 ng-mR@100 ng-mR@20 ng-mR@50 ng-wIMR@10 ng-wIMR@20
ng-wIMR@50 ng-zR@100 ng-zR@20 ng-zR@50 ngR@100 ngR@20 ngR@50 wIMR@10 wIMR@20 wIMR@50 wR_tr@10 wR_tr@15 wR_tr@20
wR_tr@5 wR_tr@50 zR@100 zR@20 zR@50""".split()
NAME_LITERAL = re.compile(r"""["'](ng-?)?[A-Za-z_]+@(\d+x?|inf)["']""")


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
def test_every_key_of_the_json_is_generated_and_none_is_renamed(task):
    doc = evaluate(iter(_cases(task, seed=1)), VOCAB, EvalOptions(task=task))
    assert set(doc["metrics"]) == set(box_metric_names()) == set(RELEASED)
    assert len(box_metric_names()) == len(RELEASED)


def test_the_scheme():
    assert [metric_name("R", 50), metric_name("R", 50, ng=True), metric_name("mR", 50, ng=True)] == [
        "R@50",
        "ngR@50",
        "ng-mR@50",
    ]
    assert metric_name("R", 2, relative=True) == "R@2x" and metric_name("mR", "inf") == "mR@inf"
    assert mlflow_key("predcls", "ng-mR@20") == "predcls/ng-mR_at_20"
    with pytest.raises(ValueError, match="no NG variant"):
        metric_name("A", 50, ng=True)


def test_panoptic_names_follow_the_scheme(tmp_path):
    files = write_psg_fixture(tmp_path)
    doc = run_psg_evaluation(files["json"], files["psg"], boxes=True)
    generated = set(box_metric_names()) | {metric_name("R", "inf"), metric_name("mR", "inf")}
    assert set(doc["metrics"]) <= generated, set(doc["metrics"]) - generated


def test_no_source_file_but_names_writes_a_metric_name():
    found = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in sorted((ROOT / "src" / "sgg_eval").rglob("*.py"))
        if path.name != "names.py"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if NAME_LITERAL.search(line)
    ]
    assert not found, found
    assert NAME_LITERAL.search('x = "ng-mR@50"') and NAME_LITERAL.search("'R@2x'")
    assert not NAME_LITERAL.search('metric_name("R", 50)')
