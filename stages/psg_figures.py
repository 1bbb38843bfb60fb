"""DVC stage psg_figures: the SGBench paper's Fig. 3 (PR@50 against PRk, one point per method), PNG and SVG."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.psg_reports import run_psg_figures


def main() -> None:
    params = load_params()
    folder = f"{params['paths']['reports']}/psg/figures"
    written = run_psg_figures(params, folder)
    print(f"psg_figures: {len(written)} files in {folder}")


if __name__ == "__main__":
    run_stage(main)
