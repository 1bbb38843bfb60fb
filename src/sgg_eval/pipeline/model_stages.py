"""The DVC stages that make prediction files: ``simulate`` (the SIMULATED models), ``apply_pko`` and
``pko_only`` (the PKO prior on a model's saved scores), and ``blind_replace`` (the paper's Table 1)."""

from __future__ import annotations

import os
import time
from collections import defaultdict

from sgg_eval.boxes.pko import PKOParams, blind_replacement, pko_predictions
from sgg_eval.boxes.sources import PredictionSource, open_predictions
from sgg_eval.core.protocols import BOXES
from sgg_eval.data.stats import TrainingStats, read_stats
from sgg_eval.io.atomic import write_json
from sgg_eval.pipeline.catalogue_files import models_of
from sgg_eval.pipeline.paths import (
    gt_split,
    prediction_file,
    stats_file,
)
from sgg_eval.simulate.models import Backbone, simulate_models
from sgg_eval.simulate.params import method_settings


def open_model(params: dict, model: str, task: str, stats: TrainingStats) -> PredictionSource:
    return open_predictions(prediction_file(params, model, task), gt=gt_split(params), vocab=stats.vocab)


def run_simulate(params: dict) -> list[str]:
    """Write the outputs of every simulated model for every task, and their list (``index.json``); returns
    the files written. The folder exists even when no model is simulated (a real dataset): it is the stage's
    declared output."""
    sim = params["simulation"]
    os.makedirs(f"{params['paths']['predictions']}/simulated", exist_ok=True)
    stats = read_stats(stats_file(params))
    by_backbone: dict[str, dict[str, str]] = defaultdict(dict)
    for name, cfg in models_of(params, BOXES).items():  # PSG's: psg_stages; text graphs': mllm_stages
        if cfg["source"] == "simulated":
            by_backbone[cfg["sim_backbone"]][cfg["sim_method"]] = name
    written = []
    tasks = params["evaluation"]["tasks"]
    step, start = 0, time.perf_counter()
    for backbone, methods in sorted(by_backbone.items()):
        bb = Backbone(backbone, **sim["backbones"][backbone])
        for task in tasks:
            # a line per step: the stage takes minutes at the default scale, and DVC shows lines, not bars
            step += 1
            print(
                f"simulate: {backbone} {task}, {len(methods)} models (step {step}/{len(by_backbone) * len(tasks)}"
                f", {time.perf_counter() - start:.0f} s so far)",
                flush=True,
            )
            outputs = {m: prediction_file(params, name, task) for m, name in sorted(methods.items())}
            for path in outputs.values():
                os.makedirs(os.path.dirname(path), exist_ok=True)
            simulate_models(
                gt_split(params),
                stats,
                bb,
                task,
                outputs,
                seed=int(sim["seed"]),
                score_kind=sim["score_kind"],
                score_dtype=sim["score_dtype"],
                val_path=f"{params['paths']['splits']}/val.h5",
                methods=method_settings(sim, backbone, task),
            )
            written.extend(outputs.values())
    # the stage's folder always holds this list, so a real dataset's run (no simulated model) leaves no empty
    # output folder, which DVC warns about once per stage that depends on it
    folder = f"{params['paths']['predictions']}/simulated"
    write_json(
        os.path.join(folder, "index.json"),
        {"simulated_prediction_stores": sorted(os.path.relpath(w, folder) for w in written)},
    )
    return written


def pko_params(params: dict) -> PKOParams:
    p = params["pko"]
    return PKOParams(lam=float(p["lam"]), eps=float(p["eps"]), prob_clip=float(p["prob_clip"]))


def run_apply_pko(params: dict, model: str | None, *, only: bool = False) -> list[str]:
    """``<model>_pko`` (or, with ``only``, PKO-only on ``pko.pko_only_from``) for every task of
    ``evaluation.tasks``; returns the files written."""
    src_model = params["pko"]["pko_only_from"] if only else model
    name = "pko_only" if only else f"{model}_pko"
    stats = read_stats(stats_file(params))  # read once per stage
    written = []
    for task in params["evaluation"]["tasks"]:
        out = prediction_file(params, name, task)
        pko_predictions(
            open_model(params, src_model, task, stats),
            task,
            stats,
            out,
            pko_params(params),
            only=only,
            model=name,
            score_dtype=params["simulation"]["score_dtype"],
        )
        written.append(out)
    return written


def run_blind_replace(params: dict, out_json: str) -> list[dict]:
    """Paper Table 1 for ``pko.blind_model`` on ``pko.blind_task``; writes the rows as JSON."""
    p = params["pko"]
    stats = read_stats(stats_file(params))
    source = open_model(params, p["blind_model"], p["blind_task"], stats)
    rows, warnings = blind_replacement(source, stats, p["blind_task"], max_n=int(p["blind_max_n"]))
    doc = {"model": p["blind_model"], "task": p["blind_task"], "simulated": source.simulated, "rows": rows}
    write_json(out_json, {**doc, "notes": warnings})
    return rows
