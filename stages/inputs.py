"""DVC stage inputs: ``data/inputs/<entry>/<task>.json``, the fingerprint of the exact file
``evaluate@<entry>-<task>`` reads (a simulated model's, a PKO output or a real model's file). Each evaluate
stage depends on its own JSON, so a changed prediction file reruns the evaluations of that file only
(``sgg_eval.pipeline.fingerprint``)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.fingerprint import write_tree
from sgg_eval.pipeline.paths import prediction_file

OUTPUT = "data/inputs"
CACHE = "data/.inputs_cache.json"


def main() -> None:
    params = load_params()
    e = params["evaluation"]
    files = {(entry, task): prediction_file(params, entry, task) for entry in e["entries"] for task in e["tasks"]}
    write_tree(OUTPUT, files, CACHE)
    print(f"inputs: {len(files)} evaluation inputs fingerprinted")


if __name__ == "__main__":
    run_stage(main)
