"""`dvc repro` end to end on a copy of the project (tiny simulated data): outputs appear, a rerun is a no-op."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(args, cwd):
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


@pytest.fixture
def project(tmp_path):
    for item in ("dvc.yaml", "conf", "stages", "src"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / item)
    _run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], tmp_path)
    _run([sys.executable, "-m", "sgg_eval.cli", "params", "dataset.sim.scale=tiny"], tmp_path)
    return tmp_path


def test_dvc_repro_then_up_to_date(project):
    out = _run([sys.executable, "-m", "dvc", "repro"], project)
    assert "Running stage 'load_split'" in out and "Running stage 'train_stats'" in out
    for split in ("train", "val", "test"):
        assert (project / f"data/vg150_sim/splits/{split}.h5").exists()
    summary = json.loads((project / "data/vg150_sim/stats/summary.json").read_text())
    assert summary["simulated"] and summary["num_train_images"] == 400
    again = _run([sys.executable, "-m", "dvc", "repro"], project)
    assert "Running stage" not in again and "up to date" in again
    # a stats-only parameter reruns train_stats but not load_split
    _run([sys.executable, "-m", "sgg_eval.cli", "params", "dataset.sim.scale=tiny", "stats.drop_non_overlapping=true"], project)
    third = _run([sys.executable, "-m", "dvc", "repro"], project)
    assert "Running stage 'train_stats'" in third and "Running stage 'load_split'" not in third
