"""The VG150 half of the pipeline's parameter schema about models (``params_check`` runs it; PSG's models:
``psg_params``; text-graph models: ``mllm_params``): each model of ``conf/model``, the entries evaluated
(``<model>``, ``<model>_pko``, ``pko_only``), the figures' models, and the prediction file every evaluated task
needs."""

from __future__ import annotations

from collections.abc import Mapping

from sgg_eval.core.errors import InputError
from sgg_eval.core.tasks import TASKS
from sgg_eval.pipeline.catalogue import lookup as _get
from sgg_eval.pipeline.entries import PKO_ONLY, parse_entry
from sgg_eval.pipeline.mllm_params import is_text_model
from sgg_eval.pipeline.param_types import check_choice
from sgg_eval.pipeline.psg_params import is_psg_model
from sgg_eval.pipeline.video_params import is_video_model
from sgg_eval.simulate.params import SIMULATED_METHODS

MODEL_SOURCES = ("simulated", "file")


def _choice(params: Mapping, key: str, allowed) -> str:
    return check_choice(_get(params, key), key, allowed)


def _base_model(params: Mapping, entry: str) -> str:
    """The model an evaluation entry's predictions come from (``<model>_pko`` and ``pko_only`` resolved)."""
    return parse_entry(entry, _get(params, "models"), _get(params, "pko.pko_only_from")).model


def check_models(params: Mapping) -> None:
    """The VG150 models (PSG ones: ``psg_params``), the entries evaluated and what each needs."""
    models = _vg150_models(params)
    for name in models:
        _check_model(params, name)
    tasks = _get(params, "evaluation.tasks")
    if not isinstance(tasks, list) or not tasks or not all(isinstance(t, str) and t in TASKS for t in tasks):
        raise InputError(f"must be a non-empty list of {', '.join(TASKS)}", field="evaluation.tasks")
    entries = _check_entries(params, models)
    _check_needs(params, models, entries, tasks)
    evaluation = _get(params, "evaluation")
    summary = evaluation.get("summary_entry") if isinstance(evaluation, Mapping) else None
    if summary is not None and summary not in entries:
        raise InputError(
            f"{summary!r} is not in evaluation.entries (null: the first entry)", field="evaluation.summary_entry"
        )


def _vg150_models(params: Mapping) -> dict:
    """The models of conf/model that are not PSG's; ``evaluation.model`` (experiment=one_model) must be one."""
    models = {name: m for name, m in _get(params, "models").items()
              if not (is_psg_model(m) or is_text_model(m) or is_video_model(m))}  # fmt: skip
    evaluation = _get(params, "evaluation")
    if isinstance(evaluation, Mapping) and "model" in evaluation:  # experiment=one_model names its model here
        if evaluation["model"] not in models:
            raise InputError(
                f"{evaluation['model']!r} is not a model (no conf/model/{evaluation['model']}.yaml); "
                "experiment one_model needs evaluation.model=<the name of a file in conf/model>",
                field="evaluation.model",
            )
    if not models:
        raise InputError("names no model (each model is a file conf/model/<name>.yaml)", field="evaluation.entries")
    return models


def _check_model(params: Mapping, name: str) -> None:
    """One model: a simulated one's backbone and method, or a file model's tasks."""
    key = f"models.{name}"
    if name == PKO_ONLY:
        raise InputError(f"{PKO_ONLY!r} names the PKO-only entry; call the model something else", field=key)
    if _choice(params, f"{key}.source", MODEL_SOURCES) == "simulated":
        _choice(params, f"{key}.sim_backbone", tuple(_get(params, "simulation.backbones")))
        _choice(params, f"{key}.sim_method", SIMULATED_METHODS)
        return
    files = _get(params, f"{key}.files")
    if not isinstance(files, Mapping) or not files or not set(files) <= set(TASKS):
        raise InputError(f"must map tasks ({', '.join(TASKS)}) to prediction files", field=f"{key}.files")


def _check_entries(params: Mapping, models: dict) -> list:
    """``pko.*``, the figures' models and ``evaluation.entries`` name models, ``<model>_pko`` or ``pko_only``."""
    apply_to = _get(params, "pko.apply_to")
    apply_to = apply_to if isinstance(apply_to, list) else [apply_to]
    for i, model in enumerate(apply_to):
        if not isinstance(model, str) or model not in models:
            raise InputError(f"{model!r} is not a model (no conf/model/{model}.yaml)", field=f"pko.apply_to[{i}]")
    for key in ("pko.pko_only_from", "pko.blind_model"):
        _choice(params, key, tuple(models))
    known = set(models) | {f"{m}_pko" for m in apply_to} | {"pko_only"}
    for key in ("figures.biased_model", "figures.debiased_model", "figures.per_predicate_model"):
        _choice(params, key, tuple(sorted(known)))
    entries = _get(params, "evaluation.entries")
    if not isinstance(entries, list) or not entries:
        raise InputError("must be a non-empty list", field="evaluation.entries")
    for i, entry in enumerate(entries):
        if not isinstance(entry, str) or entry not in known:
            raise InputError(
                f"{entry!r} is neither a model, <model>_pko for a model in pko.apply_to, nor pko_only",
                field=f"evaluation.entries[{i}]",
            )
    return entries


def _check_needs(params: Mapping, models: dict, entries: list, tasks: list) -> None:
    """A model read from files needs one for every task it is evaluated on (checked now, not stages later); a
    real dataset takes no simulated model."""
    needs = {_base_model(params, entry): set(tasks) for entry in entries if entry != "pko_only"}
    if "pko_only" in entries:
        needs.setdefault(_get(params, "pko.pko_only_from"), set()).update(tasks)
    blind_model, blind_task = _get(params, "pko.blind_model"), _get(params, "pko.blind_task")
    needs.setdefault(blind_model, set()).add(blind_task)
    if models[blind_model]["source"] == "simulated" and blind_task not in tasks:  # simulated for those only
        raise InputError(
            f"{blind_task} is not among evaluation.tasks ({', '.join(tasks)}), and the simulated models predict the "
            f"evaluated tasks only: set pko.blind_task to one of them",
            field="pko.blind_task",
        )
    if _get(params, "dataset.kind") != "simulated":
        _refuse_simulated_models(params, models, needs)
    for model, wanted in sorted(needs.items()):
        if models[model]["source"] == "file":
            missing = sorted(wanted - set(models[model]["files"]))
            if missing:
                raise InputError(
                    f"no prediction file for task {missing[0]} (evaluated on {', '.join(sorted(wanted))})",
                    field=f"models.{model}.files",
                )


def _refuse_simulated_models(params: Mapping, models: dict, needs: dict) -> None:
    figures = {
        _base_model(params, _get(params, f"figures.{k}"))
        for k in ("biased_model", "debiased_model", "per_predicate_model")
    }
    simulated = sorted(m for m in set(needs) | figures if models[m]["source"] == "simulated")
    if simulated:
        raise InputError(
            f"dataset {_get(params, 'dataset.name')!r} is real, but {', '.join(simulated)} "
            f"{'is a simulated model' if len(simulated) == 1 else 'are simulated models'}: simulated outputs "
            "scored on real ground truth would sit in the tables beside real ones. Evaluate your own models, "
            "e.g. experiment=one_model evaluation.model=<name> (README, 'Real model outputs')",
            field="evaluation.entries",
        )
