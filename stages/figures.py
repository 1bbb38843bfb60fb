"""DVC stage figures: the paper's Figure 5, the wIMR weights at metrics.tau, PNG and SVG (it shows tau)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.figure_stages import run_figures


def main() -> None:
    params = load_params()
    written = run_figures(params, f"{params['paths']['reports']}/figures")
    print(f"figures: {len(written)} files in {params['paths']['reports']}/figures")


if __name__ == "__main__":
    run_stage(main)
