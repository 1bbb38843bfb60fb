"""DVC stage text_evaluate: every text-graph model of evaluation.text_entries scored on the test split (issue 48)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.mllm_stages import run_text_evaluate


def main() -> None:
    params = load_params()
    written = run_text_evaluate(params)
    print(f"text_evaluate: {len(written)} text-graph model(s) scored")


if __name__ == "__main__":
    run_stage(main)
