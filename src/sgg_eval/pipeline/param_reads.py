"""Which keys of ``params.yaml`` a DVC stage reads, recorded when ``SGG_EVAL_PARAMS_TRACE`` names a folder.

DVC reruns a stage only when something it declares changes, so a key that a stage reads but does not declare
(in its ``params``, or through a file of ``data/params/`` that ``check_params`` writes from that key) gives a
stale number. The parameter test (``tests/test_params_tracked.py``) runs the pipeline with this variable set:
:func:`recorded` then wraps the stage's params in mappings that note every value read, and at exit one JSON
file per process lands in the folder: ``{"stage": DVC_STAGE, "reads": [dotted keys]}``. Unset (every real
run), :func:`recorded` returns the params as they are.

A read is noted at the leaf: ``params["metrics"]["tau"]`` notes ``metrics.tau``; a copy, an iteration over
items or values, or a JSON dump of a section notes every leaf below it. The derived paths ``paths.<part>`` are
spelled as the key they come from (``paths.data``, ``paths.psg_data``).
"""

from __future__ import annotations

import atexit
import json
import os
from collections.abc import Mapping

ENV = "SGG_EVAL_PARAMS_TRACE"

# The files check_params writes from a params.yaml section (with the simulated world's shape added from the
# catalogue), and that section: a stage that depends on the file is rerun when a key of the section changes.
CARRIERS = {"data/params/dataset.json": "dataset", "data/params/psg_dataset.json": "psg_dataset",
            "data/params/video_dataset.json": "video_dataset"}  # fmt: skip


class _Reads(dict):
    """A dict that notes, in ``log``, the dotted key of each leaf value handed out."""

    def __init__(self, data: Mapping, prefix: str, log: set[str]):
        super().__init__({k: _wrap(v, f"{prefix}{k}", log) for k, v in data.items()})
        self._prefix, self._log = prefix, log

    def _note(self, key, value):
        if isinstance(value, _Reads):
            return value
        self._log.add(f"{self._prefix}{key}")
        return value

    def _note_all(self) -> None:
        for key, value in super().items():
            value._note_all() if isinstance(value, _Reads) else self._log.add(f"{self._prefix}{key}")

    def __getitem__(self, key):
        return self._note(key, super().__getitem__(key))

    def get(self, key, default=None):
        return self[key] if key in self else default

    def __iter__(self):  # overridden so that dict(x) and {**x} go through keys() and __getitem__
        return super().__iter__()

    def items(self):
        self._note_all()
        return super().items()

    def values(self):
        self._note_all()
        return super().values()

    def copy(self):
        self._note_all()
        return dict(super().items())

    def __reduce_ex__(self, protocol):  # deepcopy and pickle see the plain data, noted whole
        self._note_all()
        return dict, (dict(super().items()),)


def _wrap(value, key: str, log: set[str]):
    return _Reads(value, key + ".", log) if isinstance(value, Mapping) else value


def _spelled(key: str) -> str:
    """``paths.splits`` -> ``paths.data``, ``paths.psg_stats`` -> ``paths.psg_data``: the key it derives from."""
    if key.startswith("paths.") and key not in ("paths.data", "paths.psg_data", "paths.video_data", "paths.reports"):
        return "paths.psg_data" if key.startswith("paths.psg_") else "paths.data"
    return key


def recorded(params: dict) -> dict:
    """``params`` itself, or (with ``SGG_EVAL_PARAMS_TRACE`` set) a recording copy whose reads are written to
    that folder when the process exits."""
    folder = os.environ.get(ENV)
    if not folder:
        return params
    log: set[str] = set()

    def write() -> None:
        doc = {"stage": os.environ.get("DVC_STAGE", ""), "reads": sorted({_spelled(k) for k in log})}
        with open(os.path.join(folder, f"{os.getpid()}.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f)

    atexit.register(write)
    return _Reads(params, "", log)
