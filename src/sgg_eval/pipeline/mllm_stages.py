"""The DVC stage ``text_evaluate`` (issue 48): every model of ``evaluation.text_entries`` scored on the test split by
its protocol (``sets``), one metrics document per model in ``<results>/text/``, which the ``tables`` stage shows
beside the ranked models. A simulated model's answers are made first (``simulate.mllm_answers``), beside its
metrics as ``<model>.answers.jsonl``; a real one's are its ``files.answers``."""

from __future__ import annotations

import os

from sgg_eval.io.atomic import write_json, write_text
from sgg_eval.pipeline.paths import gt_split


def text_results_folder(params: dict) -> str:
    return f"{params['paths']['results']}/text"


def run_text_evaluate(params: dict) -> list[str]:
    """Score every text entry; the folder exists even without one (it is the stage's output)."""
    from sgg_eval.data.store import SplitStore
    from sgg_eval.simulate.mllm_answers import simulated_answers
    from sgg_eval.text.evaluate import evaluate_text_graphs

    results = text_results_folder(params)
    os.makedirs(results, exist_ok=True)
    written = []
    for name in params["evaluation"]["text_entries"]:
        cfg = params["models"][name]
        if cfg["source"] == "simulated":
            with SplitStore(gt_split(params)) as split:
                text = simulated_answers(list(split), split.vocab, cfg["sim"])
            answers = f"{results}/{name}.answers.jsonl"
            write_text(answers, text)
        else:
            answers = cfg["files"]["answers"]
        doc = evaluate_text_graphs(answers, gt_split(params), cfg["protocol"])
        doc["entry"] = {"name": name, "backbone": cfg.get("backbone", name), "method": cfg.get("method", ""),
                        "simulated": cfg["source"] == "simulated"}  # fmt: skip
        doc["input"] = {"answers": os.path.basename(answers), "gt": "test split"}  # no machine paths in results
        path = f"{results}/{name}.json"
        write_json(path, doc)
        written.append(path)
    # the folder is never empty (DVC warns of an empty output); a .txt, so no model's <name>.json can be it
    write_text(f"{results}/text_entries.txt", "".join(f"{name}\n" for name in params["evaluation"]["text_entries"]))
    return written


def load_text_results(params: dict) -> dict[str, dict]:
    """The text entries' metrics documents by name (those the stage wrote)."""
    import json

    out = {}
    for name in params["evaluation"].get("text_entries", []):
        path = f"{text_results_folder(params)}/{name}.json"
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                out[name] = json.load(fh)
    return out
