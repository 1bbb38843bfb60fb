"""`make bench` keeps working (a smoke run on a few images; the benchmark itself asserts no timing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

ROOT = Path(__file__).resolve().parents[1]


def bench(script: str, *args: str) -> str:
    """The standard output of ``scripts/<script>`` with ``args``, run as `make bench` runs it."""
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), *args], capture_output=True, text=True, check=True
    ).stdout


def test_bench_runs_the_users_command_on_every_task_in_both_layouts():
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/bench.py"),
            *("--images", "20", "--sgcls-images", "10", "--sgdet-images", "3"),
            *("--full", "--full-images", "4", "--jobs", "1,2", "--repeat", "1"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = out.splitlines()
    header = next(line.split() for line in lines if line.startswith("task"))
    rows = [line.split() for line in lines if line.split()[:1] in (["predcls"], ["sgcls"], ["sgdet"])]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (t, lay, n) for t, n in (("predcls", "20"), ("sgcls", "10"), ("sgdet", "3")) for lay in ("zip", "legacy")
    ]
    assert header[:8] == ["task", "layout", "images", "file", "MB", "floor", "s", "j1"]
    for r in rows:
        floor, one, two, speedup, with_gt = float(r[4]), float(r[5]), float(r[6]), r[7], float(r[8])
        assert floor > 0 and one > 0 and two > 0 and with_gt > 0, r
        assert abs(float(speedup.rstrip("x")) - one / two) < 0.02 * one / two + 0.01, r
        assert r[10] == "yes", r  # the metrics of --jobs 1, --jobs 2 and --gt are byte-identical
        heap, rss = float(r[11]), float(r[12])
        assert 0 < heap <= rss, r  # the heap is part of the RSS
        checks, share = float(r[13]), float(r[14].rstrip("%"))
        assert checks >= 0 and 0 <= share < 100, r  # the checks' own time inside a --jobs 1 run, and its share
    # the full-split mode: one whole run per --jobs value, with its wall time and peak RSS
    full = [line for line in lines if "--task sgdet --jobs" in line]
    assert [line.split("--jobs ")[1].split()[0] for line in full] == ["1", "2"]
    assert all(" s wall" in line and "peak RSS" in line for line in full)


def test_the_panoptic_bench_runs_both_modes_and_agrees_with_sgbench(tmp_path):
    """`scripts/bench_psg.py` on a tiny fixture: every mode and process count has a row, ours and the floor
    took time, and (when `make test` has installed sgbench's virtualenv) sgbench printed the values we did."""
    out = bench("bench_psg.py", "--test", "12", "--other", "20", "--repeat", "1", "--cache", str(tmp_path))
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["masks"], ["boxes"])]
    assert [(r[0], r[1]) for r in rows] == [(m, j) for m in ("masks", "boxes") for j in ("1", "2")]
    sgbench = (ROOT / ".venv-sgbench/bin/sgbench").exists()
    for r in rows:
        ours, floor = float(r[3]), float(r[4])
        assert ours > 0 and floor > 0, r
        assert r[-1] == ("yes" if sgbench else "-"), r


def test_the_oiv6_bench_runs_every_process_count(tmp_path):
    """`scripts/bench_oiv6.py` on a tiny fixture (PySGG's columns need its own Python: skipped here): a row per
    process count, ours and the floor took time, and the OIv6 records' share of the heap is reported."""
    out = bench("bench_oiv6.py", "--test", "30", "--detections", "5", "--repeat", "1", "--cache", str(tmp_path))
    assert "no --pysgg/--pysgg-python" in out
    table = out.split("procs", 1)[1].splitlines()[1:]  # below the header ("  1 s" above it is the fixture's time)
    rows = [line.split() for line in table if line.split()[:1] in (["1"], ["2"])]
    assert [r[0] for r in rows] == ["1", "2"]
    for r in rows:
        ours, floor = float(r[2]), float(r[3])
        assert ours > 0 and floor > 0 and r[-1] == "-", r


def test_the_openvocab_bench_runs_every_protocol(tmp_path):
    """`scripts/bench_openvocab.py` on a tiny fixture (the codebases' columns need a Python with torch: skipped
    here): a row per protocol and process count, ours and the floor took time."""
    out = bench("bench_openvocab.py", "--test", "30", "--detections", "5", "--repeat", "1", "--cache", str(tmp_path))
    assert "no --python and checkouts" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["ovsgtr"], ["vs3"], ["pgsg"])]
    assert [(r[0], r[1]) for r in rows] == [(p, j) for p in ("ovsgtr", "vs3", "pgsg") for j in ("1", "2")]
    for r in rows:
        ours, floor = float(r[3]), float(r[4])
        assert ours > 0 and floor > 0 and r[-1] == "-", r


def test_the_action_genome_bench_runs_every_constraint(tmp_path):
    """`scripts/bench_ag.py` on a tiny fixture (STTran's column needs a Python with torch: skipped here): the
    split, a row per constraint and the three at once, and the total."""
    out = bench("bench_ag.py", "--videos", "12", "--repeat", "1", "--cache", str(tmp_path))
    assert "Action Genome fixture:" in out and "split (pickles" in out
    for c in ("with", "semi", "no", "all"):
        assert f"evaluate --constraint {c}" in out
    assert "split + evaluate all" in out and "STTran's column is skipped" in out


def test_the_api_bench_times_every_task_and_finds_the_commands_numbers():
    """`scripts/bench_api.py` on a few images: a row per task, every time measured, and the Evaluator's
    metrics equal the command's (the row would say so otherwise)."""
    out = bench("bench_api.py", "--images", "40", "--repeat", "1")
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["predcls"], ["sgcls"], ["sgdet"])]
    assert [r[0] for r in rows] == ["predcls", "sgcls", "sgdet"], out
    for r in rows:
        assert len(r) == 6 and all(float(x) > 0 for x in r[2:]), r
