"""The README's sections on your own data, run as written: the real VG150 split with your model, the real PSG
files with yours (stand-ins for both, tests/readme_standins.py). Each switches a dataset, so each works on its own
copy of the reproduced quick start: only that dataset's side of the pipeline reruns."""

from __future__ import annotations

import json
import re

import pytest
import readme_standins
from readme_runner import README, sh, stages_run
from reproduced import copy_of

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out


def test_real_vg150_with_your_model(reproduced_base, tmp_path):
    """The README's `conf/model/motifs.yaml`, its files standing in: the PSG side stays as it was."""
    project = copy_of(reproduced_base, tmp_path / "project")
    yaml_block = re.search(r"```yaml\n(# conf/model/motifs.yaml\n.*?)```", README, re.S).group(1)
    readme_standins.real_vg150(project, yaml_block, tmp_path / "ckpt")
    sh(".venv/bin/sgg-eval params dataset=vg150 experiment=one_model evaluation.model=motifs", project)
    out = sh(".venv/bin/dvc repro", project)
    assert {"load_split", "evaluate", "tables", "track"} <= stages_run(out), out[-2000:]
    assert not {"psg_simulate", "psg_evaluate"} & stages_run(out), out[-2000:]  # no PSG matching
    for entry in ("motifs", "motifs_pko", "pko_only"):
        for task in ("predcls", "sgcls", "sgdet"):
            doc = json.loads((project / f"data/vg150/results/metrics/{entry}/{task}.json").read_text())
            assert doc["entry"]["simulated"] is False and doc["counts"]["images_evaluated"] > 0


def test_real_psg_with_your_model(reproduced_base, tmp_path):
    """The README's `conf/model/my_psg.yaml`, its file standing in: the PSG side reruns, no stage of the VG150 side
    does."""
    project = copy_of(reproduced_base, tmp_path / "project")
    yaml_block = re.search(r"```yaml\n(# conf/model/my_psg.yaml\n.*?)```", README, re.S).group(1)
    readme_standins.real_psg(project, yaml_block, tmp_path / "elsewhere")
    sh(".venv/bin/sgg-eval params psg_dataset=psg 'evaluation.psg_entries=[my_psg]'", project)
    out = sh(".venv/bin/dvc repro", project)
    assert {"psg_data", "psg_stats", "psg_evaluate", "psg_tables", "track"} <= stages_run(out), out[-2000:]
    box_side = {"load_split", "simulate", "apply_pko", "evaluate", "reduce", "tables", "score_figures", "figures"}
    assert not box_side & stages_run(out), out[-2000:]  # no VG ranking, nor its reductions, tables or figures
    doc = json.loads((project / "data/psg/results/metrics/my_psg.json").read_text())
    assert doc["entry"]["simulated"] is False and doc["protocols"]["sgbench"]["counts"]["images_evaluated"] > 0
    assert "| MyPSG" in (project / "reports/psg/tables/psg_table1_recall.md").read_text()
