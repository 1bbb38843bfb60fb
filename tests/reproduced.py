"""The project as a user has it after the quick start, built once per test session and shared.

A fresh clone (the tracked files, a Git repository, this venv as its `.venv`, the simulated scale `tiny` in
`conf/`) in which the README's `make repro` ran, verbatim, and whose result was committed. Every module that
needs a reproduced project (the README's, the pipeline's, the parameter audit's, the DVC remote's, the real-PSG
run's) starts from a copy of it (:func:`copy_of`) instead of paying for its own pipeline run: the build is the
slowest thing a test does, and a copy takes a second.

Under pytest-xdist the first worker that asks builds it while the others wait on a file lock; the build is
never changed afterwards (each test works in its own copy). While `make repro` runs, SGG_EVAL_PARAMS_TRACE
records what every stage reads from params.yaml (tests/test_params_tracked.py reads the record)."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sgg_eval.pipeline.param_reads import ENV as TRACE_ENV

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)
# a shell with `. .venv/bin/activate` done
ACTIVE = {"PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(VENV)}


def shell_env() -> dict:
    """The environment of a user's shell: without the variables `make test` passes to its children (a nested
    make would print "Entering directory" lines a user never sees)."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}


def bash(command: str, cwd: Path, env: dict | None = None, timeout: float = 1200) -> tuple[int, str, str]:
    """``command`` in bash as a user's shell runs it: (exit status, stdout, stderr).

    Output goes into files, not pipes: a daemon a command leaves behind (`dvc queue start`'s) inherits them,
    and reading a pipe would wait for the daemon to end, not for the command."""
    full_env = {**shell_env(), "SGG_EVAL_PYTHON": sys.executable, **(env or {})}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.run(["bash", "-c", command], cwd=cwd, stdout=out, stderr=err, env=full_env, timeout=timeout)
        stdout, stderr = (f.seek(0) or f.read().decode("utf-8", "replace") for f in (out, err))
    return proc.returncode, stdout, stderr


def stage_name(addressing: str) -> str:
    """A stage as DVC addresses it (``per_model/dvc.yaml:evaluate@x``) -> its name (``evaluate@x``):
    names are unique across the pipeline's dvc.yaml files (tests/test_params_tracked.py checks it)."""
    return re.sub(r"^.*dvc\.yaml:", "", addressing)


def ran_stages(out: str) -> list[str]:
    """The stages DVC's output says it ran, in order, by name (:func:`stage_name`)."""
    return [stage_name(s) for s in re.findall(r"Running stage '([^']+)'", out)]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def fresh_clone(dst: Path, tiny: bool = True) -> Path:
    """The project's tracked (and new, not ignored) files as a fresh clone would have them, with this venv as
    its `.venv`, at the tiny simulated scale (``tiny``); committed. Its pyproject.toml and lock are dated
    before the venv's install stamp, so `make` does not reinstall into the shared venv."""
    files = git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0")
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dst / rel)  # modes too: stages/python is run as a program
    for rel in ("pyproject.toml", "requirements.lock"):
        os.utime(dst / rel, (0, 0))
    assert sys.prefix != sys.base_prefix, "the tests run in the project's venv"
    (dst / ".venv").symlink_to(VENV)
    if (ROOT / ".dvc/plots_offline.html").exists():  # else `make` builds it from npm (best effort)
        shutil.copy2(ROOT / ".dvc/plots_offline.html", dst / ".dvc/plots_offline.html")
    if tiny:
        for conf in (dst / "conf/dataset/vg150_sim.yaml", dst / "conf/psg_dataset/psg_sim.yaml"):
            conf.write_text(conf.read_text().replace("scale: default", "scale: tiny"))
    git(dst, "init", "-q")
    git(dst, "add", "-A")
    git(dst, "commit", "-q", "-m", "fresh clone")
    return dst


@dataclass(frozen=True)
class Reproduced:
    """The shared build: the project (read it, never change it), the params trace, `make repro`'s output."""

    project: Path
    trace: Path
    make_repro: str


def shared_root(basetemp: Path) -> Path:
    """The session's temporary folder that every xdist worker sees (a worker's own is one level below it)."""
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def reproduced(root: Path) -> Reproduced:
    """The shared build under ``root``: made by the first caller, waited for by the others."""
    shared = root / "reproduced"
    shared.mkdir(parents=True, exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even if the build fails
        if not (shared / "done").exists():
            _build(shared)
            (shared / "done").write_text("")
    return Reproduced(shared / "project", shared / "trace", (shared / "make_repro.out").read_text())


def _build(shared: Path) -> None:
    for stale in ("project", "trace"):  # a build that failed half-way
        shutil.rmtree(shared / stale, ignore_errors=True)
    project = fresh_clone(_mkdir(shared / "project"))
    status, stdout, stderr = bash("make repro", project, env={TRACE_ENV: str(_mkdir(shared / "trace"))})
    assert status == 0, f"make repro\n{stdout[-3000:]}{stderr[-3000:]}"
    (shared / "make_repro.out").write_text(stdout + stderr)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "reproduced")


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def copy_of(base: Reproduced, dst: Path) -> Path:
    """A copy of the reproduced project at ``dst`` (which must not exist), its own in every respect: hard links
    between DVC's cache and the workspace kept (`cp -a`), and its MLflow store's artifact folders moved with it
    (MLflow records them as absolute paths)."""
    subprocess.run(["cp", "-a", str(base.project), str(dst)], check=True)
    store = dst / "mlflow.db"
    if store.exists():
        old, new = f"{base.project}/", f"{dst}/"
        with sqlite3.connect(store) as db:
            db.execute("UPDATE experiments SET artifact_location = replace(artifact_location, ?, ?)", (old, new))
            db.execute("UPDATE runs SET artifact_uri = replace(artifact_uri, ?, ?)", (old, new))
        db.close()
    return dst
