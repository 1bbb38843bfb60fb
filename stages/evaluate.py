"""DVC stage evaluate: `evaluate.py ENTRY TASK` -> metrics JSON and per-predicate CSV for one model x task."""

import sys

from sgg_eval.config import load_params, run_stage
from sgg_eval.pipeline import run_evaluate


def main() -> None:
    entry, task = sys.argv[1], sys.argv[2]
    m = run_evaluate(load_params(), entry, task)["metrics"]
    print(f"evaluate {entry} {task}: R@50={100 * m['R@50']:.2f} mR@50={100 * m['mR@50']:.2f} "
          f"IMR@20={100 * m['IMR@20']:.2f} wIMR@20={100 * (m['wIMR@20'] or 0):.2f}")


if __name__ == "__main__":
    run_stage(main)
