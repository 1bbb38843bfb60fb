"""Outputs are written atomically (a temporary file renamed onto the target), except onto a target that is not
a regular file, such as ``/dev/null`` or a FIFO: it is written through, never replaced by a file."""

from __future__ import annotations

import os
import stat
import threading

from sgg_eval.io.atomic import write_json, write_text


def test_a_regular_target_is_replaced_whole(tmp_path):
    target = tmp_path / "m.json"
    target.write_text("old")
    write_json(target, {"R@50": 0.5})
    assert target.read_text() == '{\n  "R@50": 0.5\n}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no temporary file left beside it


def test_a_fifo_target_is_written_through_not_replaced(tmp_path):
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_text(fifo, "metrics\n")
    reader.join(timeout=10)
    assert got == [b"metrics\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still the FIFO, not a regular file renamed over it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
