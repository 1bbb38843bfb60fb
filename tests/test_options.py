"""One options object and one range check (issue 28): the command line, the Python API and the pipeline's
`conf/` check refuse a bad τ or IoU threshold with the same words, from `metrics.options.check_option`, each
naming its own field; and every evaluation (CLI, stage, API) builds its `EvalOptions` in `run_evaluation`."""

from __future__ import annotations

import re

import pytest
import yaml
from test_pipeline import ROOT

from sgg_eval.boxes.evaluate import run_evaluation
from sgg_eval.cli import main
from sgg_eval.core.errors import InputError
from sgg_eval.metrics.options import RANGES, EvalOptions, check_option
from sgg_eval.pipeline.config import load_params
from sgg_eval.pipeline.params_check import check_params


@pytest.mark.parametrize(
    "name,value,words",
    [
        ("tau", 2, "2 is outside [0, 1]"),
        ("tau", -0.5, "-0.5 is outside [0, 1]"),
        ("iou_threshold", 0, "0 is outside (0, 1]"),
        ("iou_threshold", 1.5, "1.5 is outside (0, 1]"),
        ("tau", float("nan"), "nan is not a finite number"),
        ("tau", True, "True is not a finite number"),
    ],
)
def test_every_entry_point_refuses_with_the_options_own_check(name, value, words, tmp_path, capsys):
    with pytest.raises(InputError, match=re.escape(words)) as api:
        run_evaluation(str(tmp_path / "absent.h5"), "predcls", **{name: value})  # before any file is read
    assert api.value.field == name
    with pytest.raises(InputError) as options:
        EvalOptions(task="predcls", **{name: value})
    assert options.value.message == api.value.message
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["metrics"][name] = value
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(InputError) as conf:
        check_params(load_params(tmp_path / "params.yaml", ROOT / "conf"))
    assert conf.value.field == f"metrics.{name}" and conf.value.message == api.value.message
    if not isinstance(value, bool):
        flag = "--" + name.replace("_", "-")
        assert main(["evaluate", "x.h5", "--task", "sgdet", flag, str(value)]) == 2
        assert f"argument {flag}: {words}" in capsys.readouterr().err


def test_the_ranges_are_the_ones_documented():
    assert RANGES == {"tau": (0.0, 1.0, False), "iou_threshold": (0.0, 1.0, True)}
    assert check_option("tau", 0) == 0.0 and check_option("iou_threshold", 1) == 1.0


def test_an_unknown_task_or_protocol_is_refused_where_the_options_are_made():
    with pytest.raises(InputError, match="task must be one of"):
        EvalOptions(task="detection")
    with pytest.raises(InputError, match="'lenient' is not one of reference, strict"):
        EvalOptions(task="sgdet", protocol="lenient")
