"""Where the pipeline's files live, from ``params.yaml``'s ``paths`` (all predictions under
``paths.predictions``):
- ``simulated/<model>/<task>.h5``: SIMULATED model outputs (models with ``source: simulated``);
- a real model's file is ``models.<name>.files.<task>`` (eval_results.pytorch or an sgg-eval store);
- ``pko/<model>/<task>.h5``: the model + PKO (entry ``<model>_pko``); ``pko_only/<task>.h5``: PKO-only on
  ``pko.pko_only_from`` (entry ``pko_only``);
- under ``paths.results``: ``ranked/`` (the evaluate stage), ``metrics/`` and ``per_predicate/`` (reduce),
  ``summary.json`` and ``per_predicate_by_model.csv``.
"""

from __future__ import annotations

from sgg_eval.core.errors import InputError
from sgg_eval.pipeline.entries import PKO_ONLY, Entry, parse_entry

# The pipeline's DVC files and their locks. DVC rewrites a dvc.yaml's whole lock after each stage it runs, and
# parses it more than once for that, so the work grows with the stages run times the lock's length: the stages
# that exist once per box model, the panoptic side and the video side each have their own file, and every stage
# rewrites a shorter lock (docs/decisions.md, "The pipeline's stages in four DVC files").
PIPELINE_FILES = ("dvc.yaml", "per_model/dvc.yaml", "psg_pipeline/dvc.yaml", "video_pipeline/dvc.yaml")
LOCK_FILES = tuple(f.removesuffix(".yaml") + ".lock" for f in PIPELINE_FILES)


def gt_split(params: dict) -> str:
    return f"{params['paths']['splits']}/test.h5"


def stats_file(params: dict) -> str:
    return f"{params['paths']['stats']}/stats.h5"


def entry_of(params: dict, entry: str) -> Entry:
    # pko.pko_only_from is read for the one entry it defines, so only the stages that run it declare it
    only_from = params["pko"]["pko_only_from"] if entry == PKO_ONLY and entry not in params["models"] else ""
    return parse_entry(entry, params["models"], only_from)


def prediction_file(params: dict, model: str, task: str) -> str:
    """The prediction file of ``model`` for ``task``: simulated, real, ``<model>_pko`` or ``pko_only``."""
    root = params["paths"]["predictions"]
    kind, base = entry_of(params, model)
    if kind == "pko_only":
        return f"{root}/pko_only/{task}.h5"
    if kind == "pko":
        return f"{root}/pko/{base}/{task}.h5"
    cfg = params["models"][model]
    if cfg["source"] == "simulated":
        return f"{root}/simulated/{model}/{task}.h5"
    files = cfg.get("files") or {}
    if task not in files:
        raise InputError(f"model {model} has no prediction file for task {task}", field=f"models.{model}.files")
    return files[task]


def metrics_file(params: dict, entry: str, task: str) -> str:
    return f"{params['paths']['results']}/metrics/{entry}/{task}.json"


def per_predicate_file(params: dict, entry: str, task: str) -> str:
    return f"{params['paths']['results']}/per_predicate/{entry}/{task}.csv"


def ranked_file(params: dict, entry: str, task: str) -> str:
    return f"{params['paths']['results']}/ranked/{entry}/{task}.json"


def per_image_file(params: dict, entry: str, task: str) -> str:
    """The graphs of the results page's images (``site.images``) for one entry and task (``evaluate --per-image``)."""
    return f"{params['paths']['results']}/per_image/{entry}/{task}.jsonl"


def summary_file(params: dict) -> str:
    return f"{params['paths']['results']}/summary.json"


def by_model_file(params: dict) -> str:
    return f"{params['paths']['results']}/per_predicate_by_model.csv"
