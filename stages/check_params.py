"""DVC stage check_params: the whole params.yaml against the schema, before any other stage runs.

Every other stage depends on its output, so a bad value (e.g. `dvc exp run -S metrics.tau=2`) stops the
pipeline here, before DVC removes a single output. The output's content is constant, so a valid change of
one parameter reruns only the stages that read it.
"""

from sgg_eval.atomic import write_json
from sgg_eval.config import load_params, run_stage
from sgg_eval.params_check import check_params

OUTPUT = "data/params_checked.json"


def main() -> None:
    check_params(load_params())
    write_json(OUTPUT, {"params": "params.yaml", "checked": True})
    print("check_params: params.yaml is valid")


if __name__ == "__main__":
    run_stage(main)
