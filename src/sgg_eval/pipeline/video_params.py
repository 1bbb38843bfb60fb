"""The schema of the video half of the parameters: ``video_dataset`` (Action Genome: the release, or GENERATED
files), ``evaluation.video_entries`` (the models, ``conf/model/<name>.yaml`` with ``benchmark: video``) and
``evaluation.video_protocols``. Called by ``params_check.check_params``; every problem is an
:class:`InputError` naming the dotted key.

A video model is ``source: simulated`` (a SIMULATED model's per-video dicts, ``video.ag_example``: ``skill``, how
much its scores favour the GT predicates, and ``seed``) or ``source: file`` (``files: {<video_dataset.name>:
{<task>: PATH}}``, a folder of per-video files or one file for each task); ``attention`` says what its
``attention_distribution`` holds (``logits``, STTran's model; ``probabilities``)."""

from __future__ import annotations

from collections.abc import Mapping

from sgg_eval.core.defaults import VIDEO_PROTOCOLS
from sgg_eval.core.errors import InputError
from sgg_eval.core.protocols import STTRAN_ATTENTION_KINDS, protocol
from sgg_eval.pipeline.catalogue import lookup as _get
from sgg_eval.pipeline.param_types import check_choice, check_mapping, check_number

VIDEO = "video"  # a model file's `benchmark` for video models (Action Genome)
VIDEO_KINDS = ("simulated", "action_genome")
VIDEO_DATASET_KEYS = {"simulated": ("name", "kind", "raw", "sim"),
                      "action_genome": ("name", "kind", "raw", "small_boxes")}  # fmt: skip
VIDEO_SIM_KNOBS = ("seed", "videos")
_MODEL_KEYS = ("name", "benchmark", "method", "source", "attention", "skill", "seed", "files", "label")


def is_video_model(model: Mapping) -> bool:
    return isinstance(model, Mapping) and model.get("benchmark") == VIDEO


def check_video(params: Mapping) -> None:
    """The video settings (module docstring)."""
    kind = _get(params, "video_dataset.kind")
    check_choice(kind, "video_dataset.kind", VIDEO_KINDS)
    dataset = check_mapping(_get(params, "video_dataset"), "video_dataset", VIDEO_DATASET_KEYS[kind])
    for key in ("name", "kind", "raw"):
        if not isinstance(dataset.get(key), str) or not dataset[key].strip():
            raise InputError(f"{dataset.get(key)!r:.40} is not a name or path", field=f"video_dataset.{key}")
    if kind == "simulated":
        knobs = check_mapping(_get(params, "video_dataset.sim"), "video_dataset.sim", VIDEO_SIM_KNOBS)
        check_number(knobs.get("seed"), "video_dataset.sim.seed", 0, 2**32 - 1, integer=True)
        check_number(knobs.get("videos"), "video_dataset.sim.videos", 4, 20000, integer=True)
    else:
        small = _get(params, "video_dataset.small_boxes")
        if small is not None and (not isinstance(small, str) or not small.strip()):
            raise InputError("must be null or the small-box file's path", field="video_dataset.small_boxes")
    protocols = _get(params, "evaluation.video_protocols")
    if not isinstance(protocols, list) or not protocols or len(set(map(str, protocols))) != len(protocols):
        raise InputError("must be a non-empty list without repeats", field="evaluation.video_protocols")
    for i, name in enumerate(protocols):
        check_choice(name, f"evaluation.video_protocols[{i}]", VIDEO_PROTOCOLS)
    if kind != "simulated" and _get(params, "video_dataset.small_boxes") is None:
        needs = [
            (n, t) for n in protocols for t in _get(params, "evaluation.tasks") if protocol(n).reads_small_boxes(t)
        ]
        if needs:
            raise InputError(f"{needs[0][0]} scores {needs[0][1]} on the STTran authors' small-box file: set "
                             "video_dataset.small_boxes", field="video_dataset.small_boxes")  # fmt: skip
    _check_models(params, kind)


def _check_models(params: Mapping, kind: str) -> None:
    entries = _get(params, "evaluation.video_entries")
    if not isinstance(entries, list) or len(set(map(str, entries))) != len(entries):
        raise InputError("must be a list of video models without repeats", field="evaluation.video_entries")
    models, dataset = _get(params, "models"), _get(params, "video_dataset.name")
    for i, name in enumerate(entries):
        model = models.get(name) if isinstance(name, str) else None
        if not is_video_model(model):
            what = "another product's model" if isinstance(model, Mapping) else f"no model (conf/model/{name}.yaml)"
            raise InputError(f"{name!r:.40} is {what}: a video model's file says benchmark: video",
                             field=f"evaluation.video_entries[{i}]")  # fmt: skip
        key = f"models.{name}"
        check_mapping(model, key, _MODEL_KEYS)
        if not isinstance(model.get("method"), str) or not model["method"]:
            raise InputError("must name the method (the table's row label)", field=f"{key}.method")
        check_choice(model.get("attention"), f"{key}.attention", STTRAN_ATTENTION_KINDS)
        source = check_choice(model.get("source"), f"{key}.source", ("simulated", "file"))
        if source == "simulated":
            check_number(model.get("skill"), f"{key}.skill", 0.0, 20.0)
            check_number(model.get("seed"), f"{key}.seed", 0, 2**32 - 1, integer=True)
            if kind != "simulated":
                raise InputError(f"video_dataset {dataset!r} is real, but {name} is a simulated model: name your "
                                 "models in evaluation.video_entries", field="evaluation.video_entries")  # fmt: skip
            continue
        files = model.get("files")
        per_task = files.get(dataset) if isinstance(files, Mapping) else None
        if not isinstance(per_task, Mapping):
            raise InputError(f"no predictions for video_dataset {dataset!r} (files: {{{dataset}: {{TASK: PATH}}}})",
                             field=f"{key}.files")  # fmt: skip
        for task in _get(params, "evaluation.tasks"):
            if not isinstance(per_task.get(task), str):
                raise InputError(f"no predictions for {task}", field=f"{key}.files.{dataset}.{task}")
