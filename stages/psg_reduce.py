"""DVC stage psg_reduce: every PSG entry's ranked document at the configured τ -> its metrics JSON.

Seconds for every entry, so changing τ (`dvc exp run -S metrics.tau=0`) reruns this, not the matching."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.psg_stages import run_psg_reduce


def main() -> None:
    params = load_params()
    docs = run_psg_reduce(params)
    print(f"psg_reduce: {len(docs)} entries at wIMR tau = {float(params['metrics']['tau']):g}")


if __name__ == "__main__":
    run_stage(main)
