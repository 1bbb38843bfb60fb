"""CONTRIBUTING.md's recipe "Adding a protocol", shown to work: a toy protocol registered from outside the package
(``tests/toy_protocol.py``: one record, a runner, a printer) is found by the command (its choices, ``sgg-eval
protocols``, the run and its printed line), by the Python API, and by the pipeline's params check, with no other
layer touched."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import r1sgg_fixture
import yaml

from sgg_eval import evaluate_file
from sgg_eval.core import protocols
from sgg_eval.core.errors import InputError
from sgg_eval.io.atomic import write_json

HERE = Path(__file__).parent
ROOT = HERE.parent


@pytest.fixture
def toy(monkeypatch):
    """The toy registered for this test only (the registry as it was afterwards)."""
    monkeypatch.setattr(protocols, "REGISTRY", protocols.REGISTRY)
    monkeypatch.setattr(protocols, "BY_NAME", dict(protocols.BY_NAME))
    sys.modules.pop("toy_protocol", None)
    import toy_protocol

    yield toy_protocol
    sys.modules.pop("toy_protocol", None)


def _command(*args) -> subprocess.CompletedProcess:
    """``sgg-eval`` with the toy registered first (its module imported), as a user's plugin would be."""
    code = "import sys, toy_protocol; from sgg_eval.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env)


def _files(tmp_path):
    r1sgg_fixture.write_fixture(tmp_path, "vg150", 4, n_images=9)
    (tmp_path / "answers" / "1007.json").unlink()  # two GT images unanswered (the fixture leaves out 1021)
    return tmp_path / "answers", tmp_path / "rows.jsonl"


def test_the_command_lists_runs_and_prints_it(tmp_path):
    listed = _command("protocols")
    assert listed.returncode == 0 and "toy" in listed.stdout and "tests/toy_protocol.py" in listed.stdout
    assert "18 protocols" in listed.stdout
    answers, gt = _files(tmp_path)
    run = _command("evaluate", answers, "--text-graphs", "--protocol", "toy", "--gt", gt, "-o", tmp_path / "t.json")
    assert run.returncode == 0 and run.stdout == "answered=77.78 over 9 images\n", run.stderr
    assert json.loads((tmp_path / "t.json").read_text())["metrics"] == {"answered": 7 / 9}
    refused = _command("evaluate", answers, "--text-graphs", "--protocol", "toy", "--gt", gt, "--wordnet")
    assert refused.returncode == 2 and "--wordnet is an option of --protocol r1sgg only" in refused.stderr
    without = subprocess.run([sys.executable, "-m", "sgg_eval.cli", "evaluate", answers, "--text-graphs", "--protocol",
                              "toy", "--gt", gt], capture_output=True, text=True)  # fmt: skip
    assert without.returncode == 2 and "invalid choice: 'toy'" in without.stderr  # unregistered: not a choice


def test_the_api_finds_it_and_equals_the_command(tmp_path, toy):
    answers, gt = _files(tmp_path)
    run = _command("evaluate", answers, "--text-graphs", "--protocol", "toy", "--gt", gt, "-o", tmp_path / "c.json")
    assert run.returncode == 0, run.stderr
    write_json(tmp_path / "a.json", evaluate_file(answers, text_graphs=True, gt=gt, protocol="toy"))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "c.json").read_bytes()
    with pytest.raises(InputError, match="give --gt"):
        evaluate_file(answers, text_graphs=True, protocol="toy")


def test_the_params_check_accepts_it_where_it_names_a_text_model(toy):
    from sgg_eval.pipeline.catalogue import resolve
    from sgg_eval.pipeline.mllm_params import check_text

    params = resolve(yaml.safe_load((ROOT / "params.yaml").read_text()), ROOT / "conf")
    mine = copy.deepcopy(params)
    mine["models"]["sim_mllm_text"]["protocol"] = "toy"
    check_text(mine)  # accepted: the toy reads a split store (in_pipeline)
    mine["models"]["sim_mllm_text"]["protocol"] = "r1sgg"
    with pytest.raises(InputError, match="r1sgg"):
        check_text(mine)  # a registered protocol that reads its tool's own GT files: not in the pipeline


def test_a_second_toy_of_the_same_name_is_refused(toy):
    with pytest.raises(ValueError, match="registered already"):
        protocols.register(toy.TOY)
