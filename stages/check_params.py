"""DVC stage check_params: the whole params.yaml against the schema, before any other stage runs.

Every other stage depends on its output, so a bad value (e.g. `dvc exp run -S metrics.tau=2`) stops the
pipeline here, before DVC removes a single output. `params_checked.json` is constant, so a valid change of
one parameter reruns only the stages that read it. The large sections (`dataset`, `models`, `simulation`,
`tasks`) are also written one file each: stages depend on those files rather than listing ~130 settings as DVC
params, which would crowd `dvc exp show`.
"""

from sgg_eval.atomic import write_json
from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.params_check import check_params

OUTPUT = "data/params_checked.json"
SECTIONS = ("dataset", "models", "simulation", "tasks")


def main() -> None:
    params = load_params()
    check_params(params)
    for section in SECTIONS:
        write_json(f"data/params/{section}.json", params[section])
    write_json(OUTPUT, {"params": "params.yaml", "checked": True})
    print("check_params: params.yaml is valid")


if __name__ == "__main__":
    run_stage(main)
