"""The pipeline on real formats: the dataset config switched to a VG150-format fixture and one added model
config pointing at an eval_results.pytorch fixture (legacy torch format) run end to end."""

from __future__ import annotations

import hashlib
import json
import re
import sys

import numpy as np
import pytest
from readme_standins import model_output
from reproduced import ran_stages
from test_pipeline import copy_project, mlflow_runs, params_with, run
from torch_writer import eval_results_object, save_legacy
from vg150_fixture import write_vg150_fixture

from sgg_eval.boxes.evaluate import run_evaluation
from sgg_eval.data.vg150 import VG150Files, read_vg150_split

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out
# The panoptic side of the pipeline with one simulated model, not eight: these tests check the box side on real
# formats, and seven more psg_evaluate stages (and their lock rewrites) cost each of them 7 to 10 s (measured alone).
PSG_ONE_MODEL = "evaluation.psg_entries=[sim_psg_imp]"


def test_vg150_fixture_and_eval_results_model_end_to_end(tmp_path):
    (tmp_path / "proj").mkdir()
    p = copy_project(tmp_path / "proj")
    raw = write_vg150_fixture(tmp_path / "vg150")
    _, _, images = read_vg150_split(VG150Files.in_dir(str(raw)), "test", num_val_im=0)
    test_images = list(images)
    rng = np.random.default_rng(0)

    def write_model(path):  # a PredCls model's output over the fixture's test split, in split order
        cases = [(gt, model_output(gt, rng, columns=4)) for gt in test_images]  # the fixture's 3 predicates
        save_legacy(eval_results_object(cases), path)

    model_file = tmp_path / "motifs_predcls_eval_results.pytorch"
    write_model(model_file)
    other_file = tmp_path / "vctree_predcls_eval_results.pytorch"
    write_model(other_file)
    # adding a real model = adding one config file
    for name, backbone, path in (("real_motifs", "Motifs", model_file), ("real_vctree", "VCTree", other_file)):
        (p / f"conf/model/{name}.yaml").write_text(
            f"name: {name}\nbackbone: {backbone}\nmethod: Baseline\nsource: file\nfiles:\n  predcls: {path}\n"
        )
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    params_with(
        p,
        "dataset=vg150",
        f"dataset.raw={raw}",
        "dataset.num_val_im=0",
        "experiment=one_model",
        "evaluation.model=real_motifs",
        "evaluation.entries=[real_motifs,real_motifs_pko,pko_only,real_vctree]",
        "evaluation.tasks=[predcls]",
        "pko.blind_max_n=2",
        "psg_dataset.sim.scale=tiny",
        PSG_ONE_MODEL,
        f"tracking.uri={uri}",
    )
    out = run([sys.executable, "-m", "dvc", "repro"], p)
    assert "evaluate@real_motifs" in ran_stages(out)
    assert "is empty" not in out  # no simulated model: the simulate stage's folder holds its (empty) index
    doc = json.loads((p / "data/vg150/results/metrics/real_motifs/predcls.json").read_text())
    assert doc["input"]["format"] == "eval_results" and doc["counts"]["images_evaluated"] == 2
    assert doc["entry"]["simulated"] is False
    pko = json.loads((p / "data/vg150/results/metrics/real_motifs_pko/predcls.json").read_text())
    assert pko["counts"]["images_evaluated"] == 2
    table = re.sub(r" +", " ", (p / "reports/tables/published_vs_reproduced.md").read_text())
    assert "| predcls | Motifs | Baseline | R@20 | 59.19 |" in table and "| predcls | - | PKO-only |" in table
    assert "SIMULATED" not in (p / "reports/tables/table2_predcls.md").read_text()
    assert (p / "reports/figures/fig2_score_heatmaps.png").exists()
    vg_runs = [r for r in mlflow_runs(uri) if r.data.tags.get("sgg_eval.task", "panoptic") != "panoptic"
               and r.data.tags.get("sgg_eval.product") != "video"]  # fmt: skip
    assert len([r for r in vg_runs if "mlflow.parentRunId" in r.data.tags]) == 4
    assert "Running stage" not in run([sys.executable, "-m", "dvc", "repro"], p)  # nothing changed: no-op

    # The model is retrained and its file rewritten at the same path: the stages that read it rerun, and
    # only those (the other model's evaluation does not); the metrics are those of the new file (evaluated
    # here directly), not the old ones.
    metrics_json = p / "data/vg150/results/metrics/real_motifs/predcls.json"
    old = json.loads(metrics_json.read_text())["metrics"]
    write_model(model_file)
    out = run([sys.executable, "-m", "dvc", "repro"], p)
    ran = set(ran_stages(out))
    reads = {
        "model_files",
        "apply_pko@real_motifs",
        "pko_only",
        "blind_replace",
        "inputs",
        "evaluate@real_motifs",
        "evaluate@real_motifs_pko",
        "evaluate@pko_only",
    }
    # its links; what follows the metrics; the score figures draw its scores
    after = {"check_params", "reduce", "tables", "score_figures", "figures", "site", "track"}
    assert reads <= ran <= reads | after, sorted(ran)
    new = json.loads(metrics_json.read_text())["metrics"]
    direct = run_evaluation(
        str(model_file), "predcls", gt=str(p / "data/vg150/splits/test.h5"), stats=str(p / "data/vg150/stats/stats.h5")
    )["metrics"]
    assert new == json.loads(json.dumps(direct)) and new != old
    prints = json.loads((p / "data/model_files/real_motifs/predcls.json").read_text())
    assert prints["sha256"] == hashlib.sha256(model_file.read_bytes()).hexdigest()
    # untouched: nothing reruns
    assert "Running stage" not in run([sys.executable, "-m", "dvc", "repro"], p)


def test_gqa200_fixture_and_eval_results_model_end_to_end(tmp_path):
    """``dataset=gqa200`` and one real model: the pipeline's metrics equal the command line's on the same
    files; tables and MLflow runs name the dataset, and nothing is compared with VG150's published numbers."""
    from gqa_fixture import GQA200_PREDICATES as PREDICATES
    from gqa_fixture import write_gqa200

    from sgg_eval.data.gqa200 import GQA200, GQA200Files

    (tmp_path / "proj").mkdir()
    p = copy_project(tmp_path / "proj")
    raw = write_gqa200(tmp_path / "gqa200", n_train=200, n_test=90)
    _, _, images = GQA200("gqa200", GQA200Files.in_dir(str(raw)), num_val_im=10).open_split("test")
    rng = np.random.default_rng(0)
    cases = [(gt, model_output(gt, rng, columns=len(PREDICATES))) for gt in images]
    model_file = tmp_path / "motifs_predcls_eval_results.pytorch"
    save_legacy(eval_results_object(cases), model_file)
    (p / "conf/model/gqa_motifs.yaml").write_text(
        f"name: gqa_motifs\nbackbone: Motifs\nmethod: Baseline\nsource: file\nfiles:\n  predcls: {model_file}\n"
    )
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    params_with(
        p,
        "dataset=gqa200",
        f"dataset.raw={raw}",
        "dataset.num_val_im=10",
        "experiment=one_model",
        "evaluation.model=gqa_motifs",
        "evaluation.entries=[gqa_motifs,gqa_motifs_pko]",
        "evaluation.tasks=[predcls]",
        "pko.blind_max_n=2",
        "psg_dataset.sim.scale=tiny",
        PSG_ONE_MODEL,
        f"tracking.uri={uri}",
    )
    out = run([sys.executable, "-m", "dvc", "repro"], p)
    assert "evaluate@gqa_motifs" in ran_stages(out)
    doc = json.loads((p / "data/gqa200/results/metrics/gqa_motifs/predcls.json").read_text())
    assert doc["counts"]["images_input"] == len(cases) and doc["entry"]["simulated"] is False
    direct = run_evaluation(
        str(model_file),
        "predcls",
        gt=str(p / "data/gqa200/splits/test.h5"),
        stats=str(p / "data/gqa200/stats/stats.h5"),
    )["metrics"]
    assert doc["metrics"] == json.loads(json.dumps(direct))
    assert list(doc["per_predicate"]["mR@100"]) == PREDICATES[1:]
    table2 = (p / "reports/tables/table2_predcls.md").read_text()
    assert "on gqa200" in table2 and "SIMULATED" not in table2
    published = (p / "reports/tables/published_vs_reproduced.md").read_text()
    assert "Nothing to compare: this run is on gqa200" in published and "| predcls |" not in published
    runs = [r.info.run_name for r in mlflow_runs(uri) if r.data.tags.get("sgg_eval.dataset") == "gqa200"]
    assert "gqa200/gqa_motifs/predcls" in runs and any(r.startswith("pipeline gqa200 ") for r in runs)


def test_indoorvg_coco_files_and_predictions_pth_end_to_end(tmp_path):
    """``dataset=indoorvg``: SGG-Benchmark's COCO-style files and one model's predictions.pth, scored under its
    protocol (chosen by the dataset): the pipeline's document equals the command line's on the same files, its
    table leads the reports and the results page keeps sgg-eval's own numbers apart."""
    from coco_sgg_fixture import coco_sgg_document
    from sgg_benchmark_fixture import write_predictions

    from sgg_eval.data.coco_sgg import CocoSGG, CocoSGGFiles

    (tmp_path / "proj").mkdir()
    p = copy_project(tmp_path / "proj")
    raw = tmp_path / "indoorvg"
    rng = np.random.default_rng(4)
    for split in ("train", "val", "test"):
        (raw / split).mkdir(parents=True)
        (raw / split / "_annotations.coco.json").write_text(json.dumps(coco_sgg_document(rng, 30)))
    meta, _, images = CocoSGG("indoorvg", CocoSGGFiles.in_dir(str(raw))).open_split("test")
    gts = list(images)
    model_file = tmp_path / "predictions.pth"
    write_predictions(model_file, gts, "predcls", meta.vocab, 1)
    (p / "conf/model/react.yaml").write_text(
        f"name: react\nbackbone: REACT\nmethod: Baseline\nsource: file\nfiles:\n  predcls: {model_file}\n"
    )
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    params_with(
        p,
        "dataset=indoorvg",
        f"dataset.raw={raw}",
        "experiment=one_model",
        "evaluation.model=react",
        "evaluation.entries=[react,react_pko]",
        "evaluation.tasks=[predcls]",
        "pko.blind_max_n=2",
        "psg_dataset.sim.scale=tiny",
        PSG_ONE_MODEL,
        f"tracking.uri={uri}",
    )
    out = run([sys.executable, "-m", "dvc", "repro"], p)
    assert "evaluate@react" in ran_stages(out)
    doc = json.loads((p / "data/indoorvg/results/metrics/react/predcls.json").read_text())
    assert doc["protocol"] == "sgg-benchmark" and doc["input"]["format"] == "sgg_benchmark"
    direct = run_evaluation(str(model_file), "predcls", gt=str(p / "data/indoorvg/splits/test.h5"),
                            stats=str(p / "data/indoorvg/stats/stats.h5"), protocol="sgg-benchmark")  # fmt: skip
    assert doc["metrics"] == json.loads(json.dumps(direct["metrics"])) and "F1@50" in doc["metrics"]
    assert doc["beyond_protocol"]["metrics"] == json.loads(json.dumps(direct["beyond_protocol"]["metrics"]))
    table = (p / "reports/tables/sgg_benchmark_table.md").read_text()
    assert "protocol sgg-benchmark" in table and "on indoorvg" in table and "SIMULATED" not in table
    assert "| REACT      | Baseline |" in table
    site = (p / "reports/site/index.html").read_text()
    assert "protocol sgg-benchmark" in site and "beyond protocol sgg-benchmark" in site
