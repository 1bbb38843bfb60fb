"""Text scene graphs through the Python API: ``evaluate_file(..., text_graphs=True)`` writes, byte for byte, the
document ``sgg-eval evaluate --text-graphs -o`` writes, for every text protocol of the registry and its options;
and both refuse the same things with the same line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import asmv2_fixture
import provision_fixture
import pytest
import r1sgg_fixture
import sgvlm_fixture

from sgg_eval import evaluate_file
from sgg_eval.core.defaults import TEXT_PROTOCOLS
from sgg_eval.core.errors import InputError
from sgg_eval.io.atomic import write_json

HERE = Path(__file__).parent


def _r1sgg(out: Path, dataset: str = "vg150") -> tuple:
    r1sgg_fixture.write_fixture(out, dataset, 3, n_images=14)
    return out / "answers", out / "rows.jsonl"


def _sgvlm(out: Path) -> tuple:
    out.mkdir(parents=True)
    sgvlm_fixture.write_fixture(out / "s.jsonl", 2, n=16)
    return out / "s.jsonl", None


def _asmv2(out: Path) -> tuple:
    asmv2_fixture.write_fixture(out, 2, n=12)
    return out / "answers.jsonl", out / "psg_eval.jsonl"


def _provision(out: Path, kind: str) -> tuple:
    provision_fixture.write_fixture(out, 5, n=12)
    return out / f"{kind}.jsonl", (out / "gt.json" if kind == "gpt" else None)


# (protocol, the files, its options as the command spells them, the same as the API's keywords)
CASES = [
    ("sets", lambda out: _r1sgg(out), [], {}),
    ("r1sgg", lambda out: _r1sgg(out), [], {}),
    ("r1sgg", lambda out: _r1sgg(out, "psg"), [], {}),
    ("sgvlm", _sgvlm, [], {}),
    ("asmv2", _asmv2, [], {}),
    ("provision", lambda out: _provision(out, "e2e"), ["--top-k", "0"], {"top_k": 0}),
    ("provision", lambda out: _provision(out, "gpt"), ["--top-k", "3", "--seed", "4"], {"top_k": 3, "seed": 4}),
]


def _command(tmp_path: Path, *args) -> subprocess.CompletedProcess:
    """The command, with SBERT stood in for by the fixture's ``sentence_transformers`` (as test_provision.py)."""
    shim = tmp_path / "shim" / "sentence_transformers"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "__init__.py").write_text(
        "from provision_fixture import StandInSentenceTransformer as SentenceTransformer\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim.parent), str(HERE)])}
    cmd = [sys.executable, "-m", "sgg_eval.cli", "evaluate", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


@pytest.fixture
def stand_in_sbert(monkeypatch):
    module = type(sys)("sentence_transformers")
    module.SentenceTransformer = provision_fixture.StandInSentenceTransformer
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)


def test_every_text_protocol_is_a_case():
    assert {case[0] for case in CASES} == set(TEXT_PROTOCOLS)


@pytest.mark.parametrize("protocol,files,flags,options", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_the_api_writes_the_commands_bytes(tmp_path, stand_in_sbert, protocol, files, flags, options):
    answers, gt = files(tmp_path / "in")
    given = ["--gt", gt] if gt else []
    run = _command(
        tmp_path, answers, "--text-graphs", "--protocol", protocol, *given, *flags, "-o", tmp_path / "c.json"
    )
    assert run.returncode == 0, run.stderr
    doc = evaluate_file(answers, text_graphs=True, gt=gt, protocol=protocol, **options)
    write_json(tmp_path / "a.json", doc)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "c.json").read_bytes()
    assert doc["metrics"] and json.loads((tmp_path / "c.json").read_text())["metrics"] == doc["metrics"]


def test_the_default_protocol_is_the_registrys_first(tmp_path):
    answers, gt = _r1sgg(tmp_path)
    assert evaluate_file(answers, text_graphs=True, gt=gt) == evaluate_file(
        answers, text_graphs=True, gt=gt, protocol=TEXT_PROTOCOLS[0]
    )


@pytest.mark.parametrize(
    "protocol,use_gt,options,flags,line",
    [
        ("sgvlm", True, {}, [], "reads the GT from each sample"),
        ("r1sgg", False, {}, [], "give --gt"),
        ("sets", True, {"wordnet": True}, ["--wordnet"], "--wordnet is an option of --protocol r1sgg only"),
        ("r1sgg", True, {"top_k": 0}, ["--top-k", "0"], "--top-k is an option of --protocol provision only"),
        ("asmv2", True, {"seed": 3}, ["--seed", "3"], "--seed is an option of --protocol provision only"),
    ],
)
def test_api_and_command_refuse_alike(tmp_path, protocol, use_gt, options, flags, line):
    answers, gt = _r1sgg(tmp_path / "in")
    given = ["--gt", gt] if use_gt else []
    run = _command(tmp_path, answers, "--text-graphs", "--protocol", protocol, *given, *flags)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and line in run.stderr, run.stderr
    with pytest.raises(InputError, match=line.replace("-", r"\-")):
        evaluate_file(answers, text_graphs=True, gt=gt if use_gt else None, protocol=protocol, **options)


def test_text_options_outside_text_graphs_and_box_options_inside_are_refused(tmp_path):
    answers, gt = _r1sgg(tmp_path)
    with pytest.raises(InputError, match="options of text_graphs"):
        evaluate_file(answers, "predcls", gt=gt, wordnet=True)
    with pytest.raises(InputError, match="text_graphs takes gt, protocol"):
        evaluate_file(answers, "predcls", text_graphs=True, gt=gt)
    with pytest.raises(InputError, match="text graphs take --protocol"):
        evaluate_file(answers, text_graphs=True, gt=gt, protocol="reference")
