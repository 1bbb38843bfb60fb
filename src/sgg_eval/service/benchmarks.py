"""The benchmarks a service offers, from one YAML file (``SGG_EVAL_SERVICE_BENCHMARKS``; docs/service.md):

.. code-block:: yaml

    benchmarks:
      - name: vg150-predcls          # its address: /b/vg150-predcls/
        title: VG150 PredCls
        task: predcls
        protocol: reference          # any box or panoptic protocol of `sgg-eval protocols`
        gt: /data/vg150/splits/test.h5   # stays on the server; a path relative to this file's folder
        stats: /data/vg150/stats.h5      # optional: wIMR, zR, the head/body/tail split
        # panoptic: gt is the PSG JSON, gt_root the folder of its PNGs
        headline: [R@50, R@100, mR@50, mR@100]
        daily_limit: 5
        simulated: false

Without the variable, the service offers the SIMULATED benchmarks the pipeline builds (``simulated.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import BOXES, BY_NAME, PANOPTIC
from sgg_eval.metrics.names import metric_name

# the columns of a board when its benchmark names none: R@50, R@100, mR@50, mR@100, as the papers' tables
DEFAULT_HEADLINE = tuple(metric_name(family, k) for family in ("R", "mR") for k in (50, 100))


@dataclass(frozen=True)
class Preload:
    """A row the service puts on a benchmark's approved board itself: a file, its method and their links."""

    file: str
    method: str
    paper: str
    code: str


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    title: str
    task: str
    protocol: str
    gt: str
    stats: str = ""
    # panoptic: the folder of the GT PNGs (--psg-root)
    gt_root: str = ""
    headline: tuple[str, ...] = DEFAULT_HEADLINE
    daily_limit: int = 5
    simulated: bool = False
    description: str = ""
    # pre-loaded approved rows (the simulated methods) scored on first start
    preload: tuple[Preload, ...] = field(default=())

    def arguments(self) -> list[str]:
        """The arguments of ``sgg-eval evaluate`` besides the file."""
        if BY_NAME[self.protocol].product == PANOPTIC:
            args = ["--psg", self.gt, *(["--psg-root", self.gt_root] if self.gt_root else [])]
        else:
            args = ["--gt", self.gt, "--task", self.task]
        return [*args, "--protocol", self.protocol, *(["--stats", self.stats] if self.stats else [])]


def read_benchmarks(path: Path) -> list[BenchmarkSpec]:
    """The benchmarks of ``path``; a bad entry is an :class:`InputError` naming the file and the field."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read the benchmarks file: {exc}", path=str(path)) from None
    entries = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError("expected a list under 'benchmarks'", path=str(path), field="benchmarks")
    specs: list[BenchmarkSpec] = []
    for i, entry in enumerate(entries):
        spec = _entry(path, f"benchmarks[{i}]", entry)
        if spec.name in {s.name for s in specs}:
            raise InputError(f"benchmark {spec.name!r} appears twice", path=str(path), field=f"benchmarks[{i}]")
        specs.append(spec)
    return specs


def _entry(path: Path, where: str, entry) -> BenchmarkSpec:
    """One entry of the file, checked: its fields, its protocol and task, and that its GT paths exist."""

    def refuse(message: str) -> InputError:
        return InputError(message, path=str(path), field=where)

    if not isinstance(entry, dict):
        raise refuse("expected a mapping")
    missing = [k for k in ("name", "task", "protocol", "gt") if not entry.get(k)]
    if missing:
        raise refuse(f"missing {', '.join(missing)}")
    name, protocol, task = str(entry["name"]), str(entry["protocol"]), str(entry["task"])
    record = BY_NAME.get(protocol)
    if record is None or record.product not in (BOXES, PANOPTIC):
        known = ", ".join(p for p, r in BY_NAME.items() if r.product in (BOXES, PANOPTIC))
        raise refuse(f"protocol must be one of {known}, got {protocol!r}")
    if task not in record.tasks:
        raise refuse(f"{protocol} scores {', '.join(record.tasks)}, not {task}")
    limit = entry.get("daily_limit", 5)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise refuse(f"daily_limit must be a whole number >= 0, got {limit!r}")
    paths = _paths(path.parent, entry, refuse)
    return BenchmarkSpec(
        name=name,
        title=str(entry.get("title") or name),
        task=task,
        protocol=protocol,
        **paths,
        headline=tuple(entry.get("headline") or DEFAULT_HEADLINE),
        daily_limit=limit,
        simulated=bool(entry.get("simulated", False)),
        description=str(entry.get("description") or ""),
    )


def _paths(folder: Path, entry: dict, refuse) -> dict[str, str]:
    """The entry's ground-truth paths (``gt``, ``stats``, ``gt_root``), resolved from ``folder``, each existing."""
    paths = {k: str((folder / entry[k]).resolve()) if entry.get(k) else "" for k in ("gt", "stats", "gt_root")}
    for key, named in paths.items():
        if named and not Path(named).exists():
            raise refuse(f"{key}: no such file or folder: {named}")
    return paths
