"""One evaluation of one submission: ``sgg-eval evaluate`` in a child process of its own, with a memory limit
(``RLIMIT_AS``) and a time limit, so a hostile or huge file can take down neither the worker nor the machine. The
outcome is the command's JSON, or the one line it printed when it refused the file.

The child is forked from a server process (multiprocessing's ``forkserver``) that has already imported the command
and its readers, as the project's fuzzer runs the command: a child starts in milliseconds instead of paying
Python's and numpy's start-up (about 0.3 s) for every file. The server is single-threaded, so forking it is safe
beside the worker's threads; each child is a fresh copy of it, so one evaluation never sees another's state."""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import runpy
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sgg_eval.service.leftovers import die_with_parent

# what `sgg-eval evaluate` imports for every product: imported once, in the server the children are forked from
PRELOAD = [
    "numpy",
    "h5py",
    "sgg_eval.cli",
    "sgg_eval.cli.evaluate",
    "sgg_eval.boxes.evaluate",
    "sgg_eval.panoptic.evaluate",
    "sgg_eval.panoptic.sgbench_submission",
    "sgg_eval.data.store",
    "numpy.ma",
    "importlib.resources.readers",
    "sgg_eval.service.scoring",
]
_context = None


@dataclass(frozen=True)
class Outcome:
    """``document``: the metrics JSON when the command succeeded; else ``message``, the line to show the owner."""

    document: dict | None
    message: str = ""


def _forkserver():
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def _child(argv: list[str], folder: str, memory_bytes: int) -> None:
    """In the forked child: its own process group, dying with the server it was forked from, the memory limit,
    stdout and stderr into files of ``folder``, none of the service's settings; then the command."""
    os.setsid()  # its own process group: a timeout stops it and anything it started
    die_with_parent()
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    os.chdir(folder)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(handle, fd)
        os.close(handle)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 (the process ends below)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    for key in [k for k in os.environ if k.startswith("SGG_EVAL_SERVICE")]:
        del os.environ[key]
    code, sys.argv = 1, ["sgg-eval", *argv]
    try:  # the command run as its program runs (`python -m sgg_eval.cli`), its modules already imported
        runpy.run_module("sgg_eval.cli", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - what the command's own process would print, as its last line
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def evaluate_in_child(
    path: Path, arguments: list[str], *, memory_mb: int, timeout_s: float, scratch: Path, shown_as: str | None = None
) -> Outcome:
    """``sgg-eval evaluate path *arguments -o ...`` under the limits; one process, one core (``--jobs 1``). The
    message names the file ``shown_as`` (the name it was uploaded as), not where the server keeps it. Its files go
    in a folder under ``scratch``, removed afterwards; the child dies with the worker that asked for it."""
    with tempfile.TemporaryDirectory(prefix="score-", dir=scratch) as tmp:
        out = Path(tmp) / "metrics.json"
        argv = ["evaluate", str(path), *arguments, "-j", "1", "-o", str(out)]
        child = _forkserver().Process(target=_child, args=(argv, tmp, memory_mb * 2**20), daemon=False)
        child.start()
        child.join(timeout_s)
        if child.exitcode is None:
            child.kill()  # itself first: it may not have made its process group yet
            _kill_group(child.pid)
            child.join()
            return Outcome(None, f"the evaluation took longer than the limit of {timeout_s:g} s and was stopped")
        _kill_group(child.pid)  # anything it may have left
        err = (Path(tmp) / "stderr").read_bytes() if (Path(tmp) / "stderr").exists() else b""
        lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
        if child.exitcode == 0:
            return Outcome(json.loads(out.read_text()))
        if child.exitcode < 0:
            return Outcome(
                None, f"the evaluation was stopped by signal {-child.exitcode} (memory limit {memory_mb} MB)"
            )
        # exit 2: the line naming the file, image and field; exit 1: the command's line for its own bug
        line = lines[-1] if lines else f"sgg-eval evaluate exited with status {child.exitcode}"
        return Outcome(None, line.replace(str(path), shown_as or path.name))


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
