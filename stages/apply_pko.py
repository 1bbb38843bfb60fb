"""DVC stage apply_pko: `apply_pko.py MODEL TASK` writes MODEL+PKO; `apply_pko.py --only TASK` writes PKO-only."""

import sys

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.model_stages import run_apply_pko


def main() -> None:
    args = sys.argv[1:]
    only = args[:1] == ["--only"]
    model, task = (None, args[1]) if only else (args[0], args[1])
    out = run_apply_pko(load_params(), model, task, only=only)
    print(f"apply_pko: wrote {out}")


if __name__ == "__main__":
    run_stage(main)
