"""Atomic output: write to a temporary file beside the target, rename only when everything succeeded.

A crash or a bad input therefore never leaves a half-written output behind, and a reader never sees one.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


@contextlib.contextmanager
def atomic_outputs(paths: Sequence[str | os.PathLike]) -> Iterator[list[Path]]:
    """Yield temporary paths for ``paths``; on success rename each onto its target, on error delete them all."""
    targets = [Path(p) for p in paths]
    temps = [_tmp_name(t) for t in targets]
    for t in targets:
        t.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield temps
    except BaseException:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, target in zip(temps, targets):
        os.replace(tmp, target)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """Single-file form of :func:`atomic_outputs`."""
    with atomic_outputs([path]) as (tmp,):
        yield tmp


def write_json(path: str | os.PathLike, obj) -> None:
    """Write deterministic JSON (sorted keys, fixed indentation, trailing newline) atomically."""
    text = json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n"
    with atomic_output(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
