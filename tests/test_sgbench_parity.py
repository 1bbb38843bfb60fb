"""Parity with the tool itself: the ``sgbench`` 1.0.0 command, run from its own virtualenv (``.venv-sgbench``,
made by ``make test``; it pins numpy < 2), on generated PSG-like files, against ``--protocol sgbench``: every
value it prints, within 1e-12. The fixture uses the one instance spelling sgbench reads (``annotation``)
and, in box mode, at least one instance per image (sgbench fails on an image without one)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from psg_fixture import write_psg_fixture

from sgg_eval.panoptic.evaluate import run_psg_evaluation

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

SGBENCH = Path(__file__).resolve().parents[1] / ".venv-sgbench" / "bin" / "sgbench"
OURS = {"PRank": "PRk"}  # sgbench's key -> ours


def _sgbench(*args: str) -> dict[str, float]:
    if not SGBENCH.exists():
        pytest.fail(f"{SGBENCH} is missing: `make .venv-sgbench` (make test does) installs sgbench 1.0.0 there")
    out = subprocess.run([str(SGBENCH), *args], capture_output=True, text=True, check=True).stdout
    return {OURS.get(k, k): float(v) for k, v in (line.split(": ") for line in out.splitlines())}


@pytest.mark.parametrize("seed", [5, 6, 7])
@pytest.mark.parametrize("masks", [True, False])
def test_protocol_sgbench_equals_what_sgbench_prints(tmp_path, seed, masks):
    files = write_psg_fixture(
        tmp_path, seed=seed, test=40, other=8, spellings=("annotation",), min_false=0 if masks else 1
    )
    if masks:
        theirs = _sgbench(str(files["psg"]), str(files["zip"]), "--gt-masks", str(files["root"]))
    else:
        theirs = _sgbench(str(files["psg"]), str(files["json"]))
    ours = run_psg_evaluation(
        str(files["zip"] if masks else files["json"]), str(files["psg"]), str(files["root"]), jobs=2
    )["metrics"]
    assert len(theirs) == 8
    for key, value in theirs.items():
        if value != value:  # NaN: a predicate never present; ours is null
            assert ours[key] is None, key
        else:
            assert ours[key] == pytest.approx(value, abs=1e-12, rel=0), (key, ours[key], value)
    assert theirs["R@20"] != theirs["R@100"]  # the K cut-offs bind: the lists are long enough


def test_a_predicate_never_in_the_gt_is_nan_there_and_null_here(tmp_path):
    files = write_psg_fixture(tmp_path, seed=8, test=20, spellings=("annotation",), unused_predicates=1)
    theirs = _sgbench(str(files["psg"]), str(files["zip"]), "--gt-masks", str(files["root"]))
    ours = run_psg_evaluation(str(files["zip"]), str(files["psg"]), str(files["root"]))
    assert theirs["mR@20"] != theirs["mR@20"] and ours["metrics"]["mR@20"] is None
    assert ours["metrics"]["R@20"] == pytest.approx(theirs["R@20"], abs=1e-12)
    assert any("mR-type metrics are undefined" in note for note in ours["notes"])


def test_sgbench_reads_what_psg_pack_writes(tmp_path):
    from test_psg_pack import unpack

    from sgg_eval.cli import main

    files = write_psg_fixture(tmp_path, seed=9, test=30, spellings=("annotation",))
    preds, masks = unpack(files, tmp_path / "in")
    assert main(["psg-pack", str(preds), str(masks), "-o", str(tmp_path / "packed.zip")]) == 0
    theirs = _sgbench(str(files["psg"]), str(tmp_path / "packed.zip"), "--gt-masks", str(files["root"]))
    ours = run_psg_evaluation(str(tmp_path / "packed.zip"), str(files["psg"]), str(files["root"]))["metrics"]
    original = _sgbench(str(files["psg"]), str(files["zip"]), "--gt-masks", str(files["root"]))
    assert theirs == original
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-12, rel=0) if value == value else ours[key] is None, key


@pytest.mark.parametrize("masks", [True, False])
def test_the_same_instances_under_two_spellings_give_sgbenchs_numbers(tmp_path, masks):
    """A file written for sgbench's code (`annotation`) and the paper (`instances`) at once: sgbench reads the
    first; sgg-eval reads both, checks they agree and gives the same numbers."""
    import json
    import zipfile

    from test_psg import _edit_submission

    files = write_psg_fixture(
        tmp_path, seed=10, test=30, other=8, spellings=("annotation",), min_false=0 if masks else 1
    )

    def both(doc, _members=None):
        for image in doc["images"]:
            image["instances"] = [dict(i) for i in image["annotation"]]

    if masks:
        sub = _edit_submission(files, tmp_path, both, "both.zip")
        theirs = _sgbench(str(files["psg"]), str(sub), "--gt-masks", str(files["root"]))
    else:
        doc = json.loads(files["json"].read_text())
        both(doc)
        sub = tmp_path / "both.json"
        sub.write_text(json.dumps(doc))
        theirs = _sgbench(str(files["psg"]), str(sub))
    ours = run_psg_evaluation(str(sub), str(files["psg"]), str(files["root"]))["metrics"]
    assert len(theirs) == 8
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-12, rel=0) if value == value else ours[key] is None, key
    if masks:
        assert "instances" in json.loads(zipfile.ZipFile(sub).read("triplets.json"))["images"][0]
