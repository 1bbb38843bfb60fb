"""What a killed process leaves behind, and how the next one clears it without an operator.

Each process that writes scratch files (the web server's incoming uploads, a worker's evaluations) writes them under
a folder named after itself, ``host:pid``. A process that starts removes the folders of this machine's processes that
no longer run; a folder of another machine (a shared home at scale) is that machine's to clear. An upload is stored
under ``uploads/`` inside the transaction that records it; a web server killed between the two leaves a file no
submission names, which :func:`sweep_unreferenced` removes once it is older than any transaction can last. Children
(the local worker, an evaluation) die with the process that started them (:func:`die_with_parent`), so killing the
service never leaves an evaluation running with nobody to read it."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import time
from pathlib import Path

# an unreferenced upload younger than this may belong to a transaction still open on another web server
UNREFERENCED_AFTER_S = 600
_PR_SET_PDEATHSIG = 1
try:  # loaded here, not in a forked child, where the loader's lock may be held by another thread
    _LIBC = ctypes.CDLL(None, use_errno=True)
except OSError:
    _LIBC = None


def process_id() -> str:
    """This process, as the service names it: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def is_dead(process: str) -> bool:
    """Whether ``process`` (``host:pid``) is a process of this machine that no longer runs (gone, or a zombie that
    nobody has reaped yet). A process of another machine, or a name that is not one, is never called dead: nothing
    of another machine's is touched."""
    host, _, pid = process.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it runs, as another user
        return False
    try:  # the state after the command's name in parentheses: Z (zombie) or X (dead)
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("Z", "X")


def own_folder(parent: Path) -> Path:
    """This process's scratch folder under ``parent`` (made)."""
    folder = parent / process_id()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def sweep_dead(parent: Path) -> list[str]:
    """Remove the scratch folders under ``parent`` of this machine's processes that no longer run; their names."""
    removed = []
    for entry in sorted(parent.iterdir()) if parent.is_dir() else []:
        if is_dead(entry.name):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed


def sweep_unreferenced(folder: Path, referenced: set[str], now: float | None = None) -> list[str]:
    """Remove the files under ``folder`` whose path relative to it is not in ``referenced`` and that are older
    than :data:`UNREFERENCED_AFTER_S`; their relative paths."""
    cutoff = (time.time() if now is None else now) - UNREFERENCED_AFTER_S
    removed = []
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        name = path.relative_to(folder).as_posix()
        if path.is_file() and name not in referenced and path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)
            removed.append(name)
    return removed


def die_with_parent() -> None:
    """In a child before it runs (``preexec_fn``): Linux sends it SIGKILL when the thread that started it ends, so a
    worker or a web server killed with SIGKILL takes its children with it. Elsewhere, nothing."""
    prctl = getattr(_LIBC, "prctl", None)
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
