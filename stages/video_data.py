"""DVC stage video_data: Action Genome (the release, or GENERATED files) -> split stores (ag/splits) and their
counts (ag/summary.json)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.video_stages import run_video_data


def main() -> None:
    summary = run_video_data(load_params())
    kind = "GENERATED (SIMULATED)" if summary["simulated"] else "real"
    test = summary["stores"]["test.h5"]
    print(f"video_data: {kind} {summary['dataset']}, {test['videos']} test videos as STTran keeps them")


if __name__ == "__main__":
    run_stage(main)
