"""The catalogue: what ``params.yaml`` names but does not hold.

``params.yaml`` (Hydra's composition of ``conf/config.yaml``) holds the knobs an experiment varies: dataset,
τ, K, λ, ε, tasks, entries, tracking. The things those knobs *name* stay in ``conf/`` as one file each and are
read here by name, so that ``dvc exp show`` lists knobs rather than ~130 model and simulator settings:

- ``conf/model/<name>.yaml``: every model an entry, ``pko.*`` or ``figures.*`` refers to;
- ``conf/task/<task>.yaml``: each task's label;
- ``conf/simulation/default.yaml``: the simulated models' backbones and methods, and ``world``, the
  simulated dataset's shape (``dataset.sim`` holds only its seed and scale);
- ``conf/simulation/psg.yaml``: the same for the simulated panoptic benchmark (``psg_simulation``).

:func:`resolve` returns the knobs plus these as one plain dict (``models``, ``tasks``, ``simulation``,
``psg_simulation``), the shape every stage reads. The ``check_params`` stage writes the resolved parts to
``data/params/`` and the stages depend on those files, so editing a model file reruns exactly what reads it.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from pathlib import Path

from sgg_eval.core.errors import InputError
from sgg_eval.core.tasks import TASKS
from sgg_eval.io.jsonio import load_yaml
from sgg_eval.pipeline.entries import parse_entry

SIMULATION_FILE = "simulation/default.yaml"
PSG_SIMULATION_FILE = "simulation/psg.yaml"
# params.yaml's `paths.data` is the dataset's folder; these sub-folders are the layout inside it (dvc.yaml
# spells the same names: `${paths.data}/splits/...`)
DATA_LAYOUT = ("splits", "stats", "predictions", "results")
# the same for the panoptic dataset's folder, `paths.psg_data` (paths.psg_<part>)
PSG_LAYOUT = ("psg", "stats", "predictions", "results")
# a simulated dataset's knobs (dataset.sim, psg_dataset.sim); the rest of its world is catalogue (conf/simulation)
SIM_KNOBS = ("seed", "scale")


def lookup(params: Mapping, key: str):
    """The value at dotted ``key`` (``metrics.tau``); a missing one is an :class:`InputError` naming the key."""
    node = params
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise InputError("missing", field=key)
        node = node[part]
    return node


def _read(path: Path, what: str) -> dict:
    if not path.is_file():
        raise InputError(f"no such {what} (add {path.name} to {path.parent})", path=str(path))
    doc = load_yaml(path)
    if not isinstance(doc, dict):
        raise InputError(f"must be a mapping of {what} settings", path=str(path))
    return doc


def model_names(params: Mapping, conf_dir: str | os.PathLike) -> list[str]:
    """Every model with a file in ``conf_dir/model`` that the knobs refer to: entries (read by the one entry
    rule, ``entries.parse_entry``: ``<model>_pko`` and ``pko_only`` name their base model), ``pko.apply_to``,
    ``pko.pko_only_from``, ``pko.blind_model``, ``figures.*``, ``evaluation.model``,
    ``evaluation.psg_entries``, ``evaluation.text_entries`` and ``evaluation.video_entries``. A name without a file
    is left out; the schema reports it."""
    evaluation, pko, figures = (
        params.get(k) if isinstance(params.get(k), Mapping) else {} for k in ("evaluation", "pko", "figures")
    )
    only_from = pko.get("pko_only_from") if isinstance(pko.get("pko_only_from"), str) else None
    names = [*(evaluation.get("entries") or []), *(evaluation.get("psg_entries") or []),
             *(evaluation.get("text_entries") or []), *(evaluation.get("video_entries") or [])]  # fmt: skip
    apply_to = pko.get("apply_to") or []
    names += apply_to if isinstance(apply_to, list) else [apply_to]
    names += [pko.get("pko_only_from"), pko.get("blind_model"), evaluation.get("model"), *figures.values()]
    available = {path.stem for path in (Path(conf_dir) / "model").glob("*.yaml")}
    out = []
    for name in names:
        if not isinstance(name, str):
            continue  # not a name: the schema reports it
        try:
            model = parse_entry(name, available, only_from).model
        except KeyError:  # no such model
            continue
        if model in available and model not in out:
            out.append(model)
    return out


def resolve(knobs: Mapping, conf_dir: str | os.PathLike = "conf") -> dict:
    """``knobs`` (params.yaml as plain dicts) with ``models``, ``tasks``, ``simulation``, ``psg_simulation`` and
    the expanded ``paths`` added from ``conf_dir``. Raises :class:`InputError` naming a missing or malformed file."""
    if not isinstance(knobs, Mapping):
        raise InputError("params must be a mapping")
    params = copy.deepcopy(dict(knobs))
    conf = Path(conf_dir)
    folder = conf / "model"
    params["models"] = {name: _read(folder / f"{name}.yaml", "model") for name in model_names(params, conf)}
    params["tasks"] = {task: _read(conf / "task" / f"{task}.yaml", "task") for task in TASKS}
    params["simulation"] = _read(conf / SIMULATION_FILE, "simulation")
    params["psg_simulation"] = _read(conf / PSG_SIMULATION_FILE, "simulation")
    paths = params.get("paths")
    if isinstance(paths, Mapping) and isinstance(paths.get("data"), str):
        params["paths"] = {**{part: f"{paths['data']}/{part}" for part in DATA_LAYOUT}, **paths}
    if isinstance(paths, Mapping) and isinstance(paths.get("psg_data"), str):
        params["paths"].update({f"psg_{part}": f"{paths['psg_data']}/{part}" for part in PSG_LAYOUT})
    return params
