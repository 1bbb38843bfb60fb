"""Atomic output: write to a temporary file beside the target, rename only when everything succeeded.

A crash or a bad input therefore never leaves a half-written output behind, and a reader never sees one.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from sgg_eval.core.errors import InputError, os_error_reason

# Free space kept in reserve below every HDF5 write. h5py crashes the interpreter (segmentation fault) when a
# file it is closing cannot be flushed, so we refuse a write that might not fit instead of letting it fail.
SPACE_MARGIN = 8 << 20


def ensure_space(path: str | os.PathLike, nbytes: int) -> None:
    """Raise ``OSError(ENOSPC)`` unless the file system of ``path`` has ``nbytes`` plus a margin free."""
    free = shutil.disk_usage(Path(path).parent).free
    if free < nbytes + SPACE_MARGIN:
        raise OSError(
            errno.ENOSPC,
            f"no space left on the device (about {(nbytes + SPACE_MARGIN) >> 20} MiB needed, {free >> 20} MiB free)",
            str(path),
        )


def _tmp_name(path: Path) -> Path:
    if _special(path):  # e.g. /dev/null: nothing may be created beside it
        return Path(tempfile.gettempdir()) / f".sgg-eval-{path.name}.tmp-{os.getpid()}"
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def _special(path: Path) -> bool:
    """An existing target that is not a regular file or a folder (``/dev/null``, a FIFO, ``/dev/stdout``): it
    is written through, never renamed over (as root, a rename would replace the device with a file)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _commit(tmp: Path, target: Path) -> None:
    if _special(target):
        with open(tmp, "rb") as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out)
        tmp.unlink()
    else:
        os.replace(tmp, target)


@contextlib.contextmanager
def atomic_outputs(paths: Sequence[str | os.PathLike]) -> Iterator[list[Path]]:
    """Yield temporary paths for ``paths``; on success rename each onto its target. On any failure (the
    body's, or a rename's) every temporary file is removed and the existing targets are left as they were."""
    targets = [Path(p) for p in paths]
    made: list[Path] = []  # folders created here, removed again (if still empty) when the write fails
    try:
        for t in targets:
            if t.is_dir():
                raise InputError("is a directory; give a file name for the output", path=str(t))
            made += [d for d in reversed(t.parent.absolute().parents) if not d.exists()]
            made += [] if t.parent.exists() else [t.parent.absolute()]
            try:
                t.parent.mkdir(parents=True, exist_ok=True)
                ensure_space(t, 0)  # the margin, before libhdf5 opens a file it may not be able to close
            except OSError as exc:
                raise InputError(f"cannot write here: {os_error_reason(exc)}", path=str(t)) from None
    except BaseException:
        _remove_empty(made)
        raise
    temps = [_tmp_name(t) for t in targets]
    try:
        yield temps
        for tmp, target in zip(temps, targets):
            _commit(tmp, target)
    except BaseException as exc:
        for tmp in temps:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        _remove_empty(made)
        if isinstance(exc, OSError):  # named as the user's output, not our temporary file beside it
            target = next((t for t, tmp in zip(targets, temps) if tmp.name in str(exc)), targets[0])
            raise InputError(f"cannot write: {os_error_reason(exc)}", path=str(target)) from None
        raise


def _remove_empty(folders: list[Path]) -> None:
    for folder in sorted(set(folders), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """Single-file form of :func:`atomic_outputs`."""
    with atomic_outputs([path]) as (tmp,):
        yield tmp


def write_json(path: str | os.PathLike, obj) -> None:
    """Write deterministic JSON (sorted keys, fixed indentation, trailing newline) atomically."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n")


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write UTF-8 text atomically."""
    with atomic_output(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
