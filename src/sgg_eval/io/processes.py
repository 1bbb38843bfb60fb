"""Every process sgg-eval starts, in one place: a short-lived forked child that computes one thing and hands back
its result (:func:`run_isolated`, :func:`start_isolated`), consecutive parts of a computation in such children
(:func:`in_parts`), and the pool of ``--jobs`` workers that rank blocks of images (:func:`worker_pool`).

Why a child for a parse:

Parsing a large pickle allocates tens of MB of short-lived objects. Freed in this process, they leave its
allocators fragmented (pymalloc arenas pinned by a few later objects, partly used heap pages), and every
``--jobs`` worker forked afterwards copies those pages as it allocates: the heap of a run grew with the
size of the file even though what the parse keeps is a few arrays. In a child, the transient objects die
with it; the parent receives the result (this package's own objects: arrays, numbers and strings, pickled
by the child that built them; no file content is unpickled here) and never touches the parse's memory.
Where fork is unavailable the function runs in this process. :func:`start_isolated` lets this process work
meanwhile.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.pool
import os
import pickle
import select
import signal
import sys
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from sgg_eval.core.errors import InputError

T = TypeVar("T")


def default_jobs() -> int:
    """Every core this process may use: the default of ``--jobs`` and of the pipeline's evaluation."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_isolated(func: Callable[..., T], *args, timeout: float | None = None) -> T:
    """``func(*args)`` computed in a forked child; its result is returned, its exception re-raised here (and
    ``TimeoutError`` after ``timeout`` seconds, the child killed)."""
    with start_isolated(func, *args) as running:
        return running.result(timeout)


class Isolated:
    """``func(*args)`` under way in a forked child (:func:`start_isolated`): this process may do other work
    meanwhile (open the GT split while the file parses) and takes the result with :meth:`result`. Leaving the
    ``with`` block without it stops the child: its pipe closes, so it never waits on a reader."""

    def __init__(self, func: Callable[..., T], args: tuple):
        self._pid, self._fd, self._func, self._args = None, None, func, args
        if not hasattr(os, "fork"):
            return
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, leave without running the parent's exit handlers
            os.close(read_fd)
            _child(write_fd, func, args)
        os.close(write_fd)
        self._pid, self._fd = pid, read_fd

    def result(self, timeout: float | None = None) -> T:
        """The child's result (or its exception, raised here); where fork is unavailable, computed now. With
        ``timeout`` (seconds), a child still working then is killed and ``TimeoutError`` raised: a library
        that spins on a damaged file (libhdf5 on a corrupt B-tree) cannot hang the command."""
        if self._pid is None:
            return self._func(*self._args)
        deadline = None if timeout is None else time.monotonic() + timeout
        chunks = []
        try:
            while True:
                if deadline is not None:
                    ready, _, _ = select.select([self._fd], [], [], max(0.0, deadline - time.monotonic()))
                    if not ready:
                        self._reap(stop=True)
                        raise TimeoutError(f"no result after {timeout:.0f} s")
                chunk = os.read(self._fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            self._reap()
        payload = b"".join(chunks)
        if not payload:
            raise RuntimeError("the parsing process ended without a result")
        ok, value = pickle.loads(payload)
        if ok:
            return value
        raise value

    def _reap(self, stop: bool = False) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._pid is not None:
            if stop:  # the result is not wanted (this process failed first): no need to wait for it
                os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            self._pid = None

    def __enter__(self) -> Isolated:
        return self

    def __exit__(self, *exc) -> None:
        self._reap(stop=True)


def start_isolated(func: Callable[..., T], *args) -> Isolated:
    """Start ``func(*args)`` in a forked child (see :class:`Isolated`); use it in a ``with`` block."""
    return Isolated(func, args)


def in_parts(compute: Callable[[int], T], count: int, jobs: int, *, least: int = 64) -> Iterator[T]:
    """``compute(0)``, ..., ``compute(count - 1)`` in order, ``jobs`` consecutive parts computed at once: the
    first here, each other in a forked child (results pickled back), when every part has ``least`` items
    (otherwise all here). An ``InputError`` is raised where a serial loop meets it: a child stops at its first
    and hands over what it computed before, which is yielded first, so the caller sees every earlier result
    (and may refuse one of those first). Closing the iterator early stops the children. Where fork is
    unavailable, :class:`Isolated` computes each part here when its result is asked for: the same results."""
    jobs = max(1, min(jobs, count // least))
    bounds = [count * k // jobs for k in range(jobs + 1)]
    with contextlib.ExitStack() as stack:
        parts = zip(bounds[1:], bounds[2:])
        running = [stack.enter_context(start_isolated(_part, compute, lo, hi)) for lo, hi in parts]
        for k in range(bounds[1]):
            yield compute(k)
        for part in running:
            results, error = part.result()
            yield from results
            if error is not None:
                raise error


def _part(compute: Callable[[int], T], start: int, stop: int) -> tuple[list[T], InputError | None]:
    results = []
    try:
        for k in range(start, stop):
            results.append(compute(k))
    except InputError as exc:
        return results, exc
    return results, None


def _child(write_fd: int, func: Callable, args: tuple) -> None:
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
    except BaseException:  # noqa: BLE001 - the parent reports a child that sent nothing (or stopped reading)
        code = 1
    os._exit(code)


def _failure(exc: BaseException) -> bytes:
    try:
        return pickle.dumps((False, exc), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - an exception that does not pickle is reported by its text
        return pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))


@contextlib.contextmanager
def worker_pool(
    jobs: int, initializer: Callable | None = None, initargs: tuple = ()
) -> Iterator[multiprocessing.pool.Pool]:
    """A pool of ``jobs`` worker processes, forked where the platform can (the workers inherit the imported modules
    and what ``initializer`` set up, with no re-import and no pickling), else spawned.

    It ends with ``close`` and ``join``, also when the block raises an ``Exception`` (a bad image, a worker's
    error): the tasks already queued run to their end, then the workers exit. ``Pool.terminate`` (what
    ``with Pool(...)`` does) can hang forever: its task-feeding thread, blocked putting a task on the queue to
    workers it has just killed, is joined and never returns (seen under ``make test``, in
    ``test_cli_evaluate``). Only an interrupt (Ctrl-C, ``SystemExit``) terminates, as the workers may be gone."""
    method = "fork" if can_fork() else "spawn"
    pool = multiprocessing.get_context(method).Pool(jobs, initializer=initializer, initargs=initargs)
    try:
        yield pool
    except Exception:
        pool.close()
        pool.join()
        raise
    except BaseException:
        pool.terminate()
        raise
    pool.close()
    pool.join()


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()
