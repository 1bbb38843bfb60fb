"""Content fingerprints of the prediction files stages read, one small JSON per (model or entry, task).

DVC reruns a stage when a dependency's content changes, but a real model's files are named in ``conf/model``,
not listed in ``dvc.yaml``, and a stage of a ``matrix`` can only name files by its item. So:

- ``check_params`` links every real model file into ``data/params/model_links`` (DVC follows the links, so a
  file rewritten in place changes that folder's hash);
- ``model_files`` writes ``data/model_files/<model>/<task>.json`` for every model (real: size and SHA-256;
  simulated: only that); ``apply_pko@<model>`` and ``pko_only`` depend on their model's folder, ``blind_replace``
  on one JSON;
- ``inputs`` writes ``data/inputs/<entry>/<task>.json`` with the fingerprint of the exact file
  ``evaluate@<entry>`` reads for that task (simulated, PKO output or real); the entry's folder is that stage's
  dependency.

A new file reruns the stages of the model that reads it and no other; an untouched one, nothing.

Hashing a 30 GB SGDet file takes a while, so a side cache keyed by (device, inode, size, mtime) reuses a
hash while the file is untouched, as DVC itself does. The cache never enters the JSON, which holds only
content (identical on every machine).
"""

from __future__ import annotations

import hashlib
import json
import os

from sgg_eval.core import tuning
from sgg_eval.core.errors import InputError
from sgg_eval.io.atomic import write_json


def _stat_key(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def sha256_of(path: str) -> str:
    """SHA-256 of the file's bytes, read in 8 MiB chunks (memory stays flat)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(tuning.FINGERPRINT_CHUNK):
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


def _require_file(path: str, field: str, folders: bool = False) -> None:
    """InputError naming ``field`` unless ``path`` is a file, or with ``folders`` a folder (a model setting
    naming nothing)."""
    if not os.path.isfile(path) and not (folders and os.path.isdir(path)):
        what = "is a directory, not a file" if os.path.isdir(path) else "file not found"
        raise InputError(what, path=path, field=field)


def files_under(folder: str) -> list[str]:
    """Every file below ``folder``, relative to it, '/'-separated, sorted (the order is part of the hash)."""
    out = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        out += [os.path.relpath(os.path.join(root, n), folder).replace(os.sep, "/") for n in names]
    return sorted(out)


def fingerprints(files: dict[str, str], cache_path: str | None = None, folders: bool = False) -> dict[str, dict]:
    """``{label: {"path", "bytes", "sha256"}}`` for ``files`` (label -> path), in label order. With ``folders``
    a path may be a folder (an SGBench submission unpacked): its hash is that of the list of its files'
    relative paths and SHA-256s, its bytes their sum.

    A missing path (or a directory, without ``folders``) is an :class:`InputError` naming the label (e.g.
    ``models.m.files.sgdet``).
    """
    cache, fresh = _read_cache(cache_path), {}

    def file_hash(real: str) -> str:
        key = _stat_key(os.stat(real))
        hit = cache.get(real)
        digest = hit["sha256"] if isinstance(hit, dict) and hit.get("stat") == key else sha256_of(real)
        fresh[real] = {"stat": key, "sha256": digest}
        return digest

    out = {}
    for label in sorted(files):
        path = files[label]
        _require_file(path, label, folders)
        real = os.path.realpath(path)
        if os.path.isdir(real):
            listing = [(rel, file_hash(os.path.join(real, rel))) for rel in files_under(real)]
            digest = hashlib.sha256("".join(f"{rel}\t{h}\n" for rel, h in listing).encode()).hexdigest()
            size = sum(os.path.getsize(os.path.join(real, rel)) for rel, _ in listing)
            out[label] = {"path": path, "bytes": size, "sha256": digest, "files": len(listing)}
        else:
            out[label] = {"path": path, "bytes": os.path.getsize(real), "sha256": file_hash(real)}
    if cache_path is not None and fresh != cache:
        write_json(cache_path, fresh)  # only the files in use: no entry outlives its file
    return out


def write_tree(
    folder: str | os.PathLike,
    files: dict[tuple[str, str], str | None],
    cache_path: str | None,
    labels: dict[tuple[str, str], str] | None = None,
    folders: bool = False,
) -> None:
    """``folder/<name>/<task>.json`` for each ``(name, task)`` of ``files``: the fingerprint of its path, or
    ``{"source": "simulated"}`` for None; files of earlier runs no longer named are removed, and
    ``folder/index.json`` lists what is there (a folder DVC tracks is never empty). ``labels`` name a path in
    errors (default: the path)."""
    label = {key: (labels or {}).get(key, f"{key[0]}/{key[1]}") for key in files}
    prints = fingerprints({label[key]: path for key, path in files.items() if path is not None}, cache_path, folders)
    for (name, task), path in sorted(files.items()):
        doc = {"source": "simulated"} if path is None else prints[label[name, task]]
        write_json(os.path.join(folder, name, f"{task}.json"), doc)
    wanted = {os.path.join(name, f"{task}.json") for name, task in files} | {"index.json"}
    for root, _, names in os.walk(folder):
        for leaf in names:
            rel = os.path.relpath(os.path.join(root, leaf), folder)
            if rel not in wanted:
                os.remove(os.path.join(root, leaf))
    write_json(os.path.join(folder, "index.json"), sorted(f"{n}/{t}" for n, t in files))


def link_files(folder: str | os.PathLike, files: dict[str, tuple[str, str]]) -> None:
    """``folder`` holds exactly a symbolic link ``name`` to each ``files[name] = (path, field)`` (absolute)
    and ``index.json``: a stage depending on ``folder`` reruns when any linked file's content changes. A
    folder (an SGBench submission unpacked) gets one link per file, ``name/<relative path>``: DVC follows a
    link to a file but not one to a folder. A missing path is an :class:`InputError` naming its field."""
    for path, field in files.values():
        _require_file(path, field, folders=True)
    wanted = {}
    for name, (path, _) in files.items():
        target = os.path.abspath(path)
        if os.path.isdir(target):
            wanted.update({os.path.join(name, rel): os.path.join(target, rel) for rel in files_under(target)})
        else:
            wanted[name] = target
    os.makedirs(folder, exist_ok=True)
    for root, dirs, names in os.walk(folder, topdown=False):
        for leaf in names + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            rel = os.path.relpath(os.path.join(root, leaf), folder)
            if rel not in wanted and rel != "index.json":
                os.remove(os.path.join(root, leaf))
        for d in dirs:
            if os.path.isdir(os.path.join(root, d)) and not os.listdir(os.path.join(root, d)):
                os.rmdir(os.path.join(root, d))
    for rel, target in sorted(wanted.items()):
        link = os.path.join(folder, rel)
        if os.path.islink(link) and os.readlink(link) == target:
            continue
        if os.path.lexists(link):
            os.remove(link)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)
    write_json(os.path.join(folder, "index.json"), {name: path for name, (path, _) in sorted(files.items())})
