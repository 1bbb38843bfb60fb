"""DVC stage tables: the paper's Tables 1-3, the full table and published-vs-reproduced (real VG150 only)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.report_stages import run_tables


def main() -> None:
    params = load_params()
    written = run_tables(params, f"{params['paths']['reports']}/tables")
    print(f"tables: {len(written)} files in {params['paths']['reports']}/tables")


if __name__ == "__main__":
    run_stage(main)
