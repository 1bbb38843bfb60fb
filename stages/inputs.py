"""DVC stage inputs: ``data/inputs/<entry>/<task>.json``, the fingerprint of the exact file
``evaluate@<entry>`` reads for that task (a simulated model's, a PKO output or a real model's file), and
``data/psg_inputs/<entry>/panoptic.json``, that of the submission ``psg_evaluate@<entry>`` reads (a folder of
its own: the VG150 figures depend on ``data/inputs`` whole, and a PSG submission is none of their business).
Each evaluate stage depends on its entry's folder, so a changed prediction file reruns the evaluation of that entry only
(``sgg_eval.pipeline.fingerprint``)."""

from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.fingerprint import write_tree
from sgg_eval.pipeline.paths import prediction_file
from sgg_eval.pipeline.psg_stages import PANOPTIC, psg_prediction_file

OUTPUT = "data/inputs"
PSG_OUTPUT = "data/psg_inputs"
CACHE = "data/.inputs_cache.json"
PSG_CACHE = "data/.psg_inputs_cache.json"


def main() -> None:
    params = load_params()
    e = params["evaluation"]
    files = {(entry, task): prediction_file(params, entry, task) for entry in e["entries"] for task in e["tasks"]}
    write_tree(OUTPUT, files, CACHE)
    psg_files, labels = {}, {}
    for entry in e["psg_entries"]:
        psg_files[entry, PANOPTIC] = psg_prediction_file(params, entry)
        if params["models"][entry]["source"] == "file":
            labels[entry, PANOPTIC] = f"models.{entry}.files.{params['psg_dataset']['name']}"
    write_tree(PSG_OUTPUT, psg_files, PSG_CACHE, labels, folders=True)  # a submission may be a folder
    print(f"inputs: {len(files) + len(psg_files)} evaluation inputs fingerprinted")


if __name__ == "__main__":
    run_stage(main)
