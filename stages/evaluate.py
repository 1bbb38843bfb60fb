"""DVC stage evaluate: `evaluate.py ENTRY` -> the ranked evaluation of one model on every task of
evaluation.tasks (the reduce stage turns each into the metrics at the configured tau)."""

import sys

from sgg_eval.metrics.document import every_metric
from sgg_eval.metrics.misuse import warning_summary
from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.eval_stages import run_evaluate


def main() -> None:
    entry = sys.argv[1]
    for task, doc in run_evaluate(load_params(), entry).items():
        m = every_metric(doc)  # an OIv6 document's R@50 is the micro one (docs/oiv6.md)
        print(
            f"evaluate {entry} {task}: R@50={100 * m['R@50']:.2f} mR@50={100 * m['mR@50']:.2f} "
            f"IMR@20={100 * m['IMR@20']:.2f}"
        )
        warnings = warning_summary(doc["notes"])
        if warnings:
            print(f"evaluate {entry} {task}: {warnings}", file=sys.stderr)


if __name__ == "__main__":
    run_stage(main)
