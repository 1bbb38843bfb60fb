"""Text-graph models in the pipeline (issue 48): their schema (``mllm_params``), the simulated answers, and the table
that sets them beside the ranked models (``report.mllm_table``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from sgg_eval.core.errors import InputError
from sgg_eval.data.store import write_split
from sgg_eval.data.types import GTImage, SplitMeta
from sgg_eval.data.vg150_facts import vg150_vocabulary
from sgg_eval.metrics.names import text_set_name
from sgg_eval.pipeline.catalogue import resolve
from sgg_eval.pipeline.mllm_params import check_text
from sgg_eval.pipeline.params_check import check_params
from sgg_eval.report.mllm_table import text_graphs_table
from sgg_eval.simulate.mllm_answers import simulated_answers
from sgg_eval.text.sets_evaluate import run_text_evaluation

ROOT = Path(__file__).resolve().parents[1]
VOCAB = vg150_vocabulary()


def _params():
    return resolve(yaml.safe_load((ROOT / "params.yaml").read_text()), ROOT / "conf")


def test_the_shipped_text_model_is_valid_and_named():
    params = _params()
    check_params(params)
    assert params["evaluation"]["text_entries"] == ["sim_mllm_text"]
    assert params["models"]["sim_mllm_text"]["benchmark"] == "text"


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda p: p["evaluation"].update(text_entries=["sim_motifs_baseline"]), "evaluation.text_entries[0]"),
        (lambda p: p["models"]["sim_mllm_text"].update(protocol="r1sgg"), "models.sim_mllm_text.protocol"),
        (lambda p: p["models"]["sim_mllm_text"]["sim"].update(recall=1.5), "models.sim_mllm_text.sim.recall"),
        (lambda p: p["models"]["sim_mllm_text"].update(source="file", files={}), "models.sim_mllm_text.files.answers"),
        (lambda p: p["dataset"].update(kind="vg150"), "evaluation.text_entries"),  # simulated answers, real GT
    ],
)
def test_what_the_schema_refuses(change, field):
    params = copy.deepcopy(_params())
    change(params)
    with pytest.raises(InputError) as exc:
        check_text(params)
    assert exc.value.field == field or field in str(exc.value)


def _split(tmp_path, n=30):
    rng = np.random.default_rng(3)
    images = []
    for i in range(n):
        k = int(rng.integers(2, 6))
        xy = rng.integers(0, 300, (k, 2))
        boxes = np.column_stack([xy, xy + rng.integers(20, 100, (k, 2))]).astype(np.float32)
        rels = np.column_stack([rng.integers(0, k, 4), rng.integers(0, k, 4), rng.integers(1, 51, 4)])
        images.append(GTImage(i + 1, 640, 480, boxes, rng.integers(1, 151, k), rels))
    write_split(tmp_path / "test.h5", SplitMeta("test", VOCAB, "vg150", False, "test"), images)
    return images


KNOBS = {"seed": 1, "answered": 1.0, "failures": 0.0, "recall": 1.0, "wrong": 0.0, "duplicates": 0.0, "jitter": 0.0,
         "plural": 0.0}  # fmt: skip


def test_simulated_answers_do_what_their_knobs_say(tmp_path):
    images = _split(tmp_path)
    (tmp_path / "a.jsonl").write_text(simulated_answers(images, VOCAB, KNOBS))
    doc = run_text_evaluation(str(tmp_path / "a.jsonl"), str(tmp_path / "test.h5"))
    assert doc["metrics"][text_set_name("R", True)] == 1.0  # every GT row answered, exactly: all hit
    assert simulated_answers(images, VOCAB, KNOBS) == simulated_answers(images, VOCAB, KNOBS)
    assert simulated_answers(images, VOCAB, {**KNOBS, "answered": 0.0}) == ""
    broken = simulated_answers(images, VOCAB, {**KNOBS, "failures": 1.0}).splitlines()
    assert len(broken) == len(images) and all(isinstance(json.loads(x)["objects"], str) for x in broken)
    plural = simulated_answers(images, VOCAB, {**KNOBS, "plural": 1.0, "jitter": 0.05})
    assert plural != simulated_answers(images, VOCAB, KNOBS)
    (tmp_path / "b.jsonl").write_text(plural)
    doc = run_text_evaluation(str(tmp_path / "b.jsonl"), str(tmp_path / "test.h5"))
    assert doc["names"]["read_through_the_table"] and doc["metrics"][text_set_name("R", True)] > 0.5


def test_the_table_sets_sections_apart(tmp_path):
    images = _split(tmp_path, 10)
    (tmp_path / "a.jsonl").write_text(simulated_answers(images, VOCAB, KNOBS))
    doc = run_text_evaluation(str(tmp_path / "a.jsonl"), str(tmp_path / "test.h5"))
    doc["entry"] = {"name": "m", "backbone": "MLLM", "method": "x", "simulated": True}
    ranked = {("r", "sgdet"): {"entry": {"backbone": "Motifs", "method": "Baseline"},
                               "metrics": {"R@100": 0.3, "ngR@100": 0.4, "mR@100": 0.1},
                               "counts": {"images_evaluated": 10, "images_input": 10}}}  # fmt: skip
    table = text_graphs_table({"m": doc}, ranked, ["r"], "vg150")
    text = table.markdown()
    assert "*Text scene graphs*" in text and "*Ranked models, SGDet*" in text and "no K" in text
    assert "| 100.00 |" in text and "| 30.00 |" in text and "SIMULATED" in text
