"""DVC stage check_params: params.yaml and the conf/ files it names against the schema, before any other stage.

Every other stage runs after it (each depends on one of its outputs), so a bad value (e.g.
`dvc exp run -S metrics.tau=2`) stops the pipeline here, before DVC removes a single output. It writes what
the stages read beyond their params: the dataset (with the simulated world's shape), the catalogue (the
models, task labels and simulation settings params.yaml names) and links to every real model file (DVC
follows them: new content in a file reruns ``model_files``). A valid change of one knob leaves all three
unchanged, so it reruns only the stages that list that knob as a param.
"""

from sgg_eval.atomic import write_json
from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.fingerprint import link_files
from sgg_eval.pipeline.params_check import check_params


def main() -> None:
    params = load_params()
    check_params(params)
    link_files(
        "data/params/model_links",
        {
            f"{name}.{task}": (path, f"models.{name}.files.{task}")
            for name, cfg in params["models"].items()
            if cfg["source"] == "file"
            for task, path in (cfg.get("files") or {}).items()
        },
    )
    dataset = dict(params["dataset"])
    if dataset["kind"] == "simulated":
        dataset["world"] = params["simulation"]["world"]
    write_json("data/params/dataset.json", dataset)
    write_json("data/params/catalogue.json", {k: params[k] for k in ("models", "tasks", "simulation")})
    print(f"check_params: params.yaml and the {len(params['models'])} models it names are valid")


if __name__ == "__main__":
    run_stage(main)
