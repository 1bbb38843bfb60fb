"""The DVC stages after ``reduce``: the paper's tables and the MLflow runs, from the metrics documents ``reduce``
wrote (``pipeline.paths`` has the paths; ``model_stages`` and ``eval_stages`` the stages before,
``figure_stages`` the figures)."""

from __future__ import annotations

import os
from pathlib import Path

from sgg_eval.core.defaults import IMR_KS, RECALL_KS, TRIPLET_KS
from sgg_eval.core.protocols import BOXES, OPEN_IMAGES_DOCUMENT, PANOPTIC, SGG_BENCHMARK_DOCUMENT, TEXT, VIDEO
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.io.atomic import write_json
from sgg_eval.metrics.names import mlflow_key
from sgg_eval.pipeline.catalogue_files import FILES as CATALOGUE_FILES
from sgg_eval.pipeline.entries import method_family
from sgg_eval.pipeline.eval_stages import load_results
from sgg_eval.pipeline.mllm_stages import load_text_results
from sgg_eval.pipeline.paths import LOCK_FILES, metrics_file, per_predicate_file
from sgg_eval.report.mllm_table import text_graphs_table


def run_tables(params: dict, folder: str) -> list[str]:
    """Write Tables 1-3, the full table and published vs reproduced (VG150 and the simulated benchmark only) into
    ``folder``."""
    import json

    from sgg_eval.core.defaults import OPENVOCAB_PROTOCOLS, OPENVOCAB_SETTINGS
    from sgg_eval.report.published import published_vs_reproduced
    from sgg_eval.report.tables import oiv6_table, openvocab_table, paper_tables

    results = load_results(params)
    blind_path = f"{params['paths']['results']}/blind_replacement.json"
    blind = json.load(open(blind_path, encoding="utf-8")) if os.path.exists(blind_path) else None
    simulated = any(doc["entry"]["simulated"] for doc in results.values())
    entries = list(params["evaluation"]["entries"])
    tau = float(params["metrics"]["tau"])
    labels = {task: cfg["label"] for task, cfg in params["tasks"].items()}
    name, kind = params["dataset"]["name"], params["dataset"]["kind"]
    protocol = params["metrics"]["protocol"]
    open_images = protocol_record(protocol).document == OPEN_IMAGES_DOCUMENT
    if open_images:  # the captions say which R@K the columns hold
        name = f"{name} (protocol {protocol}: R@K micro, as Open Images V6 tables print it)"
    tables = paper_tables(results, entries, blind, simulated, tau, labels, name)
    tables.append(published_vs_reproduced(results, entries, simulated, tau, kind, name))
    if open_images:
        tables.insert(0, oiv6_table(results, entries, simulated, labels, params["dataset"]["name"]))
    if protocol_record(protocol).document == SGG_BENCHMARK_DOCUMENT:
        from sgg_eval.report.sgg_benchmark_table import sgg_benchmark_table

        tables.insert(0, sgg_benchmark_table(results, entries, simulated, labels, params["dataset"]["name"]))
    if protocol in OPENVOCAB_PROTOCOLS:
        setting = params["metrics"]["openvocab"]["setting"] or OPENVOCAB_SETTINGS[protocol][0]
        table = openvocab_table(results, entries, simulated, labels, protocol, setting, params["dataset"]["name"])
        tables.insert(0, table)
    from sgg_eval.report.confusion import confusions_table

    figures = params["figures"]
    compared = list(dict.fromkeys(e for e in (figures["biased_model"], figures["debiased_model"]) if e in entries))
    confusions = confusions_table(results, compared, labels, f" on {params['dataset']['name']}" + (
        ". SIMULATED data." if simulated else "."))  # fmt: skip
    if confusions is not None:
        tables.append(confusions)
    text_results = load_text_results(params)
    if text_results:
        tables.append(text_graphs_table(text_results, results, entries, params["dataset"]["name"]))
    from sgg_eval.pipeline.s2g_stage import load_s2g_results
    from sgg_eval.report.s2g_table import s2g_table

    s2g = s2g_table(load_s2g_results(params), params["dataset"]["name"])
    if s2g is not None:
        tables.append(s2g)
    return [p for t in tables for p in t.write(folder)]


def child_tags(task: str, dataset: str, entry: str, family: str) -> dict[str, str]:
    """The tags the MLflow view groups and filters nested runs by."""
    return {"sgg_eval.task": task, "sgg_eval.dataset": dataset, "sgg_eval.model": entry,
            "sgg_eval.method_family": family}  # fmt: skip


def _text_children(params: dict, common: dict) -> list:
    """One nested run per text-graph model (``<dataset>/<entry>/text``): its protocol's numbers as metrics
    ``text/<name>``, its document as an artifact."""
    from sgg_eval.pipeline.mllm_stages import load_text_results, text_results_folder
    from sgg_eval.pipeline.tracking import ChildRun, metrics_of

    dataset = params["dataset"]["name"]
    return [
        ChildRun(
            name=f"{dataset}/{entry}/text",
            params={
                **common,
                "protocol": doc["protocol"],
                "model": entry,
                "task": "text",
                "simulated": doc["entry"]["simulated"],
            },  # fmt: skip
            metrics=metrics_of("text", doc),
            artifacts=[f"{text_results_folder(params)}/{entry}.json"],
            tags=child_tags("text", dataset, entry, "text graphs"),
        )
        for entry, doc in sorted(load_text_results(params).items())
    ]


def _s2g_children(params: dict, common: dict) -> list:
    """One nested run per S2G model (``<dataset>/<entry>/s2g``): each gallery's recall in both directions as
    metrics ``s2g/<gallery>/<direction>/<name>``, its document as an artifact."""
    from sgg_eval.pipeline.s2g_stage import load_s2g_results, s2g_folder
    from sgg_eval.pipeline.tracking import ChildRun
    from sgg_eval.retrieval.ranking import DIRECTIONS

    dataset = params["dataset"]["name"]
    children = []
    for entry, doc in load_s2g_results(params).items():
        metrics = {
            mlflow_key("s2g", f"{size}/{direction}/{name}"): value
            for size, gallery in doc["galleries"].items()
            for direction in DIRECTIONS
            for name, value in gallery[direction].items()
            if value is not None
        }
        children.append(
            ChildRun(
                name=f"{dataset}/{entry}/s2g",
                params={
                    **common,
                    "protocol": "s2g",
                    "model": entry,
                    "task": "s2g",
                    "simulated": True,
                    "s2g_epochs": doc["training"]["epochs"],
                    "s2g_train_images": doc["images"]["train"],
                    "s2g_lr": doc["training"]["solver"]["base_lr"],
                },  # fmt: skip
                metrics=metrics,
                artifacts=[f"{s2g_folder(params)}/{entry}.json"],
                tags=child_tags("s2g", dataset, entry, "S2G retrieval"),
            )
        )
    return children


def _box_children(params: dict, results: dict, common: dict) -> list:
    """One nested MLflow run per VG150 entry × task: its parameters, metrics, files and tags."""
    from sgg_eval.pipeline.tracking import ChildRun, metrics_of

    children = []
    for (entry, task), doc in sorted(results.items()):
        info = doc["entry"]
        children.append(
            ChildRun(
                name=f"{params['dataset']['name']}/{entry}/{task}",
                params={
                    **common,
                    "model": entry,
                    "task": task,
                    "backbone": info["backbone"],
                    "method": info["method"],
                    "simulated": info["simulated"],
                },
                metrics=metrics_of(task, doc),
                artifacts=[metrics_file(params, entry, task), per_predicate_file(params, entry, task)],
                tags=child_tags(task, params["dataset"]["name"], entry, method_family(info["method"])),
            )
        )
    return children


def run_track(params: dict, out_json: str, root: str = ".") -> dict | None:
    """Log the pipeline to MLflow: per dataset a parent run, with one nested run per VG150 entry × task
    (``<dataset>/<entry>/<task>``) and per text-graph model (``<dataset>/<entry>/text``), per PSG entry ×
    protocol (``<psg_dataset>/<entry>/<protocol>``), or per AG entry × protocol × task
    (``<video_dataset>/<entry>/<protocol>/<task>``)."""
    from sgg_eval.pipeline.eval_stages import SUMMARY_METRICS
    from sgg_eval.pipeline.psg_reports import psg_runs
    from sgg_eval.pipeline.tracking import default_uri, git_commit, log_runs, share_view
    from sgg_eval.pipeline.video_stages import video_runs

    t = params["tracking"]
    results = load_results(params)
    uri = t["uri"] or default_uri(root)
    common = {
        "dataset": params["dataset"]["name"],
        "protocol": params["metrics"]["protocol"],
        "tau": params["metrics"]["tau"],
        "iou_threshold": params["metrics"]["iou_threshold"],
        "recall_ks": list(RECALL_KS),
        "imr_ks": list(IMR_KS),
        "triplet_ks": list(TRIPLET_KS),
        "pko": {"lam": params["pko"]["lam"], "eps": params["pko"]["eps"]},
        "git_commit": git_commit(root),
    }
    children = _box_children(params, results, common)
    children += _text_children(params, common)
    children += _s2g_children(params, common)
    reports = params["paths"]["reports"]
    figures = sorted(str(p) for p in Path(reports, "figures").glob("*.png"))
    tables = sorted(str(p) for p in Path(reports, "tables").glob("*.md"))
    # the inputs' hashes (every dvc.lock: the per-model, panoptic and video stages have their own) and the
    # configuration (the knobs, and the models and simulation settings they name) travel as files, not as a
    # truncated parameter
    inputs = [(os.path.join(root, lock), os.path.dirname(lock) or None) for lock in LOCK_FILES]
    inputs.append(os.path.join(root, "params.yaml"))
    catalogue = {product: os.path.join(root, path) for product, path in CATALOGUE_FILES.items()}
    psg_common, psg_children = psg_runs(params, common["git_commit"])
    video_common, video_children = video_runs(params, common["git_commit"])
    psg_files = sorted(str(p) for p in Path(reports, "psg").glob("*/*") if p.suffix in (".md", ".png"))
    video_files = sorted(str(p) for p in Path(reports, "video", "tables").glob("*.md"))
    # a parent run per dataset, so that the benchmarks' tables never mix: its params, children, files, catalogue
    parents = [
        (params["dataset"]["name"], common, children, figures + tables, [catalogue[BOXES], catalogue[TEXT]]),
        (params["psg_dataset"]["name"], psg_common, psg_children, psg_files, [catalogue[PANOPTIC]]),
        (params["video_dataset"]["name"], video_common, video_children, video_files, [catalogue[VIDEO]]),
    ]
    named = {
        dataset: log_runs(
            uri,
            t["experiment"],
            f"pipeline {dataset}",
            run_params,
            kids,
            parent_artifacts=files + inputs + cats,
            parent_tags={"sgg_eval.kind": "pipeline", "sgg_eval.dataset": dataset},
        )
        for dataset, run_params, kids, files, cats in parents
    }
    tasks = list(params["evaluation"]["tasks"])
    share_view(uri, t["experiment"], [mlflow_key(task, name) for task in tasks for name in SUMMARY_METRICS])
    # no run ids here: they are random, and this file must be the same on every machine (dvc.lock)
    write_json(
        out_json,
        {
            "tracking_uri_kind": uri.split(":", 1)[0],
            "experiment": t["experiment"],
            "logged": None not in named.values(),
            "runs": sorted(c.name for _, _, kids, _, _ in parents for c in kids),
        },
    )
    return None if None in named.values() else named
