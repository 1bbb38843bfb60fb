"""DVC stage apply_pko: `apply_pko.py MODEL` writes MODEL+PKO, `apply_pko.py --only` the PKO-only baseline, for
every task of evaluation.tasks."""

import sys

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.model_stages import run_apply_pko


def main() -> None:
    only = sys.argv[1:] == ["--only"]
    for out in run_apply_pko(load_params(), None if only else sys.argv[1], only=only):
        print(f"apply_pko: wrote {out}")


if __name__ == "__main__":
    run_stage(main)
