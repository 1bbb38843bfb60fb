"""The fuzzer's reduced form (``make fuzz`` runs the long one): a few hundred mutated inputs of every format
through the real CLI; any case outside refused / same / valid fails, with the table and the cases."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))

import fuzz  # noqa: E402
from mutations import byte_mutation, json_mutation, yaml_mutation  # noqa: E402

CASES = int(os.environ.get("SGG_EVAL_FUZZ_CASES", "300"))


def test_mutated_inputs_are_refused_or_read_right():
    results = fuzz.fuzz(CASES, seed=0, jobs=os.cpu_count() or 1, timeout=30.0, quiet=True)
    assert len(results) == CASES
    bad = [r for r in results if r.cls not in fuzz.OK_CLASSES]
    assert not bad, (
        fuzz.table(results)
        + "\n"
        + "\n".join(f"{r.cls} {r.target} {r.command}: {r.mutation} -> {r.detail}" for r in bad[:20])
    )
    targets = {r.target for r in results}
    assert targets == {t.name for t in fuzz.TARGETS}  # every format was mutated
    assert {r.cls for r in results} >= {"refused", "same"}


def test_the_classifier_can_fail(tmp_path):
    """A run that exits 0 with other outputs after a corrupting mutation is SILENT; exit 1 is internal; a
    refusal that leaves a file behind is leftover; two lines on a refusal are unclean."""
    (tmp_path / ".stderr").write_text("")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "m.json").write_text("{}")
    before = {}
    assert fuzz.classify(0, None, tmp_path, before, {"out/m.json": "x"}, True)[0] == "SILENT"
    assert fuzz.classify(0, None, tmp_path, before, {"out/m.json": "x"}, False)[0] == "valid"
    (tmp_path / ".stderr").write_text("WARNING: 1 image absent\n")  # as the unmutated run warned: no excuse
    assert (
        fuzz.classify(0, None, tmp_path, before, {"out/m.json": "x"}, True, "WARNING: 1 image absent\n")[0] == "SILENT"
    )
    assert fuzz.classify(0, None, tmp_path, before, {"out/m.json": "x"}, True, "")[0] == "valid"
    (tmp_path / ".stderr").write_text("")
    assert fuzz.classify(2, None, tmp_path, before, None, True)[0] == "leftover"
    (tmp_path / "out" / "m.json").unlink()
    (tmp_path / ".stderr").write_text("sgg-eval: error: a\nsecond line\n")
    assert fuzz.classify(2, None, tmp_path, before, None, True)[0] == "unclean"
    (tmp_path / ".stderr").write_text("sgg-eval: internal error ...\n")
    assert fuzz.classify(1, None, tmp_path, before, None, True)[0] == "internal"
    assert fuzz.classify(None, None, tmp_path, before, None, True)[0] == "hang"
    assert fuzz.classify(None, 11, tmp_path, before, None, True)[0] == "signal"


def test_a_hanging_command_is_killed_and_counted(tmp_path):
    code, sig, seconds = fuzz.run_case(tmp_path, ("@sleep",), timeout=1.0)
    assert (code, sig) == (None, None) and seconds == pytest.approx(1.0, abs=0.5)


def test_mutators_change_their_input():
    import random

    rnd = random.Random(5)
    data = bytes(range(256)) * 4
    assert all(byte_mutation(rnd, data)[0] != data for _ in range(50))
    doc, what, _ = json_mutation(rnd, {"a": [1, 2, {"b": 3}]})
    assert doc != {"a": [1, 2, {"b": 3}]}, what
    text, what, _ = yaml_mutation(rnd, "a: 1\nb: x\n")
    assert text != "a: 1\nb: x\n", what
