"""A real-PSG run of the pipeline: ``psg_dataset=psg`` and one real model (an SGBench ZIP) on the generated
PSG-like fixture (tests/psg_fixture.py) used as if it were the real files. The metrics equal the command
line's on the same files, the tables say real (not simulated), and a new submission reruns only what reads
it."""

from __future__ import annotations

import json
import shutil
import sys
import zipfile

import pytest
import tifffile
from psg_fixture import _tiff, write_psg_fixture
from reproduced import copy_of, ran_stages
from test_pipeline import mlflow_runs, params_with, run

from sgg_eval.metrics.document import every_metric

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def project(reproduced_base, tmp_path_factory):
    """A copy of the reproduced quick start (tests/reproduced.py) switched to the fixture as real PSG: its VG150
    side is reproduced already, so only the panoptic side (and what reads it) runs."""
    p = copy_of(reproduced_base, tmp_path_factory.mktemp("psg_real") / "project")
    raw = p / "psg_files"
    files = write_psg_fixture(raw, seed=5, test=14, other=12, min_false=1)
    (p / "submissions").mkdir()
    files["zip"] = files["zip"].rename(p / "submissions/my_psg.zip")  # the model's file is not the dataset's
    files["folder"] = p / "submissions/my_psg_folder"  # the same submission unpacked, as SGBench accepts it
    with zipfile.ZipFile(files["zip"]) as zf:
        zf.extractall(files["folder"])
    for name, path in (("my_psg", files["zip"]), ("my_psg_folder", files["folder"])):
        (p / f"conf/model/{name}.yaml").write_text(
            f"name: {name}\nbenchmark: psg\nmethod: MyPSG {name[-6:]}\nsource: file\nfiles:\n  psg: {path}\n"
        )
    uri = f"sqlite:///{p / 'mlflow.db'}"  # the project's own store (tracking.uri empty)
    params_with(
        p,
        "psg_dataset=psg",
        f"psg_dataset.raw={raw}",
        "evaluation.psg_entries=[my_psg,my_psg_folder]",
        "evaluation.psg_protocols=[sgbench,openpsg]",
    )
    out = run([sys.executable, "-m", "dvc", "repro"], p)
    return p, files, uri, out


def test_the_pipeline_equals_the_command_line_on_the_same_files(project, tmp_path):
    p, files, _, out = project
    assert "psg_evaluate@my_psg" in ran_stages(out) and "psg_data: real psg" in out
    doc = json.loads((p / "data/psg/results/metrics/my_psg.json").read_text())
    assert doc["entry"] == {"name": "my_psg", "method": "MyPSG my_psg", "simulated": False, "dataset": "psg"}
    folder = json.loads((p / "data/psg/results/metrics/my_psg_folder.json").read_text())
    for protocol in ("sgbench", "openpsg"):  # the folder is the same submission
        assert every_metric(folder["protocols"][protocol]) == every_metric(doc["protocols"][protocol])
    stats = p / "data/psg/stats/stats.h5"
    for protocol in ("sgbench", "openpsg"):
        cli = tmp_path / f"{protocol}.json"
        run(
            [
                sys.executable,
                "-m",
                "sgg_eval.cli",
                "evaluate",
                str(files["zip"]),
                "--psg",
                str(files["psg"]),
                "--psg-root",
                str(files["root"]),
                "--protocol",
                protocol,
                "--stats",
                str(stats),
                "-o",
                str(cli),
            ],
            p,
        )
        theirs = json.loads(cli.read_text())
        assert doc["protocols"][protocol]["metrics"] == theirs["metrics"], protocol
        assert doc["protocols"][protocol]["per_predicate"] == theirs["per_predicate"], protocol
        assert doc["protocols"][protocol]["beyond_protocol"] == theirs["beyond_protocol"], protocol


def test_the_tables_say_real_and_name_both_protocols(project):
    p, *_ = project
    table = (p / "reports/psg/tables/psg_table1_recall.md").read_text()
    assert "SIMULATED" not in table and "protocol sgbench / openpsg" in table and "| MyPSG my_psg" in table
    assert "R@50 (sgbench)" in table and "R@50 (openpsg)" in table
    assert "Published vs ours" in (p / "reports/psg/tables/psg_published_vs_ours.md").read_text()
    assert (p / "reports/psg/figures/psg_fig3_pr_vs_prank.png").stat().st_size > 0


def test_mlflow_runs_name_dataset_and_protocol(project):
    _, _, uri, _ = project
    names = {r.info.run_name for r in mlflow_runs(uri)}
    assert {"psg/my_psg/sgbench", "psg/my_psg/openpsg"} <= names
    assert any(n.startswith("pipeline psg ") for n in names) and any(n.startswith("pipeline vg150_sim ") for n in names)


def test_the_tau_sweep_covers_psg_exactly(project, monkeypatch):
    """A sweep job's PSG rows: wIMR@20 at tau = 0 is IMR@20, and at the pipeline's tau the evaluated value."""
    from sgg_eval.metrics.names import metric_name
    from sgg_eval.pipeline.config import load_params
    from sgg_eval.pipeline.sweep import psg_sweep_rows

    p, *_ = project
    monkeypatch.chdir(p)
    params = load_params()
    doc = json.loads((p / "data/psg/results/metrics/my_psg.json").read_text())
    wimr, imr = metric_name("wIMR", 20), metric_name("IMR", 20)
    for tau, expect in ((0.0, imr), (0.5, wimr)):
        rows = {r["task"]: r for r in psg_sweep_rows(params, tau, 20)}
        assert set(rows) == {"panoptic-sgbench", "panoptic-openpsg"}
        for protocol in ("sgbench", "openpsg"):
            assert rows[f"panoptic-{protocol}"][wimr] == every_metric(doc["protocols"][protocol])[expect], (
                tau,
                protocol,
            )


def test_a_new_submission_reruns_only_what_reads_it(project):
    p, files, _, _ = project
    status = run([sys.executable, "-m", "dvc", "status"], p)
    assert "up to date" in status, status
    shutil.copy(files["json"], p / "dummy.json")  # untracked: nothing reads it
    other = write_psg_fixture(p / "other_fixture", seed=6, test=14, other=12, min_false=1)
    shutil.copy(other["zip"], files["zip"])  # same file name, new content
    out = run([sys.executable, "-m", "dvc", "repro"], p)
    ran = set(ran_stages(out))
    readers = {"check_params", "model_files", "inputs", "psg_evaluate@my_psg", "psg_reduce", "psg_tables"}
    readers |= {"psg_figures", "site", "track"}
    assert {"psg_evaluate@my_psg", "psg_tables"} <= ran <= readers, ran
    # one file of the folder rewritten in place: only the folder's evaluation (and what follows) reruns
    tiff = max((files["folder"] / "masks").iterdir(), key=lambda f: f.stat().st_size)
    stack = tifffile.imread(tiff)
    tiff.write_bytes(_tiff((1 - stack).reshape(-1, *stack.shape[-2:])))  # every mask inverted
    out = run([sys.executable, "-m", "dvc", "repro"], p)
    ran = set(ran_stages(out))
    folder_readers = {r.replace("@my_psg", "@my_psg_folder") for r in readers}
    assert {"psg_evaluate@my_psg_folder", "psg_tables"} <= ran <= folder_readers, ran
