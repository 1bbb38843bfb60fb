"""The pipeline's video side (Action Genome): the quick start's GENERATED files and SIMULATED models scored as the
command scores them, the tables as AG's papers print them, a protocol added rerunning only the video side, and
bad video settings stopped by the schema."""

from __future__ import annotations

import json

import pytest
from readme_runner import stages_run
from reproduced import bash, copy_of

from sgg_eval.cli import main
from sgg_eval.video.ag_store import read_ag_store

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out


def test_the_pipeline_equals_the_command(reproduced_base, tmp_path):
    project = reproduced_base.project
    base = project / "data" / "ag_sim"
    doc = json.loads((base / "results" / "sim_ag_strong.json").read_text())
    assert doc["simulated"] and set(doc["protocols"]["sttran"]) == {"predcls", "sgcls", "sgdet"}
    out = tmp_path / "command.json"
    assert main(["evaluate", str(base / "predictions" / "sim_ag_strong" / "sttran" / "sgdet"),
                 "--ag", str(base / "ag" / "splits" / "test_filtersmall.h5"), "--task", "sgdet",
                 "--constraint", "all", "--ag-train", str(base / "ag" / "splits" / "train.h5"),
                 "-o", str(out)]) == 0  # fmt: skip
    assert json.loads(out.read_text()) == doc["protocols"]["sttran"]["sgdet"]
    table = (project / "reports" / "video" / "tables" / "ag_sttran_R.md").read_text()
    assert "SIMULATED" in table and " with R@10 |" in table and " semi R@50 |" in table and "*SGDet*" in table
    r10 = doc["protocols"]["sttran"]["predcls"]["results"]["no"]["metrics"]["R@10"]
    assert f"{100 * r10:.2f}" in table
    for name in ("mR_pooled", "mR_per_frame", "ours"):
        assert (project / "reports" / "video" / "tables" / f"ag_sttran_{name}.csv").exists()
    stats = json.loads((base / "ag" / "summary.json").read_text())["training"]["sttran"]  # the training statistics
    assert [len(stats["groups"][g]) for g in ("head", "body", "tail")] == [2, 6, 18]
    own = doc["protocols"]["sttran"]["predcls"]["results"]["with"]["beyond_protocol"]
    predicates = read_ag_store(base / "ag" / "splits" / "train.h5")[1].predicates  # (JSON keys are sorted)
    assert own["n_c"] == [stats["n_c"][p] for p in predicates] and own["longtail"]["head"] == stats["groups"]["head"]


def test_adding_oed_reruns_only_the_video_side(reproduced_base, tmp_path):
    project = copy_of(reproduced_base, tmp_path / "project")
    for command in (".venv/bin/sgg-eval params 'evaluation.video_protocols=[sttran,oed]'", ".venv/bin/dvc repro"):
        status, stdout, stderr = bash(command, project)
        assert status == 0, stdout[-2000:] + stderr[-2000:]
    ran = stages_run(stdout + stderr)
    assert {"video_evaluate", "video_tables"} <= ran and not ran & {"load_split", "evaluate", "psg_evaluate",
                                                                    "video_data", "tables"}, ran  # fmt: skip
    table = (project / "reports" / "video" / "tables" / "ag_oed_R.md").read_text()
    assert " with R@10 |" in table and " no R@50 |" in table and "semi" not in table


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("video_dataset.sim.videos=2", "video_dataset.sim.videos"),
        ("evaluation.video_entries=[sim_psg_imp]", "a video model's file says benchmark: video"),
        ("evaluation.video_protocols=[reference]", "evaluation.video_protocols[0]"),
        ("video_dataset=action_genome", "is real, but sim_ag_weak is a simulated model"),
    ],
)
def test_bad_video_settings_are_refused(tmp_path, capsys, override, says):
    assert main(["params", override, "-o", str(tmp_path / "params.yaml")]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "params.yaml").exists()
