"""Write failures (issue 9): a full disk for every writer gives one clear line and exit 2, leaves no temporary
file and keeps the previous output intact. HDF5 writers are refused *before* h5py hits the full disk (it
crashes the interpreter closing a file it cannot flush); text writers clean up after the failed write."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import pytest
from test_bad_inputs import world  # noqa: F401  (the shared small world fixture)

from sgg_eval.cli import main

pytestmark = pytest.mark.integration  # the command line end to end: not in `make test-fast`

Usage = namedtuple("Usage", "total used free")


def _no_space(monkeypatch):
    monkeypatch.setattr("sgg_eval.io.atomic.shutil.disk_usage", lambda p: Usage(10**9, 10**9, 0))


def _check(capsys, code: int, folder: Path, old: dict) -> None:
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "no space left" in err and "Traceback" not in err, err
    assert not [p for p in folder.rglob("*") if ".tmp-" in p.name], list(folder.rglob("*"))
    for path, data in old.items():
        assert path.read_bytes() == data


def _old_outputs(*paths: Path) -> dict:
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"previous result")
    return {p: p.read_bytes() for p in paths}


def test_split_store_writer_on_a_full_disk(monkeypatch, tmp_path, capsys):
    out = tmp_path / "splits"
    old = _old_outputs(out / "train.h5", out / "test.h5")
    _no_space(monkeypatch)
    _check(
        capsys, main(["split", "--simulated", "--scale", "tiny", "--splits", "train,test", "-o", str(out)]), out, old
    )


def test_statistics_writer_on_a_full_disk(world, monkeypatch, tmp_path, capsys):  # noqa: F811
    root, _ = world
    old = _old_outputs(tmp_path / "stats.h5")
    _no_space(monkeypatch)
    _check(capsys, main(["stats", str(root / "test.h5"), "-o", str(tmp_path / "stats.h5")]), tmp_path, old)


def test_prediction_store_writer_on_a_full_disk(world, monkeypatch, tmp_path, capsys):  # noqa: F811
    root, _ = world
    old = _old_outputs(tmp_path / "pko.h5")
    _no_space(monkeypatch)
    code = main(
        [
            "pko",
            str(root / "pred.h5"),
            "--gt",
            str(root / "test.h5"),
            "--stats",
            str(root / "stats.h5"),
            "--task",
            "predcls",
            "-o",
            str(tmp_path / "pko.h5"),
        ]
    )
    _check(capsys, code, tmp_path, old)


def _enospc_after_partial_write(monkeypatch):
    real = Path.write_text

    def failing(self, text, *args, **kwargs):
        real(self, text[: len(text) // 2], *args, **kwargs)  # half written, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))

    monkeypatch.setattr(Path, "write_text", failing)


def test_json_writer_on_a_full_disk(world, monkeypatch, tmp_path, capsys):  # noqa: F811
    root, _ = world
    old = _old_outputs(tmp_path / "m.json")
    _enospc_after_partial_write(monkeypatch)
    code = main(
        [
            "evaluate",
            str(root / "pred.h5"),
            "--gt",
            str(root / "test.h5"),
            "--task",
            "predcls",
            "-o",
            str(tmp_path / "m.json"),
        ]
    )
    _check(capsys, code, tmp_path, old)


def test_params_writer_on_a_full_disk(monkeypatch, tmp_path, capsys):
    old = _old_outputs(tmp_path / "params.yaml")
    _enospc_after_partial_write(monkeypatch)
    conf = Path(__file__).resolve().parents[1] / "conf"
    _check(capsys, main(["params", "--conf-dir", str(conf), "-o", str(tmp_path / "params.yaml")]), tmp_path, old)


def test_a_real_full_file_system(world, tmp_path):  # noqa: F811
    """Where the test may mount a 300 kB tmpfs (root in a container), fill it for real: no segfault."""
    root, _ = world
    mnt = tmp_path / "full"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or shutil.which("mount") is None
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mnt)], capture_output=True
        ).returncode
    ):
        pytest.skip("cannot mount a small tmpfs here (the injected full-disk tests above still run)")
    try:
        (mnt / "stats.h5").write_bytes(b"previous result")
        proc = subprocess.run(
            [sys.executable, "-m", "sgg_eval.cli", "split", "--simulated", "--scale", "tiny", "-o", str(mnt)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2, proc.stderr
        assert "no space left" in proc.stderr and "Traceback" not in proc.stderr
        assert sorted(p.name for p in mnt.iterdir()) == ["stats.h5"]
        assert (mnt / "stats.h5").read_bytes() == b"previous result"
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
