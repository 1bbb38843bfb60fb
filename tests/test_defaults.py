"""Each default is stated once (issue 28): the K lists, τ, the IoU threshold, the default protocols, λ, ε, the
splits' num_val_im and VG150's box scale live in `sgg_eval/core/defaults.py`, the tasks and their names in
`sgg_eval/core/tasks.py`, the protocols' records in `sgg_eval/core/protocols.py` (no list of their names is
written anywhere); every other source file reads them from there, and `conf/` (Hydra's copy) agrees."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from sgg_eval.core import defaults
from sgg_eval.core.tasks import TASKS

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "src" / "sgg_eval" / "core" / "defaults.py"
TASKS_HOME = ROOT / "src" / "sgg_eval" / "core" / "tasks.py"  # the tasks, and the one place their names are written
# How a restatement looks: a K list as a literal, or a default assigned, given or printed as a number.
STATED = {
    "a K list": r"[(\[]\s*(20,\s*50,\s*100|10,\s*20,\s*50|5,\s*10,\s*15,\s*20,\s*50|1,\s*2,\s*10)\s*,?\s*[)\]]",
    "tau": r"\btau\b[^\n=]*=\s*0\.5\b|wIMR exponent[^\n]*default: 0\.5",
    "the IoU threshold": r"iou_threshold\b[^\n=]*=\s*0\.5\b|InstR \(default: 0\.5",
    "the protocol": r"\bprotocol\b[^\n=]*=\s*\"(reference|sgbench)\"",
    "lambda": r"\blam\b[^\n=]*=\s*1\.0\b",
    "epsilon": r"\beps\b[^\n=]*=\s*(1e-3|0\.001)\b",
    "a protocol list": r"[(\[]\s*\"(reference\",\s*\"strict|sgbench\",\s*\"sgbench-paper)\"",
    "a task's name": r"[\"'](predcls|sgcls|sgdet)[\"']",
    "num_val_im": r"num_val_im\b[^\n=]*=\s*5000\b|default=5000\b",
    "the box scale": r"box_scale\b[^\n=]*=\s*1024\b",
}


def _statements(text: str) -> list[str]:
    return [name for name, pattern in STATED.items() if re.search(pattern, text)]


def test_no_source_file_but_defaults_states_a_default():
    found = []
    for path in sorted([*(ROOT / "src" / "sgg_eval").rglob("*.py"), *(ROOT / "stages").glob("*.py")]):
        home = {HOME: set(STATED) - {"a task's name"}, TASKS_HOME: {"a task's name"}}.get(path, set())
        found += [f"{path.relative_to(ROOT)}: {name}" for name in _statements(path.read_text()) if name not in home]
    assert not found, "read these from sgg_eval.core.defaults instead: " + "; ".join(found)


def test_the_check_finds_each_kind_of_restatement():
    assert set(_statements(HOME.read_text())) >= {"a K list"}  # the protocols' lists: from the registry
    assert _statements(TASKS_HOME.read_text()) == ["a task's name"]
    for line, name in [
        ("RECALL_KS = (20, 50, 100)", "a K list"),
        ("ks = [10, 20, 50]", "a K list"),
        ("def f(tau: float = 0.5):", "tau"),
        ('help="wIMR exponent in [0, 1] (default: 0.5)"', "tau"),
        ("def g(x, iou_threshold: float = 0.5):", "the IoU threshold"),
        ('    protocol: str = "reference"', "the protocol"),
        ("    lam: float = 1.0", "lambda"),
        ("    eps: float = 1e-3", "epsilon"),
        ('if task == "sgdet":', "a task's name"),
        ('PROTOCOLS = ("reference", "strict")', "a protocol list"),
        ('PSG = ("sgbench", "sgbench-paper", "openpsg")', "a protocol list"),
        ("    num_val_im: int = 5000", "num_val_im"),
        ("def f(split, num_val_im: int = 5000):", "num_val_im"),
        ("        default=5000,", "num_val_im"),
        ("def g(boxes, box_scale: int = 1024):", "the box scale"),
    ]:
        assert _statements(line) == [name], line
    assert _statements("tau = TAU; iou_threshold = IOU_THRESHOLD; ks = RECALL_KS") == []


def test_conf_states_the_same_defaults():
    metrics = yaml.safe_load((ROOT / "conf" / "metrics" / "default.yaml").read_text())
    pko = yaml.safe_load((ROOT / "conf" / "pko" / "default.yaml").read_text())
    assert (metrics["tau"], metrics["iou_threshold"], metrics["protocol"]) == (
        defaults.TAU,
        defaults.IOU_THRESHOLD,
        defaults.PROTOCOL,
    )
    assert (pko["lam"], pko["eps"]) == (defaults.LAM, defaults.EPS)
    assert metrics["imr_k"] in defaults.IMR_KS
    for path in sorted((ROOT / "conf" / "dataset").glob("*.yaml")):
        conf = yaml.safe_load(path.read_text())
        assert conf.get("num_val_im", defaults.NUM_VAL_IM) == defaults.NUM_VAL_IM, path.name
        assert conf.get("box_scale", defaults.BOX_SCALE) == defaults.BOX_SCALE, path.name
    assert sorted(p.stem for p in (ROOT / "conf" / "task").glob("*.yaml")) == sorted(TASKS)
