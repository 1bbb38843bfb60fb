"""DVC stage simulate: SIMULATED outputs of every model with source: simulated, for every task."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.model_stages import run_simulate


def main() -> None:
    written = run_simulate(load_params())
    print(f"simulate: {len(written)} SIMULATED prediction stores")


if __name__ == "__main__":
    run_stage(main)
