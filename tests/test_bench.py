"""`make bench` keeps working (a smoke run on a few images; the benchmark itself asserts no timing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # `make test-fast` leaves it out

ROOT = Path(__file__).resolve().parents[1]


def test_bench_measures_every_task_in_both_layouts():
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/bench.py"),
            "--images",
            "20",
            "--sgdet-images",
            "3",
            "--full-sgdet",
            "4",
            "--jobs",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["predcls"], ["sgcls"], ["sgdet"])]
    # every task in both layouts, then the SGDet file written as a stream
    assert [(r[0], r[1]) for r in rows] == [
        (t, lay) for t in ("predcls", "sgcls", "sgdet") for lay in ("zip", "legacy")
    ] + [("sgdet", "zip")]
    assert rows[-1][2] == "4"
    for r in rows:
        assert float(r[4]) >= 0 and float(r[5]) > 0 and r[6].endswith("x"), r
        assert 0 < float(r[9]) <= float(r[10]) and float(r[8]) > 0, r  # the heap is part of the RSS
