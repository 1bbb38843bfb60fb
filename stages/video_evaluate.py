"""DVC stage video_evaluate: every model of evaluation.video_entries on every task under every protocol of
evaluation.video_protocols, the constraints from one reading (results/<entry>.json)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.video_stages import run_video_evaluate


def main() -> None:
    entries = run_video_evaluate(load_params())
    print(f"video_evaluate: {len(entries)} entries scored")


if __name__ == "__main__":
    run_stage(main)
