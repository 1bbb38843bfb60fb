"""DVC stage s2g: Sentence-to-Graph retrieval per model, off unless s2g.run (issue 50, docs/s2g.md)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.s2g_stage import run_s2g_stage


def main() -> None:
    written = run_s2g_stage(load_params())
    print(f"s2g: {len(written)} model(s) scored" if written else "s2g: off (s2g.run is false)")


if __name__ == "__main__":
    run_stage(main)
