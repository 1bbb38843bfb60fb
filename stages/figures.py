"""DVC stage figures: the paper's Figures 4 and 5 and the wIMR-tau curve, PNG and SVG (they show tau)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.figure_stages import run_figures


def main() -> None:
    params = load_params()
    written = run_figures(params, f"{params['paths']['reports']}/figures")
    print(f"figures: {len(written)} files in {params['paths']['reports']}/figures")


if __name__ == "__main__":
    run_stage(main)
