"""DVC stage track: every evaluation as a nested MLflow run under its dataset's pipeline run (VG150: entry x
task; PSG: entry x protocol)."""

from sgg_eval.io.atomic import write_json
from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.report_stages import run_track


def main() -> None:
    params = load_params()
    out = f"{params['paths']['results']}/mlflow_runs.json"
    if not params["tracking"]["enabled"]:
        write_json(out, {"enabled": False, "logged": False, "runs": []})  # the output DVC expects
        print("track: tracking disabled (tracking.enabled=false)")
        return
    ids = run_track(params, out)
    for dataset, logged in (ids or {}).items():
        print(
            f"track: {len(logged['children'])} {dataset} runs under parent {logged['parent']}; `make ui` to browse them"
        )


if __name__ == "__main__":
    run_stage(main)
