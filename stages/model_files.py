"""DVC stage model_files: ``data/model_files/<model>/<task>.json`` for every model params.yaml names, the size
and SHA-256 of a real model's file (simulated: only that). It depends on ``data/params/model_links`` (links
to the real files, which DVC follows), so it runs when a file's content changes, and the stages reading
one model's file depend on that model's JSON only (``sgg_eval.pipeline.fingerprint``)."""

from sgg_eval.core.protocols import BOXES
from sgg_eval.data.types import TASKS
from sgg_eval.pipeline.catalogue_files import models_of
from sgg_eval.pipeline.config import load_params, run_stage
from sgg_eval.pipeline.fingerprint import write_tree

OUTPUT = "data/model_files"
CACHE = "data/.model_files_cache.json"  # (device, inode, size, mtime) -> SHA-256: a file is hashed once


def main() -> None:
    params = load_params()
    files, labels = {}, {}
    # box models only: a PSG model's submission is the inputs stage's, a text model's answers text_evaluate's
    for name, cfg in models_of(params, BOXES).items():
        for task in TASKS:
            if cfg["source"] == "simulated":
                files[name, task] = None
            elif task in (cfg.get("files") or {}):
                files[name, task] = cfg["files"][task]
                labels[name, task] = f"models.{name}.files.{task}"
    write_tree(OUTPUT, files, CACHE, labels)
    real = sum(path is not None for path in files.values())
    print(f"model_files: {real} real model file(s) fingerprinted, {len(files) - real} simulated")


if __name__ == "__main__":
    run_stage(main)
