"""DVC stage ``site``: the results page (``report.site``) from every metrics document of the pipeline, VG150
(one board per task) and panoptic SGG (one board per protocol), with each entry's settings and the
fingerprints of its input files (``data/inputs``, ``data/psg_inputs``)."""

from __future__ import annotations

import json
import os
import shutil

from sgg_eval.core.defaults import IMR_KS, IOU_THRESHOLD, OPENVOCAB_PROTOCOLS, OPENVOCAB_SETTINGS, RECALL_KS
from sgg_eval.core.protocols import OPEN_IMAGES_DOCUMENT, SGG_BENCHMARK_DOCUMENT
from sgg_eval.core.protocols import protocol as protocol_record
from sgg_eval.data.stats import read_stats
from sgg_eval.metrics.document import BEYOND
from sgg_eval.metrics.names import OIV6_TABLE, metric_name, openvocab_table
from sgg_eval.metrics.oiv6_document import SOURCE as OIV6_SOURCE
from sgg_eval.metrics.openvocab_document import SOURCES as OV_SOURCES
from sgg_eval.metrics.sgg_benchmark_document import SOURCE as SGG_BENCHMARK_SOURCE
from sgg_eval.panoptic.reduce import SOURCES
from sgg_eval.pipeline.eval_stages import load_results, model_label
from sgg_eval.pipeline.paths import per_image_file, stats_file
from sgg_eval.pipeline.psg_stages import PANOPTIC, any_simulated, load_psg_results, psg_stats_file
from sgg_eval.pipeline.site_data import board_data
from sgg_eval.report.site import Board, SiteRow, write_site

VG_COLUMNS = [metric_name("R", 50), metric_name("mR", 50), metric_name("IMR", 20), metric_name("wIMR", 20)]
VG_COLUMNS += [metric_name("F1", 50)]
PSG_COLUMNS = [metric_name("R", 50), metric_name("mR", 50), metric_name("PR", 50), "PRk", "InstR"]
PSG_COLUMNS += [metric_name("IMR", 20)]


def _inputs(folder: str, entry: str, task: str) -> dict[str, str]:
    path = os.path.join(folder, entry, f"{task}.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    if "sha256" not in doc:
        return {"predictions": doc.get("source", "")}
    return {"predictions": doc["path"], "bytes": str(doc["bytes"]), "sha256": doc["sha256"]}


def _ks() -> dict[str, str]:
    return {"K (R, mR, PR, F1)": ", ".join(map(str, RECALL_KS)), "K (IMR, wIMR)": ", ".join(map(str, IMR_KS))}


def vg_boards(params: dict, folder: str) -> list[Board]:
    results = load_results(params, merge=False)  # a protocol's numbers (oiv6) apart from the rest
    dataset, m = params["dataset"]["name"], params["metrics"]
    stats = read_stats(stats_file(params)) if os.path.exists(stats_file(params)) else None
    boards = []
    for task in params["evaluation"]["tasks"]:
        label = params["tasks"][task]["label"]
        rows = [
            SiteRow(
                entry,
                model_label(doc["entry"]),
                doc["metrics"],
                doc.get("per_predicate", {}),
                {
                    "dataset": dataset,
                    "task": label,
                    "protocol": str(doc.get("protocol", m["protocol"])),
                    "tau (wIMR)": f"{doc.get('tau', m['tau']):g}",
                    **_ks(),
                    "IoU threshold": f"{doc.get('iou_threshold', m['iou_threshold']):g}",
                },
                _inputs("data/inputs", entry, task),
                doc.get(BEYOND, {}).get("metrics", {}),
                doc.get(BEYOND, {}).get("per_predicate", {}),
            )
            for (entry, t), doc in results.items()
            if t == task
        ]
        simulated = any(doc["entry"]["simulated"] for (_, t), doc in results.items() if t == task)
        oiv6 = protocol_record(m["protocol"]).document == OPEN_IMAGES_DOCUMENT
        openvocab = m["protocol"] in OPENVOCAB_PROTOCOLS
        protocol = f"{m['protocol']}: R@50 micro, as the OIv6 tables" if oiv6 else m["protocol"]
        title = f"{dataset} · {label} (protocol {protocol}, tau = {m['tau']:g})"
        # a protocol's own columns (BGNN's; the open-vocabulary table's), then sgg-eval's IMR@20 (beyond the
        # protocol) in the chooser's column
        chosen = metric_name("IMR", 20) if oiv6 or openvocab else metric_name("R", 100)
        columns = list(OIV6_TABLE) if oiv6 else VG_COLUMNS
        beyond = f"beyond protocol oiv6: computed by sgg-eval, not reported by {OIV6_SOURCE}" if oiv6 else ""
        if protocol_record(m["protocol"]).document == SGG_BENCHMARK_DOCUMENT:  # its columns at K = 50, then ours
            columns, chosen = [metric_name(f, 50) for f in ("R", "mR", "F1", "zR")], metric_name("IMR", 20)
            beyond = f"beyond protocol {m['protocol']}: computed by sgg-eval, not reported by {SGG_BENCHMARK_SOURCE}"
        if openvocab:
            setting = m["openvocab"]["setting"] or OPENVOCAB_SETTINGS[m["protocol"]][0]
            columns = list(openvocab_table(m["protocol"], setting))
            source = OV_SOURCES[m["protocol"]]
            beyond = f"beyond protocol {m['protocol']}: computed by sgg-eval, not reported by {source}"
        docs = {entry: doc for (entry, t), doc in results.items() if t == task}
        records = {entry: per_image_file(params, entry, task) for entry in docs}
        data = (
            {}
            if stats is None
            else board_data(stats.vocab, stats.predicate_counts[1:], docs, records, params["site"]["image_dir"], folder)
        )
        boards.append(Board(f"{dataset}-{task}", title, simulated, columns, rows, chosen, beyond, data))
    return boards


def psg_boards(params: dict, folder: str) -> list[Board]:
    results = load_psg_results(params)
    dataset, tau = params["psg_dataset"]["name"], float(params["metrics"]["tau"])
    stats = read_stats(psg_stats_file(params)) if os.path.exists(psg_stats_file(params)) else None
    boards = []
    for protocol in params["evaluation"]["psg_protocols"]:
        rows = [
            SiteRow(
                entry,
                doc["entry"]["method"],
                doc["protocols"][protocol]["metrics"],
                doc["protocols"][protocol]["per_predicate"],
                {
                    "dataset": dataset,
                    "task": "panoptic SGG (masks)" if doc["protocols"][protocol]["mode"] == "masks" else "panoptic SGG",
                    "protocol": protocol,
                    "tau (wIMR)": f"{tau:g}",
                    **_ks(),
                    "IoU threshold": f"{doc['protocols'][protocol].get('iou_threshold', IOU_THRESHOLD):g}",
                },
                _inputs("data/psg_inputs", entry, PANOPTIC),
                doc["protocols"][protocol][BEYOND]["metrics"],
                doc["protocols"][protocol][BEYOND]["per_predicate"],
            )
            for entry, doc in results.items()
            if protocol in doc["protocols"]
        ]
        simulated = any_simulated(params, results)
        title = f"{dataset} · panoptic SGG (protocol {protocol}, tau = {tau:g})"
        key, chosen = f"{dataset}-{PANOPTIC}-{protocol}", metric_name("mR", "inf")
        beyond = (
            f"beyond protocol {protocol}: computed by sgg-eval with its matching, not reported by {SOURCES[protocol]}"
        )
        # the per-predicate charts in training order with the documents' groups, and their confusion matrices;
        # no per-image graphs (--per-image is for the box tasks)
        docs = {entry: doc["protocols"][protocol] for entry, doc in results.items() if protocol in doc["protocols"]}
        data = {} if stats is None else board_data(stats.vocab, stats.predicate_counts[1:], docs, {}, None, folder)
        boards.append(Board(key, title, simulated, PSG_COLUMNS, rows, chosen, beyond, data))
    return boards


def run_site(params: dict, folder: str) -> list[str]:
    """The results page for every board into ``folder`` (emptied of earlier pages first)."""
    for part in ("entries", "data", "images", "assets"):
        shutil.rmtree(os.path.join(folder, part), ignore_errors=True)
    return write_site(vg_boards(params, folder) + psg_boards(params, folder), folder)
