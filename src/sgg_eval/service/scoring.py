"""One evaluation of one submission: ``sgg-eval evaluate`` in a child process of its own, with a memory limit
(``RLIMIT_AS``) and a time limit, so a hostile or huge file can take down neither the worker nor the machine. The
outcome is the command's JSON, or the one line it printed when it refused the file."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sgg_eval.service.leftovers import die_with_parent


@dataclass(frozen=True)
class Outcome:
    """``document``: the metrics JSON when the command succeeded; else ``message``, the line to show the owner."""

    document: dict | None
    message: str = ""


def evaluate_in_child(
    path: Path, arguments: list[str], *, memory_mb: int, timeout_s: float, scratch: Path, shown_as: str | None = None
) -> Outcome:
    """``sgg-eval evaluate path *arguments -o ...`` under the limits; one process, one core (``--jobs 1``). The
    message names the file ``shown_as`` (the name it was uploaded as), not where the server keeps it. Its files go
    in a folder under ``scratch``, removed afterwards; the child dies with the thread that started it."""
    with tempfile.TemporaryDirectory(prefix="score-", dir=scratch) as tmp:
        out = Path(tmp) / "metrics.json"
        command = [sys.executable, "-m", "sgg_eval.cli", "evaluate", str(path), *arguments, "-j", "1", "-o", str(out)]
        limit = memory_mb * 2**20

        def limits() -> None:  # in the child, before it starts
            die_with_parent()
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        env = {k: v for k, v in os.environ.items() if not k.startswith("SGG_EVAL_SERVICE")}
        child = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=tmp,
            env=env,
            preexec_fn=limits,
            start_new_session=True,  # its own process group: a timeout stops it and anything it started
        )
        try:
            _, err = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return Outcome(None, f"the evaluation took longer than the limit of {timeout_s:g} s and was stopped")
        lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
        if child.returncode == 0:
            return Outcome(json.loads(out.read_text()))
        if child.returncode < 0:
            return Outcome(
                None, f"the evaluation was stopped by signal {-child.returncode} (memory limit {memory_mb} MB)"
            )
        # exit 2: the line naming the file, image and field; exit 1: the command's line for its own bug
        line = lines[-1] if lines else f"sgg-eval evaluate exited with status {child.returncode}"
        return Outcome(None, line.replace(str(path), shown_as or path.name))
