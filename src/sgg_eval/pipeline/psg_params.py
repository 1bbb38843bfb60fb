"""The schema of the panoptic half of the parameters: ``psg_dataset``, ``evaluation.psg_entries`` and
``evaluation.psg_protocols``, the PSG models they name and ``psg_simulation`` (``conf/simulation/psg.yaml``).
Called by ``params_check.check_params``; every problem is an :class:`InputError` naming the dotted key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields

from sgg_eval.core.defaults import PSG_PROTOCOLS
from sgg_eval.core.errors import InputError
from sgg_eval.pipeline.catalogue import SIM_KNOBS
from sgg_eval.pipeline.catalogue import lookup as _get
from sgg_eval.pipeline.param_types import check_choice, check_flag, check_mapping, check_number
from sgg_eval.simulate.psg_models import PsgDetector, PsgMethod
from sgg_eval.simulate.psg_world import SCALES, PsgWorld

PSG = "psg"  # a model file's `benchmark` for panoptic models (absent: a VG150 model)
PSG_KINDS = ("simulated", "psg")
PSG_DATASET_KEYS = {"simulated": ("name", "kind", "raw", "sim"), "psg": ("name", "kind", "raw", "json", "root")}


def is_psg_model(model: Mapping) -> bool:
    return isinstance(model, Mapping) and model.get("benchmark") == PSG


def check_psg(params: Mapping) -> None:
    """The panoptic settings (module docstring)."""
    kind = _get(params, "psg_dataset.kind")
    if kind not in PSG_KINDS:
        raise InputError(f"{kind!r:.40} is not one of {', '.join(PSG_KINDS)}", field="psg_dataset.kind")
    dataset = check_mapping(_get(params, "psg_dataset"), "psg_dataset", PSG_DATASET_KEYS[kind])
    for key in PSG_DATASET_KEYS[kind]:
        if key != "sim" and (not isinstance(dataset.get(key), str) or not dataset[key].strip()):
            raise InputError(f"{dataset.get(key)!r:.40} is not a name or path", field=f"psg_dataset.{key}")
    if kind == "simulated":
        knobs = check_mapping(_get(params, "psg_dataset.sim"), "psg_dataset.sim", SIM_KNOBS)
        check_choice(knobs.get("scale"), "psg_dataset.sim.scale", tuple(SCALES))  # a tuple: `{} in dict` raises
        check_number(knobs.get("seed"), "psg_dataset.sim.seed", 0, 2**32 - 1, integer=True)
        _check_simulation(params)
    protocols = _get(params, "evaluation.psg_protocols")
    if not isinstance(protocols, list) or not protocols or len(set(map(str, protocols))) != len(protocols):
        raise InputError("must be a non-empty list without repeats", field="evaluation.psg_protocols")
    for i, protocol in enumerate(protocols):
        if protocol not in PSG_PROTOCOLS:
            raise InputError(
                f"{protocol!r:.40} is not one of {', '.join(PSG_PROTOCOLS)}", field=f"evaluation.psg_protocols[{i}]"
            )
    _check_models(params, kind)


def _check_models(params: Mapping, kind: str) -> None:
    entries = _get(params, "evaluation.psg_entries")
    if not isinstance(entries, list) or not entries or len(set(map(str, entries))) != len(entries):
        raise InputError("must be a non-empty list of PSG models without repeats", field="evaluation.psg_entries")
    models, methods = _get(params, "models"), _get(params, "psg_simulation.methods")
    dataset = _get(params, "psg_dataset.name")
    for i, name in enumerate(entries):
        model = models.get(name) if isinstance(name, str) else None
        if not is_psg_model(model):
            what = "a VG150 model" if isinstance(model, Mapping) else f"not a model (no conf/model/{name}.yaml)"
            raise InputError(
                f"{name!r:.40} is {what}: a PSG model's file says benchmark: psg", field=f"evaluation.psg_entries[{i}]"
            )
        key = f"models.{name}"
        source = model.get("source")
        if source == "simulated":
            if model.get("sim_method") not in methods:
                raise InputError(
                    f"must be one of {', '.join(methods)} (conf/simulation/psg.yaml)", field=f"{key}.sim_method"
                )
            if kind != "simulated":
                raise InputError(
                    f"psg_dataset {dataset!r} is real, but {name} is a simulated model: simulated outputs scored on "
                    "real ground truth would sit in the tables beside real ones. Name your models in "
                    "evaluation.psg_entries (README, 'Panoptic SGG')",
                    field="evaluation.psg_entries",
                )
        elif source == "file":
            files = model.get("files")
            if not isinstance(files, Mapping) or not isinstance(files.get(dataset), str):
                raise InputError(
                    f"no submission for psg_dataset {dataset!r} (files: {{{dataset}: PATH}})", field=f"{key}.files"
                )
        else:
            raise InputError(f"{source!r:.40} is not one of simulated, file", field=f"{key}.source")
        if not isinstance(model.get("method"), str) or not model["method"]:
            raise InputError("must name the method (the tables' row label)", field=f"{key}.method")


def _check_simulation(params: Mapping) -> None:
    sim = check_mapping(_get(params, "psg_simulation"), "psg_simulation", ("world", "seed", "detectors", "methods"))
    world = check_mapping(
        sim.get("world"), "psg_simulation.world", [f.name for f in fields(PsgWorld) if f.name not in SIM_KNOBS]
    )
    for key in ("height", "width"):
        check_number(world.get(key, 32), f"psg_simulation.world.{key}", 32, 4096, integer=True)
    for key in ("mean_segments", "mean_relations", "class_zipf", "predicate_zipf"):
        check_number(world.get(key, 1.0), f"psg_simulation.world.{key}", 0.0, 100.0)
    for key in ("multi_predicate_rate", "no_relation_rate"):
        check_number(world.get(key, 0.0), f"psg_simulation.world.{key}", 0.0, 1.0)
    check_number(sim.get("seed"), "psg_simulation.seed", 0, 2**32 - 1, integer=True)
    _check_methods(sim.get("methods"), _check_detectors(sim.get("detectors")))


def _check_detectors(detectors) -> Mapping:
    """``psg_simulation.detectors``: a name for each, with its settings."""
    if not isinstance(detectors, Mapping) or not detectors:
        raise InputError("must map detector names to settings", field="psg_simulation.detectors")
    for name, det in detectors.items():
        key = f"psg_simulation.detectors.{name}"
        check_mapping(det, key, [f.name for f in fields(PsgDetector)])
        check_flag(det.get("overlapping"), f"{key}.overlapping")
        for k in ("detect_related", "detect_other"):
            check_number(det.get(k), f"{key}.{k}", 0.0, 1.0)
        check_number(det.get("false_detections"), f"{key}.false_detections", 0, 16, integer=True)
    return detectors


def _check_methods(methods, detectors: Mapping) -> None:
    """``psg_simulation.methods``: a name for each, on one of ``detectors``, with its knobs."""
    if not isinstance(methods, Mapping) or not methods:
        raise InputError("must map method names to settings", field="psg_simulation.methods")
    for name, method in methods.items():
        key = f"psg_simulation.methods.{name}"
        check_mapping(method, key, [f.name for f in fields(PsgMethod)])
        if method.get("detector") not in detectors:
            raise InputError(f"must be one of {', '.join(detectors)}", field=f"{key}.detector")
        for k in ("pair_strength", "predicate_strength", "frequency_bias"):
            check_number(method.get(k), f"{key}.{k}", -100.0, 100.0)
        for k in ("triplets", "ng_triplets"):
            if k in method:
                check_number(method[k], f"{key}.{k}", 1, 100000, integer=True)
        for k, high in (
            ("pair_recall", 1.0),
            ("predicate_recall", 1.0),
            ("false_pair_rate", 1.0),
            ("ng_pair_weight", 100.0),
        ):
            if k in method:
                check_number(method[k], f"{key}.{k}", 0.0, high)
