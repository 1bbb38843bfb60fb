"""Run a parse in a short-lived forked child and keep only its result.

Parsing a large pickle allocates tens of MB of short-lived objects. Freed in this process, they leave its
allocators fragmented (pymalloc arenas pinned by a few later objects, partly used heap pages), and every
``--jobs`` worker forked afterwards copies those pages as it allocates: the heap of a run grew with the
size of the file even though what the parse keeps is a few arrays. In a child, the transient objects die
with it; the parent receives the result (this package's own objects: arrays, numbers and strings, pickled
by the child that built them; no file content is unpickled here) and never touches the parse's memory.
Where fork is unavailable the function runs in this process.
"""

from __future__ import annotations

import gc
import os
import pickle
import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def run_isolated(func: Callable[..., T], *args) -> T:
    """``func(*args)`` computed in a forked child; its result is returned, its exception re-raised here."""
    if not hasattr(os, "fork"):
        return func(*args)
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, leave without running the parent's exit handlers
        os.close(read_fd)
        # A parse allocates hundreds of thousands of short-lived containers and no cycle needs collecting
        # before the child exits: the cyclic collector would only rescan them (~7% of a parse).
        gc.disable()
        code = 0
        try:
            try:
                payload = pickle.dumps((True, func(*args)), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # noqa: BLE001 - every outcome goes back to the parent
                payload = _failure(exc)
            with os.fdopen(write_fd, "wb") as out:
                out.write(payload)
        except BaseException:  # noqa: BLE001 - the parent reports a child that sent nothing
            code = 1
        os._exit(code)
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as inp:
            payload = inp.read()
    finally:
        os.waitpid(pid, 0)
    if not payload:
        raise RuntimeError("the parsing process ended without a result")
    ok, value = pickle.loads(payload)
    if ok:
        return value
    raise value


def _failure(exc: BaseException) -> bytes:
    try:
        return pickle.dumps((False, exc), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - an exception that does not pickle is reported by its text
        return pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
