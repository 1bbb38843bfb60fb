"""``io.processes.worker_pool``: an error in the block that feeds the pool ends it with close and join (the tasks
already queued run to their end, nothing hangs); only an interrupt terminates the workers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sgg_eval.io.processes import worker_pool


def _mark(path: str) -> str:
    time.sleep(0.05)  # still queued when the block raises
    Path(path).write_text("ran")
    return path


def test_an_error_lets_the_queued_tasks_end_then_closes(tmp_path):
    marks = [str(tmp_path / f"task{i}") for i in range(8)]
    with pytest.raises(ValueError, match="a bad image"):
        with worker_pool(2) as pool:
            for mark in marks:
                pool.apply_async(_mark, (mark,))
            raise ValueError("a bad image")
    # Pool.terminate would have killed the workers with tasks still queued
    assert all(Path(m).read_text() == "ran" for m in marks)


def test_an_interrupt_terminates(tmp_path):
    marks = [str(tmp_path / f"task{i}") for i in range(40)]
    with pytest.raises(KeyboardInterrupt):
        with worker_pool(2) as pool:
            for mark in marks:
                pool.apply_async(_mark, (mark,))
            raise KeyboardInterrupt
    assert not all(Path(m).exists() for m in marks)  # the queue was dropped, not worked through


def test_results_come_back_and_the_workers_exit():
    with worker_pool(2) as pool:
        results = [pool.apply_async(abs, (-i,)) for i in range(10)]
        assert [r.get() for r in results] == list(range(10))
        workers = list(pool._pool)
    assert all(not w.is_alive() for w in workers)
