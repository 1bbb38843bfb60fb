"""Never a stale number: every DVC stage depends on all the code it runs (its script's import closure,
lazy imports included) and on the package data that code reads, through the folders `src/sgg_eval` and
`stages` or the files themselves. `python scripts/dvc_deps.py` lists what is missing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from sgg_eval.pipeline.paths import PIPELINE_FILES

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("dvc_deps", ROOT / "scripts" / "dvc_deps.py")
dvc_deps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dvc_deps)


@pytest.mark.parametrize("pipeline", PIPELINE_FILES)
def test_every_stage_depends_on_the_code_it_runs(pipeline):
    diff = dvc_deps.differences((ROOT / pipeline).read_text(encoding="utf-8"))
    assert not diff, f"{pipeline} misses code its stages run: {diff}"


def test_closure_follows_lazy_imports_and_package_data():
    evaluate = dvc_deps.closure("stages/evaluate.py")
    assert "stages/evaluate.py" in evaluate and "src/sgg_eval/metrics/engine.py" in evaluate
    assert "src/sgg_eval/data/resources/zeroshot_triplet.pytorch" in evaluate  # read via importlib.resources
    tables = dvc_deps.closure("stages/tables.py")
    assert "src/sgg_eval/data/resources/published/li2022_tables.csv" in tables  # joinpath(f"...{name}")
    psg_tables = dvc_deps.closure("stages/psg_tables.py")
    assert "src/sgg_eval/data/resources/published/sgbench2024_psg_tables.csv" in psg_tables


def test_the_check_fails_when_a_dependency_is_dropped():
    text = (ROOT / "per_model/dvc.yaml").read_text(encoding="utf-8")
    evaluate = text.index("  evaluate:\n")
    broken = text[:evaluate] + text[evaluate:].replace("      - src/sgg_eval\n", "", 1)
    assert broken != text
    diff = dvc_deps.differences(broken)
    assert list(diff) == ["evaluate"] and "src/sgg_eval/metrics/engine.py" in diff["evaluate"]
    # a module listed on its own covers itself; a sibling folder does not cover it
    deps = {"src/sgg_eval/metrics", "stages"}
    assert dvc_deps._covered("src/sgg_eval/metrics/engine.py", deps)
    assert not dvc_deps._covered("src/sgg_eval/boxes/pko.py", deps) and not dvc_deps._covered(
        "src/sgg_eval_x/a.py", {"src/sgg_eval"}
    )


def test_every_dvc_yaml_of_the_project_is_one_this_check_reads():
    """A new dvc.yaml (DVC collects every one in the repository) must be listed in PIPELINE_FILES, or its
    stages would escape this check and the parameter audit."""
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files", "dvc.yaml", "*/dvc.yaml"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(tracked) == sorted(PIPELINE_FILES)


def test_dvc_repro_without_a_target_runs_every_stage():
    """`dvc repro` and `dvc exp run` without a target reproduce the stages of ./dvc.yaml and what they read, not
    every dvc.yaml: a stage of another pipeline file (PIPELINE_FILES) whose outputs no stage of dvc.yaml reads
    would never run from `make repro`. DVC's own collection says which stages that is."""
    from dvc.repo import Repo

    with Repo(str(ROOT)) as repo:
        every = {stage.addressing for stage in repo.index.stages}
        reproduced = {stage.addressing for stage in repo.stage.collect("dvc.yaml", with_deps=True)}
    assert len(every) > 40 and every - reproduced == set()
