"""DVC stage video_tables: Action Genome's tables as its papers print them, the constraints side by side, as
Markdown, LaTeX and CSV."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.video_stages import run_video_tables


def main() -> None:
    params = load_params()
    folder = f"{params['paths']['reports']}/video/tables"
    written = run_video_tables(params, folder)
    print(f"video_tables: {len(written)} files in {folder}")


if __name__ == "__main__":
    run_stage(main)
