"""Never a stale number: every DVC stage depends on all the code it runs (its script's import closure,
lazy imports included) and on the package data that code reads. `python scripts/dvc_deps.py` fixes dvc.yaml."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("dvc_deps", ROOT / "scripts" / "dvc_deps.py")
dvc_deps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dvc_deps)


def test_every_stage_depends_on_the_code_it_runs():
    diff = dvc_deps.differences((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
    assert not diff, f"run `python scripts/dvc_deps.py` to update dvc.yaml: {diff}"


def test_closure_follows_lazy_imports_and_package_data():
    evaluate = dvc_deps.closure("stages/evaluate.py")
    assert "stages/evaluate.py" in evaluate and "src/sgg_eval/metrics/engine.py" in evaluate
    assert "src/sgg_eval/data/resources/zeroshot_triplet.pytorch" in evaluate  # read via importlib.resources
    tables = dvc_deps.closure("stages/tables.py")
    assert "src/sgg_eval/data/resources/published/li2022_tables.csv" in tables


def test_the_check_fails_when_a_dependency_is_dropped():
    text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    broken = text.replace("      - src/sgg_eval/metrics/engine.py\n", "", 1)
    assert broken != text
    diff = dvc_deps.differences(broken)
    assert any("src/sgg_eval/metrics/engine.py" in missing for missing, _ in diff.values())
    assert not dvc_deps.differences(dvc_deps.rewrite(broken))
