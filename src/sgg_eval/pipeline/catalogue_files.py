"""The catalogue as the stages depend on it: one file per product, written by ``check_params``.

The catalogue (``pipeline.catalogue``: the models, task labels and simulators ``params.yaml`` names) reaches
the stages through ``load_params``; DVC sees it through the files written here, one per product, and each stage
depends on the products it reads. So a new PSG model reruns no VG150 stage, and a new VG150 model no PSG
stage: with one file for all, either re-ranked every entry of the other benchmark.

- ``catalogue_boxes.json``: the box-SGG models (a model file without ``benchmark``), the task labels and the simulator;
- ``catalogue_panoptic.json``: the PSG models (``benchmark: psg``) and the panoptic simulator;
- ``catalogue_text.json``: the text-graph models (``benchmark: text``);
- ``catalogue_video.json``: the video models (``benchmark: video``, Action Genome) and the task labels.

A model's ``benchmark`` is what sorts it; a stage may read it of any model to pick its own, since moving a model
to another product rewrites both files. ``tests/test_params_tracked.py`` checks, from what each stage read while
the pipeline ran, that it depends on the file carrying every catalogue key it read (:func:`carriers_of`).
"""

from __future__ import annotations

from collections.abc import Mapping

from sgg_eval.core.protocols import BOXES, PANOPTIC, TEXT, VIDEO
from sgg_eval.pipeline.mllm_params import is_text_model
from sgg_eval.pipeline.param_reads import CARRIERS
from sgg_eval.pipeline.psg_params import is_psg_model
from sgg_eval.pipeline.video_params import is_video_model

FILES = {product: f"data/params/catalogue_{product}.json" for product in (BOXES, PANOPTIC, TEXT, VIDEO)}
# what each product's file holds beside its models
SECTIONS = {BOXES: ("tasks", "simulation"), PANOPTIC: ("psg_simulation",), TEXT: (), VIDEO: ("tasks",)}
# a simulated dataset's carrier (param_reads.CARRIERS) also holds its world's shape, from this catalogue part
WORLDS = {"dataset": "simulation", "psg_dataset": "psg_simulation"}
SORTING_KEY = "benchmark"  # a model file's product (absent: box SGG)


def product_of(model: Mapping) -> str:
    """The product a model file belongs to, read from its ``benchmark`` alone."""
    if is_video_model(model):
        return VIDEO
    return PANOPTIC if is_psg_model(model) else TEXT if is_text_model(model) else BOXES


def models_of(params: Mapping, product: str) -> dict[str, Mapping]:
    """The catalogue's models of ``product``, in its order; of the others only ``benchmark`` is read."""
    models = params["models"]
    return {name: models[name] for name in models if product_of(models[name]) == product}


def catalogue_files(params: Mapping) -> dict[str, dict]:
    """Each product's file -> what it holds (module docstring)."""
    return {
        path: {"models": models_of(params, product), **{s: params[s] for s in SECTIONS[product]}}
        for product, path in FILES.items()
    }


def carriers_of(key: str, models: Mapping) -> set[str]:
    """The files that carry the catalogue's dotted ``key`` (``models.<name>.<...>``, ``tasks.<...>``,
    ``simulation.<...>``, ``psg_simulation.<...>``): a stage that read it must depend on one of them. ``models``
    is the resolved catalogue's."""
    section, _, rest = key.partition(".")
    if section == "models":
        name, _, field = rest.partition(".")
        if field == SORTING_KEY:
            return set(FILES.values())  # moving a model to another product rewrites both files
        return {FILES[product_of(models[name])]}
    out = {path for product, path in FILES.items() if section in SECTIONS[product]}
    if rest == "world" or rest.startswith("world."):
        out |= {path for path, carried in CARRIERS.items() if WORLDS.get(carried) == section}
    return out
