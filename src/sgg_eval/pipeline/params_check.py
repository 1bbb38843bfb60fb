"""The schema of the pipeline's parameters (``conf/`` composed into ``params.yaml``), checked before any stage.

``check_params`` runs in ``sgg-eval params`` (before ``params.yaml`` is written), in the sweep entry point and
in the first DVC stage (``check_params``) that every other stage depends on, so a bad value such as
``dvc exp run -S metrics.tau=2`` stops the pipeline before DVC removes a single output. Every problem is an
:class:`InputError` naming the dotted key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields

from sgg_eval.boxes.splits import DATASET_KINDS, READERS
from sgg_eval.core.defaults import IMR_KS, LONGTAIL_RULES, OPENVOCAB_PROTOCOLS, OPENVOCAB_SETTINGS, PROTOCOLS
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.core.tasks import TASKS
from sgg_eval.metrics.options import RANGES, check_option
from sgg_eval.pipeline.catalogue import DATA_LAYOUT, PSG_LAYOUT, SIM_KNOBS
from sgg_eval.pipeline.catalogue import lookup as _get
from sgg_eval.pipeline.mllm_params import check_text
from sgg_eval.pipeline.model_params import check_models
from sgg_eval.pipeline.param_types import check_choice, check_flag, check_mapping, check_number
from sgg_eval.pipeline.psg_params import check_psg
from sgg_eval.pipeline.s2g_params import S2G_KEYS, check_s2g
from sgg_eval.pipeline.video_params import check_video
from sgg_eval.simulate.params import SIMULATED_METHODS, Backbone, MethodParams
from sgg_eval.simulate.world import SCALES, SimParams

SCORE_DTYPES = ("float16", "float32")


def _number(params: Mapping, key: str, lo: float, hi: float, **kw) -> float:
    return check_number(_get(params, key), key, lo, hi, **kw)


def _choice(params: Mapping, key: str, allowed) -> str:
    return check_choice(_get(params, key), key, allowed)


def _flag(params: Mapping, key: str) -> None:
    check_flag(_get(params, key), key)


def _known_keys(section: Mapping, cls, key: str) -> None:
    check_mapping(section, key, [f.name for f in fields(cls)])


# every key params.yaml may hold (its sections' keys: what conf/ composes; models, tasks and simulation are
# added by the catalogue), so a misspelt or stray key is refused instead of silently ignored
SECTIONS = {
    "dataset": None,  # by kind: see _check_dataset
    "psg_dataset": None,  # by kind: see psg_params
    "video_dataset": None,  # by kind: see video_params
    "pko": ("lam", "eps", "prob_clip", "apply_to", "pko_only_from", "blind_model", "blind_task", "blind_max_n"),
    "metrics": ("tau", "iou_threshold", "protocol", "imr_k", "zeroshot", "openvocab", "longtail"),
    "tracking": ("uri", "experiment", "enabled"),
    "evaluation": (
        "tasks",
        "entries",
        "summary_entry",
        "model",
        "psg_entries",
        "psg_protocols",
        "text_entries",
        "video_entries",
        "video_protocols",
    ),
    "figures": ("biased_model", "debiased_model", "per_predicate_model"),
    "site": ("images", "image_dir"),
    "s2g": S2G_KEYS,
    "paths": ("data", "reports", "psg_data", "video_data", *DATA_LAYOUT, *(f"psg_{part}" for part in PSG_LAYOUT)),
    "stats": ("drop_non_overlapping", "background_must_overlap"),
    "models": None,
    "tasks": None,
    "simulation": None,
    "psg_simulation": None,
}
# conf/dataset/<name>.yaml's keys, by kind: its reader's options
DATASET_KEYS = {kind: ("name", "kind", "raw", *reader.options) for kind, reader in READERS.items()}


def _sections(params: Mapping) -> None:
    unknown = sorted(set(params) - set(SECTIONS), key=str)
    if unknown:
        raise InputError(f"unknown section {unknown[0]!r:.40}", field=str(unknown[0])[:40])
    for section, keys in SECTIONS.items():
        node = _get(params, section)
        if not isinstance(node, Mapping):
            raise InputError("must be a mapping", field=section)
        kind = node.get("kind") if isinstance(node.get("kind"), str) else None  # a mapping is not a dict key
        allowed = DATASET_KEYS.get(kind) if section == "dataset" else keys  # psg_, video_dataset: their modules
        stray = sorted(set(node) - set(allowed), key=str) if allowed is not None else []
        if stray:
            raise InputError(f"unknown setting {stray[0]!r:.40}", field=section)
    for key in ("dataset.name", "dataset.raw", "paths.data", "paths.psg_data", "paths.video_data", "paths.reports"):
        value = _get(params, key)
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{value!r:.40} is not a name or path", field=key)


def _check_openvocab(params: Mapping) -> None:
    """``metrics.openvocab``: a setting of the protocol (or null), a split mapping (or null; its names are checked
    against the dataset when the evaluate stage reads the split), and OvSGTR's tasks."""
    node = _get(params, "metrics.openvocab")
    check_mapping(node, "metrics.openvocab", ["setting", "split"])
    protocol, setting, split = params["metrics"]["protocol"], node.get("setting"), node.get("split")
    if protocol not in OPENVOCAB_PROTOCOLS:
        if setting is not None or split is not None:
            raise InputError("is for metrics.protocol ovsgtr, vs3 or pgsg", field="metrics.openvocab")
        return
    if setting is not None:
        check_choice(setting, "metrics.openvocab.setting", OPENVOCAB_SETTINGS[protocol])
    if split is not None and not isinstance(split, Mapping):
        raise InputError("must be null or a mapping (novel_objects, novel_predicates)", field="metrics.openvocab.split")
    rules = protocol_record(protocol)
    if set(_get(params, "evaluation.tasks")) - set(rules.tasks):
        raise InputError(
            f"{rules.tasks_why or protocol + ' scores ' + ', '.join(rules.tasks) + ' only'}: set evaluation.tasks="
            f"[{', '.join(rules.tasks)}]",
            field="evaluation.tasks",
        )


def check_params(params: Mapping) -> None:
    """Raise :class:`InputError` (naming the dotted key) on the first out-of-schema value."""
    if not isinstance(params, Mapping):
        raise InputError("params must be a mapping")
    _sections(params)
    for name in RANGES:  # the options' own ranges
        check_option(name, _get(params, f"metrics.{name}"), field=f"metrics.{name}")
    _choice(params, "metrics.protocol", PROTOCOLS)
    _choice(params, "metrics.imr_k", IMR_KS)
    _choice(params, "metrics.longtail", LONGTAIL_RULES)
    _check_openvocab(params)
    if not isinstance(_get(params, "metrics.zeroshot"), str):
        raise InputError("must be 'computed', 'vg150' or a file path", field="metrics.zeroshot")
    _check_dataset(params)
    # the same bounds as PKOParams (not imported: pko pulls in the metric engine, and every stage
    # depends on this module)
    _number(params, "pko.lam", -1e6, 1e6)
    _number(params, "pko.eps", 0.0, 1e6, lo_open=True)
    _number(params, "pko.prob_clip", 0.0, 1.0, lo_open=True, hi_open=True)
    _number(params, "pko.blind_max_n", 0, 1000, integer=True)
    _choice(params, "pko.blind_task", TASKS)
    for key in ("drop_non_overlapping", "background_must_overlap"):
        _flag(params, f"stats.{key}")
    _flag(params, "tracking.enabled")
    _number(params, "site.images", 0, 1000, integer=True)
    image_dir = _get(params, "site.image_dir")
    if image_dir is not None and (not isinstance(image_dir, str) or not image_dir.strip()):
        raise InputError("must be null or a folder of the test images", field="site.image_dir")
    if not isinstance(_get(params, "tracking.uri"), str):
        raise InputError("must be a string (empty: the local sqlite database)", field="tracking.uri")
    if not isinstance(_get(params, "tracking.experiment"), str) or not _get(params, "tracking.experiment"):
        raise InputError("must be a non-empty name", field="tracking.experiment")
    _check_simulation(params)
    check_models(params)
    check_psg(params)
    check_video(params)
    check_text(params)
    check_s2g(params)


def _check_dataset(params: Mapping) -> None:
    kind = _choice(params, "dataset.kind", DATASET_KINDS)
    if kind == "simulated":
        # the seed and scale are knobs (params.yaml); the world's shape is catalogue (conf/simulation)
        knobs = _get(params, "dataset.sim")
        if not isinstance(knobs, Mapping):
            raise InputError("must be a mapping", field="dataset.sim")
        unknown = sorted(set(knobs) - set(SIM_KNOBS), key=str)
        if unknown:
            raise InputError(
                f"unknown setting {unknown[0]!r} (the world's shape is in conf/simulation/default.yaml, `world`)",
                field="dataset.sim",
            )
        _choice(params, "dataset.sim.scale", tuple(SCALES))
        _number(params, "dataset.sim.seed", 0, 2**32 - 1, integer=True)
        world = _get(params, "simulation.world")
        _known_keys(world, SimParams, "simulation.world")
        misplaced = sorted(set(world) & set(SIM_KNOBS), key=str)
        if misplaced:
            raise InputError(f"{misplaced[0]!r} is a knob: set dataset.sim.{misplaced[0]}", field="simulation.world")
        for key in ("mean_objects", "mean_relations"):
            _number(params, f"simulation.world.{key}", 1.0, 100.0)
        for key in ("reuse_prob", "duplicate_rate", "multi_predicate_rate"):
            _number(params, f"simulation.world.{key}", 0.0, 1.0)
        for key in ("pair_noise", "pair_concentration", "generic_ratio"):
            _number(params, f"simulation.world.{key}", 0.0, 100.0)
        _number(params, "simulation.world.anchor_spread", 0.0, 100.0, lo_open=True)
        _number(params, "simulation.world.anchor_frequency_pull", 0.0, 100.0)
        _number(params, "simulation.world.anchor_domains", 0, 1000, integer=True)
        _number(params, "simulation.world.domain_share", 0.0, 1.0)
    options = READERS[kind].options
    if "num_val_im" in options:
        _number(params, "dataset.num_val_im", 0, 10**7, integer=True)
    if "box_scale" in options:
        _number(params, "dataset.box_scale", 1, 10**6, integer=True)
    if "exclude_left_right" in options:
        _flag(params, "dataset.exclude_left_right")


def _check_simulation(params: Mapping) -> None:
    _choice(params, "simulation.score_kind", ("logits", "probabilities"))
    _choice(params, "simulation.score_dtype", SCORE_DTYPES)
    _number(params, "simulation.seed", 0, 2**32 - 1, integer=True)
    backbones = _get(params, "simulation.backbones")
    if not isinstance(backbones, Mapping) or not backbones:
        raise InputError("must map backbone names to settings", field="simulation.backbones")
    for name, bb in backbones.items():
        key = f"simulation.backbones.{name}"
        _known_keys({"name": name, **(bb if isinstance(bb, Mapping) else {})}, Backbone, key)
        for k in (
            "strength",
            "confusion",
            "noise",
            "background_shift",
            "feature_bias",
            "pair_confidence",
            "unannotated",
            "box_jitter",
            "false_detections",
            "label_frequency_slope",
            "evidence_frequency_slope",
            "clarity_spread",
        ):
            if k in bb:
                _number(params, f"{key}.{k}", 0.0, 100.0)
        if "logit_scale" in bb:
            _number(params, f"{key}.logit_scale", 0.0, 100.0, lo_open=True)
        for k in ("label_accuracy", "detection_rate"):
            if k in bb:
                _number(params, f"{key}.{k}", 0.0, 1.0, lo_open=True, hi_open=k == "label_accuracy")
        if "detection_score_floor" in bb:
            _number(params, f"{key}.detection_score_floor", 0.0, 1.0, hi_open=True)
    _check_method_settings(params, "simulation.methods", required=True)
    fitted = params["simulation"].get("fitted") or {}
    check_mapping(fitted, "simulation.fitted", backbones)
    for backbone, by_task in fitted.items():
        check_mapping(by_task, f"simulation.fitted.{backbone}", TASKS)
        for task, by_method in by_task.items():
            check_mapping(by_method, f"simulation.fitted.{backbone}.{task}", SIMULATED_METHODS)
            for method in by_method:
                _check_method_settings(params, f"simulation.fitted.{backbone}.{task}.{method}", required=False)


def _check_method_settings(params: Mapping, key: str, *, required: bool) -> None:
    """``simulation.methods`` (every setting of ``MethodParams``) or one fitted override (some of them)."""
    settings = _get(params, key)
    _known_keys(settings, MethodParams, key)
    strengths = ("reweight_alpha", "tde_alpha", "tde_prior_alpha", "dlfe_alpha", "rtpb_alpha", "nice_alpha")
    strengths += ("ranking_noise",)
    ranges = {k: (0.0, 10.0, {}) for k in strengths}
    ranges |= {"rtpb_beta": (0.0, 1.0, {"lo_open": True, "hi_open": True}), "nice_gamma": (0.0, 1.0, {})}
    ranges |= {"discrimination": (0.0, 1.0, {})}
    ranges |= {"dlfe_images": (1, 10**7, {"integer": True})}
    for k, (lo, hi, kw) in ranges.items():
        if required and k not in ("tde_prior_alpha", "nice_alpha", "ranking_noise", "discrimination") or k in settings:
            _number(params, f"{key}.{k}", lo, hi, **kw)
