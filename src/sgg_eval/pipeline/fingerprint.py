"""Content fingerprints of files the pipeline reads but does not produce (a real model's prediction files).

DVC reruns a stage when a dependency's content changes, but a real model's files are named in
``params.yaml``, not listed in ``dvc.yaml``; regenerating one at the same path left the old metrics in place.
The ``model_files`` stage therefore writes one JSON with each file's size and SHA-256, and every stage that
reads prediction files depends on that JSON: new content, new JSON, the stages rerun.

Hashing a 30 GB SGDet file takes a while, so a side cache keyed by (device, inode, size, mtime) reuses a
hash while the file is untouched, as DVC itself does. The cache never enters the JSON, which holds only
content (identical on every machine).
"""

from __future__ import annotations

import hashlib
import json
import os

from sgg_eval.atomic import write_json
from sgg_eval.errors import InputError

CHUNK = 8 << 20


def _stat_key(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def sha256_of(path: str) -> str:
    """SHA-256 of the file's bytes, read in 8 MiB chunks (memory stays flat)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _read_cache(path: str | None) -> dict:
    """The side cache, or an empty one if it is missing or unreadable (it only saves time)."""
    if path is None or not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            cache = json.load(fh)
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) else {}


def fingerprints(files: dict[str, str], cache_path: str | None = None) -> dict[str, dict]:
    """``{label: {"path", "bytes", "sha256"}}`` for ``files`` (label -> path), in label order.

    A missing path or a directory is an :class:`InputError` naming the label (e.g. ``models.m.files.sgdet``).
    """
    cache, fresh = _read_cache(cache_path), {}
    out = {}
    for label in sorted(files):
        path = files[label]
        if not os.path.isfile(path):
            what = "is a directory, not a file" if os.path.isdir(path) else "file not found"
            raise InputError(what, path=path, field=label)
        real = os.path.realpath(path)
        key = _stat_key(os.stat(real))
        hit = cache.get(real)
        digest = hit["sha256"] if isinstance(hit, dict) and hit.get("stat") == key else sha256_of(real)
        fresh[real] = {"stat": key, "sha256": digest}
        out[label] = {"path": path, "bytes": os.path.getsize(real), "sha256": digest}
    if cache_path is not None and fresh != cache:
        write_json(cache_path, fresh)  # only the files in use: no entry outlives its file
    return out
