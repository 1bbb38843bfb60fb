"""DVC stage psg_tables: the SGBench paper's Tables 1-3 for panoptic SGG, ours, every metric, and published
beside ours, as Markdown, LaTeX and CSV."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.psg_reports import run_psg_tables


def main() -> None:
    params = load_params()
    folder = f"{params['paths']['reports']}/psg/tables"
    written = run_psg_tables(params, folder)
    print(f"psg_tables: {len(written)} files in {folder}")


if __name__ == "__main__":
    run_stage(main)
