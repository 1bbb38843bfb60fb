"""DVC stage psg_evaluate: `psg_evaluate.py ENTRY` -> one PSG entry under every protocol of
evaluation.psg_protocols (metrics JSON)."""

import sys

from sgg_eval.metrics.misuse import warning_summary
from sgg_eval.metrics.names import metric_name
from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.psg_stages import run_psg_evaluate


def main() -> None:
    entry = sys.argv[1]
    doc = run_psg_evaluate(load_params(), entry)
    for protocol, result in doc["protocols"].items():
        m = result["metrics"]
        shown = " ".join(
            f"{name}={100 * m[name]:.2f}" if m.get(name) is not None else f"{name}=-"
            for name in (metric_name("R", 50), metric_name("mR", 50), metric_name("PR", 50), "InstR")
        )
        print(f"psg_evaluate {entry} ({protocol}): {shown}")
        warnings = warning_summary(result["notes"])
        if warnings:
            print(f"psg_evaluate {entry} ({protocol}): {warnings}", file=sys.stderr)


if __name__ == "__main__":
    run_stage(main)
