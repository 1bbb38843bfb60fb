"""DVC stage check_params: params.yaml and the conf/ files it names against the schema, before any other stage.

Every other stage runs after it (each depends on one of its outputs), so a bad value (e.g.
`dvc exp run -S metrics.tau=2`) stops the pipeline here, before DVC removes a single output. It writes what
the stages read beyond their params: the datasets, VG150 and panoptic (with the simulated worlds' shapes),
the catalogue (the models, task labels and simulation settings params.yaml names) in one file per product
(``pipeline.catalogue_files``), and links to every real model file (DVC follows them: new content in a file
reruns ``model_files`` and ``inputs``; a text-graph model's answers, ``text_evaluate``). A valid change of one
knob leaves them unchanged, so it reruns only the stages that list that knob as a param.
"""

from sgg_eval.io.atomic import write_json
from sgg_eval.pipeline.catalogue_files import WORLDS, catalogue_files
from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.fingerprint import link_files
from sgg_eval.pipeline.mllm_params import is_text_model
from sgg_eval.pipeline.param_reads import CARRIERS
from sgg_eval.pipeline.params_check import check_params
from sgg_eval.pipeline.psg_params import is_psg_model
from sgg_eval.pipeline.video_params import is_video_model


def main() -> None:
    params = load_params()
    check_params(params)
    psg_name, video_name = params["psg_dataset"]["name"], params["video_dataset"]["name"]
    real = [(name, cfg) for name, cfg in params["models"].items() if cfg["source"] == "file"]
    link_files(
        "data/params/model_links",
        {
            f"{name}.{key}": (path, f"models.{name}.files.{key}")
            for name, cfg in real
            if not is_text_model(cfg) and not is_video_model(cfg)
            for key, path in (cfg.get("files") or {}).items()
            if not is_psg_model(cfg) or key == psg_name  # a PSG model: the submission for this dataset only
        },
    )
    # video models' predictions apart too: their own stage reads them (the files for this dataset only)
    link_files(
        "data/params/video_links",
        {f"{name}.{task}": (path, f"models.{name}.files.{video_name}.{task}") for name, cfg in real
         if is_video_model(cfg) for task, path in cfg["files"][video_name].items()},
    )  # fmt: skip
    # text-graph models' answers apart: a new ranked or PSG file must not rerun text_evaluate, nor new answers them
    link_files(
        "data/params/text_links",
        {f"{name}.answers": (cfg["files"]["answers"], f"models.{name}.files.answers") for name, cfg in real
         if is_text_model(cfg)},
    )  # fmt: skip
    for path, section in CARRIERS.items():  # each is an out of this stage, which declares the section
        carried = dict(params[section])
        if carried["kind"] == "simulated" and section in WORLDS:  # (the generated AG files have no world)
            carried["world"] = params[WORLDS[section]]["world"]
        write_json(path, carried)
    for path, part in catalogue_files(params).items():  # one per product: a stage depends on what it reads
        write_json(path, part)
    print(f"check_params: params.yaml and the {len(params['models'])} models it names are valid")


if __name__ == "__main__":
    run_stage(main)
