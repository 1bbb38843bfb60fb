"""The sgg-eval CLI: help texts, split/stats commands, and bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from vg150_fixture import write_vg150_fixture

from sgg_eval.cli import main
from sgg_eval.data.store import SplitStore

pytestmark = pytest.mark.integration  # the command line end to end: not in `make test-fast`


@pytest.mark.parametrize("cmd", ["split", "stats", "evaluate", "simulate", "pko", "blind-replace", "params"])
def test_help_texts(cmd, capsys):
    assert main([cmd, "--help"]) == 0  # main returns the exit code; only `python -m` exits
    out = capsys.readouterr().out
    assert "usage: sgg-eval " + cmd in out
    if cmd != "params":
        assert "example" in out


def test_simulated_split_then_stats(tmp_path, capsys):
    assert main(["split", "--simulated", "--scale", "tiny", "-o", str(tmp_path / "splits")]) == 0
    assert "SIMULATED" in capsys.readouterr().out
    with SplitStore(tmp_path / "splits" / "test.h5") as s:
        assert len(s) == 150 and s.meta.simulated
    assert (
        main(
            [
                "stats",
                str(tmp_path / "splits/train.h5"),
                "--test",
                str(tmp_path / "splits/test.h5"),
                "-o",
                str(tmp_path / "stats.h5"),
                "--summary",
                str(tmp_path / "summary.json"),
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["simulated"] is True and summary["num_train_images"] == 400
    assert set(summary["predicates"]["on"]) == {"count", "num_pairs"}


def test_vg150_split_from_fixture(tmp_path):
    root = write_vg150_fixture(tmp_path / "vg")
    assert main(["split", "--vg150-dir", str(root), "--num-val-im", "2", "-o", str(tmp_path / "out")]) == 0
    with SplitStore(tmp_path / "out" / "test.h5") as s:
        assert [im.image_id for im in s] == [14, 17] and not s.meta.simulated


def test_bad_input_exits_2_with_one_line_and_no_output(tmp_path):
    def mutate(a):
        a["relationships"][0, 1] = 4  # the first relation points outside image 10

    root = write_vg150_fixture(tmp_path / "vg", mutate=mutate)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "sgg_eval.cli", "split", "--vg150-dir", str(root), "--num-val-im", "2", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "VG-SGG-with-attri.h5" in lines[0] and "image 10" in lines[0] and "'relationships'" in lines[0]
    # train was fine but val failed: no split file at all, and no temporary leftovers
    assert not out.exists() or list(out.iterdir()) == []


def test_missing_file_is_named(tmp_path, capsys):
    assert main(["stats", str(tmp_path / "nope.h5"), "-o", str(tmp_path / "s.h5")]) == 2
    err = capsys.readouterr().err
    assert "nope.h5: file not found" in err and not (tmp_path / "s.h5").exists()


def test_the_cli_offers_the_librarys_protocols_and_tasks():
    from sgg_eval import cli
    from sgg_eval.core import defaults
    from sgg_eval.core.tasks import TASKS

    actions = {a.dest: a for a in cli.build_parser()._subparsers._group_actions[0].choices["evaluate"]._actions}
    assert actions["protocol"].choices == [
        *defaults.PROTOCOLS,
        *defaults.PSG_PROTOCOLS,
        *defaults.TEXT_PROTOCOLS,
        *defaults.VIDEO_PROTOCOLS,
    ]
    assert tuple(actions["task"].choices) == TASKS
