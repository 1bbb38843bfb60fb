"""The edge between ``params.yaml`` (plain dicts, generated from conf/) and the library, for the DVC stages.

Where files live (all under ``paths.predictions``):
- ``simulated/<model>/<task>.h5``: SIMULATED model outputs (models with ``source: simulated``);
- a real model's file is ``models.<name>.files.<task>`` (eval_results.pytorch or an sgg-eval store);
- ``pko/<model>/<task>.h5``: the model + PKO; ``pko_only/<task>.h5``: PKO-only on ``pko.pko_only_from``.
"""

from __future__ import annotations

import os
from collections import defaultdict

from sgg_eval.atomic import write_json
from sgg_eval.data.simulate_models import Backbone, simulate_models
from sgg_eval.pko import PKOParams, blind_replacement, pko_predictions
from sgg_eval.sources import PredictionSource, open_predictions
from sgg_eval.stats import read_stats

TASKS = ("predcls", "sgcls", "sgdet")


def gt_split(params: dict) -> str:
    return f"{params['paths']['splits']}/test.h5"


def stats_file(params: dict) -> str:
    return f"{params['paths']['stats']}/stats.h5"


def prediction_file(params: dict, model: str, task: str) -> str:
    """The prediction file of ``model`` for ``task``: simulated, real, ``<model>+pko`` or ``pko_only``."""
    root = params["paths"]["predictions"]
    if model == "pko_only":
        return f"{root}/pko_only/{task}.h5"
    if model.endswith("+pko"):
        return f"{root}/pko/{model[:-4]}/{task}.h5"
    cfg = params["models"][model]
    if cfg["source"] == "simulated":
        return f"{root}/simulated/{model}/{task}.h5"
    files = cfg.get("files") or {}
    if task not in files:
        raise KeyError(f"model {model} has no file for task {task} (models.{model}.files.{task})")
    return files[task]


def open_model(params: dict, model: str, task: str) -> PredictionSource:
    stats = read_stats(stats_file(params))
    return open_predictions(prediction_file(params, model, task), gt=gt_split(params), vocab=stats.vocab)


def run_simulate(params: dict) -> list[str]:
    """Write the outputs of every simulated model for every task; returns the files written."""
    sim = params["simulation"]
    stats = read_stats(stats_file(params))
    by_backbone: dict[str, dict[str, str]] = defaultdict(dict)
    for name, cfg in params["models"].items():
        if cfg["source"] == "simulated":
            by_backbone[cfg["sim_backbone"]][cfg["sim_method"]] = name
    written = []
    for backbone, methods in sorted(by_backbone.items()):
        bb = Backbone(backbone, **sim["backbones"][backbone])
        for task in TASKS:
            outputs = {m: prediction_file(params, name, task) for m, name in sorted(methods.items())}
            for path in outputs.values():
                os.makedirs(os.path.dirname(path), exist_ok=True)
            simulate_models(gt_split(params), stats, bb, task, outputs, seed=int(sim["seed"]),
                            score_kind=sim["score_kind"], score_dtype=sim["score_dtype"])
            written.extend(outputs.values())
    return written


def pko_params(params: dict) -> PKOParams:
    p = params["pko"]
    return PKOParams(lam=float(p["lam"]), eps=float(p["eps"]), prob_clip=float(p["prob_clip"]))


def run_apply_pko(params: dict, model: str, task: str, *, only: bool = False) -> str:
    """``<model>+pko`` (or PKO-only on ``pko.pko_only_from``) for ``task``; returns the file written."""
    src_model = params["pko"]["pko_only_from"] if only else model
    out = prediction_file(params, "pko_only" if only else f"{model}+pko", task)
    source = open_model(params, src_model, task)
    name = "pko_only" if only else f"{model}+pko"
    pko_predictions(source, task, read_stats(stats_file(params)), out, pko_params(params), only=only, model=name,
                    score_dtype=params["simulation"]["score_dtype"])
    return out


def run_blind_replace(params: dict, out_json: str) -> list[dict]:
    """Paper Table 1 for ``pko.blind_model`` on ``pko.blind_task``; writes the rows as JSON."""
    p = params["pko"]
    source = open_model(params, p["blind_model"], p["blind_task"])
    rows = blind_replacement(source, read_stats(stats_file(params)), p["blind_task"], max_n=int(p["blind_max_n"]))
    write_json(out_json, {"model": p["blind_model"], "task": p["blind_task"], "simulated": source.simulated,
                          "rows": rows})
    return rows
