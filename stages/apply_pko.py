"""DVC stage apply_pko: `apply_pko.py MODEL` writes MODEL+PKO, `apply_pko.py --only` the PKO-only baseline, for
every task of evaluation.tasks."""

import sys

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.model_stages import run_apply_pko


def main() -> None:
    only = sys.argv[1:] == ["--only"]
    model = None if only else sys.argv[1]
    params = load_params()
    for task in params["evaluation"]["tasks"]:
        print(f"apply_pko: wrote {run_apply_pko(params, model, task, only=only)}")


if __name__ == "__main__":
    run_stage(main)
