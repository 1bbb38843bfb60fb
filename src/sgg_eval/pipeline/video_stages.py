"""The video DVC stages (Action Genome; docs/action_genome.md, "In the pipeline"): ``video_data`` (the release, or
GENERATED files, into split stores), ``video_evaluate`` (every entry of ``evaluation.video_entries`` on every task
under every protocol of ``evaluation.video_protocols``, the constraints from one reading, with the training split
for sgg-eval's own family) and ``video_tables`` (``report.ag_tables``).

Layout under ``paths.video_data``: ``ag/splits/`` (``train.h5``, ``test.h5``, ``test_filtersmall.h5``),
``ag/summary.json``, ``ag/release/`` (generated files only), ``predictions/<entry>/<protocol>/<task>/`` (a
simulated entry's per-video files) and ``results/<entry>.json``. A real dataset's files stay where
``video_dataset.raw`` says.
"""

from __future__ import annotations

import os
import shutil

import numpy as np

from sgg_eval.core.defaults import VIDEO_PROTOCOLS
from sgg_eval.core.protocols import STTRAN_ALL
from sgg_eval.io.atomic import write_json
from sgg_eval.io.jsonio import load_json


def _folder(params: dict, *parts: str) -> str:
    return os.path.join(params["paths"]["video_data"], *parts)


def simulated(params: dict) -> bool:
    return params["video_dataset"]["kind"] == "simulated"


def run_video_data(params: dict) -> dict:
    """Write the split stores (and, simulated, the generated release first); writes and returns
    ``ag/summary.json``: each store's counts, and the training statistics (``training``, per protocol: the
    training relations and ``n_c`` per predicate, the head/body/tail groups, the distinct training triplets)."""
    from sgg_eval.video.ag_example import write_release
    from sgg_eval.video.ag_store import write_ag_splits

    d = params["video_dataset"]
    if simulated(params):
        release = _folder(params, "ag", "release")
        small = write_release(release, d["sim"]["videos"], seed=d["sim"]["seed"])["filtersmall"]
    else:
        release = d["raw"]
        small = os.path.join(release, d["small_boxes"]) if d["small_boxes"] else None
    written = write_ag_splits(release, _folder(params, "ag", "splits"), small_boxes=small)
    summary = {"dataset": d["name"], "simulated": simulated(params),
               "stores": {os.path.basename(path): split.counts for path, split in written},
               "training": {name: summary for path, _ in written if os.path.basename(path) == "train.h5"
                            for name, summary in _training_summary(path).items()}}  # fmt: skip
    write_json(_folder(params, "ag", "summary.json"), summary)
    return summary


def _training_summary(path: str) -> dict[str, dict]:
    """Per video protocol, what sgg-eval's own family reads of the training split (the store ``path``, read once),
    its frames as the protocol's loader keeps them (``video.ag_evaluate.open_training``'s facts)."""
    from sgg_eval.video.ag_beyond import longtail_groups, training_facts
    from sgg_eval.video.ag_protocol import scored_split, video_protocol
    from sgg_eval.video.ag_store import read_ag_store

    split, vocab, _ = read_ag_store(path)
    out = {}
    for name in VIDEO_PROTOCOLS:
        facts, predicates = training_facts(scored_split(split, video_protocol(name), path)), vocab.predicates
        out[name] = {"relations": dict(zip(predicates, map(int, facts.counts), strict=True)),
                     "n_c": dict(zip(predicates, map(int, facts.pairs), strict=True)),
                     "groups": longtail_groups(predicates, facts.counts),
                     "distinct_triplets": len(facts.triplets)}  # fmt: skip
    return out


def results_file(params: dict, entry: str) -> str:
    return _folder(params, "results", f"{entry}.json")


def run_video_evaluate(params: dict) -> list[str]:
    """Every entry's document (``results/<entry>.json``): per protocol and task, what ``sgg-eval evaluate --ag
    --constraint all --ag-train train.h5`` writes for its predictions."""
    from sgg_eval.video.ag_evaluate import evaluate_ag, open_split, options_for
    from sgg_eval.video.ag_protocol import store_for

    splits, written = _folder(params, "ag", "splits"), []
    train = os.path.join(splits, "train.h5")
    for entry in params["evaluation"]["video_entries"]:
        model = params["models"][entry]
        out = {"entry": entry, "method": model["method"], "simulated": model["source"] == "simulated",
               "dataset": params["video_dataset"]["name"], "protocols": {}}  # fmt: skip
        for protocol in params["evaluation"]["video_protocols"]:
            for task in params["evaluation"]["tasks"]:
                store = store_for(splits, protocol, task)
                if model["source"] == "simulated":
                    split, _, _ = open_split(store, task, protocol)
                    predictions = _simulate(params, entry, protocol, task, split)
                else:
                    predictions = model["files"][params["video_dataset"]["name"]][task]
                options = options_for(protocol, task, STTRAN_ALL, None, model["attention"])
                # at the default tau: video_tables reduces wIMR at metrics.tau from the per-predicate IMR it keeps
                out["protocols"].setdefault(protocol, {})[task] = evaluate_ag(store, predictions, options, train)
        write_json(results_file(params, entry), out)
        written.append(entry)
    return written


def _simulate(params: dict, entry: str, protocol: str, task: str, split) -> str:
    """A simulated entry's per-video files for ``split`` (``video.ag_example.predictions_for``)."""
    from sgg_eval.video.ag_example import predictions_for

    model = params["models"][entry]
    folder = _folder(params, "predictions", entry, protocol, task)
    shutil.rmtree(folder, ignore_errors=True)  # no file of an earlier world's video left behind
    os.makedirs(folder)
    made = predictions_for(split, task, seed=model["seed"], skill=model["skill"], attention=model["attention"])
    for video, arrays in made.items():
        np.savez(os.path.join(folder, f"{video}.npz"), **arrays)
    return folder


def video_results(params: dict) -> dict[str, dict]:
    """Every entry's document, in ``evaluation.video_entries`` order."""
    return {entry: load_json(results_file(params, entry)) for entry in params["evaluation"]["video_entries"]}


def run_video_tables(params: dict, folder: str) -> list[str]:
    """The AG tables (``report.ag_tables``) of every entry's document, written into ``folder``."""
    from sgg_eval.report.ag_tables import ag_tables

    results = video_results(params)
    labels = {task: params["tasks"][task]["label"] for task in params["evaluation"]["tasks"]}
    simulated_any = simulated(params) or any(doc["simulated"] for doc in results.values())
    tables = ag_tables(results, params["evaluation"]["video_protocols"], params["evaluation"]["tasks"], labels,
                       simulated_any, params["metrics"]["tau"])  # fmt: skip
    return [path for table in tables for path in table.write(folder)]


def video_runs(params: dict, commit: str) -> tuple[dict, list]:
    """The AG parent run's params and one MLflow child run per entry × protocol × task, named
    ``<video_dataset>/<entry>/<protocol>/<task>``: metrics ``<task>/<constraint>/<name>`` (the protocol's numbers
    and sgg-eval's own, wIMR at the default τ, as the document holds them)."""
    from sgg_eval.metrics.names import mlflow_key
    from sgg_eval.pipeline.tracking import ChildRun

    dataset = params["video_dataset"]["name"]
    common = {"dataset": dataset, "protocols": list(params["evaluation"]["video_protocols"]), "git_commit": commit}
    children = []
    for entry, doc in video_results(params).items():
        for protocol, tasks in doc["protocols"].items():
            for task, result in tasks.items():
                metrics = {}
                for constraint, res in result["results"].items():
                    for part in (res["metrics"], res["beyond_protocol"]["metrics"]):
                        metrics |= {mlflow_key(f"{task}/{constraint}", k): v for k, v in part.items() if v is not None}
                children.append(ChildRun(
                    name=f"{dataset}/{entry}/{protocol}/{task}",
                    params={"dataset": dataset, "protocol": protocol, "model": entry, "task": task,
                            "method": doc["method"], "simulated": doc["simulated"], "git_commit": commit},
                    metrics=metrics, artifacts=[results_file(params, entry)],
                    tags={"sgg_eval.task": task, "sgg_eval.dataset": dataset, "sgg_eval.protocol": protocol,
                          "sgg_eval.model": entry, "sgg_eval.product": "video"}))  # fmt: skip
    return common, children
