"""DVC stage model_files: size and SHA-256 of every real model's prediction file (always rerun; cheap
while the files are untouched). Stages that read prediction files depend on its output, so a file
regenerated at the same path reruns them instead of leaving the old metrics in place."""

from sgg_eval.atomic import write_json
from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.fingerprint import fingerprints

OUTPUT = "data/model_files.json"
CACHE = "data/.model_files_cache.json"


def main() -> None:
    params = load_params()
    tasks = params["evaluation"]["tasks"]
    files = {f"models.{name}.files.{task}": path for name, cfg in params["models"].items()
             if cfg.get("source") == "file" for task, path in (cfg.get("files") or {}).items() if task in tasks}
    write_json(OUTPUT, fingerprints(files, CACHE))
    print(f"model_files: {len(files)} real model file(s) fingerprinted")


if __name__ == "__main__":
    run_stage(main)
