"""DVC stage reduce: every ranked evaluation at the configured τ -> metrics JSON, per-predicate CSV, summary.

Seconds for the whole table, so changing τ (`dvc exp run -S metrics.tau=0.25`) reruns this, not the ranking.
"""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.eval_stages import run_reduce


def main() -> None:
    params = load_params()
    docs = run_reduce(params)
    print(f"reduce: {len(docs)} evaluations at wIMR tau = {float(params['metrics']['tau']):g}")


if __name__ == "__main__":
    run_stage(main)
