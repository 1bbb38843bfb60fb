"""DVC stage psg_simulate: the SGBench submissions of every SIMULATED PSG model in evaluation.psg_entries."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.psg_stages import run_psg_simulate


def main() -> None:
    written = run_psg_simulate(load_params())
    print(f"psg_simulate: {len(written)} SIMULATED submissions")


if __name__ == "__main__":
    run_stage(main)
