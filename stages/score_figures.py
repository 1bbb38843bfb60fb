"""DVC stage score_figures: the paper's Figures 2-4, the confusion matrices and wIMR against tau (no metrics.tau)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.figure_stages import run_score_figures


def main() -> None:
    params = load_params()
    written = run_score_figures(params, f"{params['paths']['reports']}/figures")
    print(f"score_figures: {len(written)} files in {params['paths']['reports']}/figures")


if __name__ == "__main__":
    run_stage(main)
