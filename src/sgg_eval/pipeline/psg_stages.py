"""The panoptic DVC stages up to the metrics: ``psg_data`` (the simulated PSG-like benchmark, or the real
files' fingerprint), ``psg_stats`` (its training statistics), ``psg_simulate`` (the SIMULATED models'
SGBench submissions), ``psg_evaluate`` (one entry under every protocol of ``evaluation.psg_protocols``: the
matching and ranking, at the default τ) and ``psg_reduce`` (every entry at ``metrics.tau``: wIMR's weights
alone depend on it, so changing τ reruns this and matches nothing again).

Layout under ``paths.psg_data``: ``psg/`` (simulated: ``psg.json`` and ``coco/panoptic/*.png``; always
``summary.json``), ``stats/stats.h5``, ``predictions/simulated/<model>.zip``, ``results/ranked/<entry>.json``
and ``results/metrics/<entry>.json``. A real dataset's files stay where ``psg_dataset.raw`` says.
"""

from __future__ import annotations

import os

from sgg_eval.core.defaults import TAU
from sgg_eval.core.errors import InputError
from sgg_eval.io.atomic import write_json
from sgg_eval.simulate.psg_world import PsgWorld

# the "task" of a PSG entry: data/psg_inputs/<entry>/panoptic.json (stage inputs), MLflow's panoptic/<metric>
PANOPTIC = "panoptic"


def simulated_dataset(params: dict) -> bool:
    return params["psg_dataset"]["kind"] == "simulated"


def any_simulated(params: dict, results: dict[str, dict]) -> bool:
    """Whether the PSG tables, figure and page show simulated numbers: a simulated dataset or any simulated
    entry."""
    return simulated_dataset(params) or any(doc["entry"]["simulated"] for doc in results.values())


def psg_files(params: dict) -> tuple[str, str]:
    """``psg.json`` and the folder its ``pan_seg_file_name`` values are relative to."""
    d = params["psg_dataset"]
    if simulated_dataset(params):
        folder = params["paths"]["psg_psg"]
        return f"{folder}/psg.json", f"{folder}/coco"
    return os.path.join(d["raw"], d["json"]), os.path.join(d["raw"], d["root"])


def psg_stats_file(params: dict) -> str:
    return f"{params['paths']['psg_stats']}/stats.h5"


def psg_prediction_file(params: dict, entry: str) -> str:
    """The submission ``psg_evaluate@<entry>`` reads: simulated, or ``files.<psg_dataset.name>``."""
    cfg = params["models"][entry]
    if cfg["source"] == "simulated":
        return f"{params['paths']['psg_predictions']}/simulated/{entry}.zip"
    return cfg["files"][params["psg_dataset"]["name"]]


def psg_metrics_file(params: dict, entry: str) -> str:
    return f"{params['paths']['psg_results']}/metrics/{entry}.json"


def psg_ranked_file(params: dict, entry: str) -> str:
    """``psg_evaluate@<entry>``'s document, at the default τ (``psg_reduce`` applies ``metrics.tau``)."""
    return f"{params['paths']['psg_results']}/ranked/{entry}.json"


def world_of(params: dict) -> PsgWorld:
    return PsgWorld(**params["psg_dataset"]["sim"], **params["psg_simulation"]["world"])


def run_psg_data(params: dict) -> dict:
    """Simulated: write the benchmark. Real: check ``psg.json`` and fingerprint it and every test PNG it names
    (so that new content reruns what reads it). Writes and returns ``psg/summary.json``."""
    from sgg_eval.panoptic.psg_json import read_psg
    from sgg_eval.pipeline.fingerprint import sha256_of

    folder = params["paths"]["psg_psg"]
    json_path, root = psg_files(params)
    if simulated_dataset(params):
        from sgg_eval.simulate.psg_world import write_psg_world

        counts = write_psg_world(world_of(params), folder)
        summary = {"dataset": params["psg_dataset"]["name"], "simulated": True, **counts}
    else:
        gt = read_psg(json_path, root)
        pngs = {}
        for image in gt.images:
            png = os.path.join(root, image.png)
            if not os.path.isfile(png):
                raise InputError("panoptic PNG not found", path=png, image_id=image.image_id, field="pan_seg_file_name")
            pngs[image.png] = sha256_of(png)
        summary = {
            "dataset": params["psg_dataset"]["name"],
            "simulated": False,
            "psg_json": {"path": json_path, "sha256": sha256_of(json_path)},
            "test": {"images": len(gt.images), "without_relations": gt.without_relations},
            "pngs_sha256": pngs,
        }
    write_json(f"{folder}/summary.json", summary)
    return summary


def run_psg_stats(params: dict) -> dict:
    """The training statistics of the PSG dataset (``psg_stats``) and their summary."""
    from sgg_eval.data.stats import summarize, write_stats
    from sgg_eval.panoptic.stats import psg_training_stats

    opts = params["stats"]
    stats = psg_training_stats(
        psg_files(params)[0],
        drop_non_overlapping=opts["drop_non_overlapping"],
        background_must_overlap=opts["background_must_overlap"],
        simulated=simulated_dataset(params),
    )
    summary = summarize(stats)
    write_stats(psg_stats_file(params), stats)
    write_json(f"{params['paths']['psg_stats']}/summary.json", summary)
    return summary


def simulated_psg_models(params: dict) -> list[str]:
    return [e for e in params["evaluation"]["psg_entries"] if params["models"][e]["source"] == "simulated"]


def run_psg_simulate(params: dict) -> list[str]:
    """Every simulated PSG entry's submission ZIP, and their list (``index.json``, so the folder is never
    empty); returns the files written."""
    from sgg_eval.simulate.psg_models import PsgDetector, PsgMethod, write_psg_models

    folder = f"{params['paths']['psg_predictions']}/simulated"
    os.makedirs(folder, exist_ok=True)
    sim = params["psg_simulation"]
    names = simulated_psg_models(params) if simulated_dataset(params) else []
    out = {name: psg_prediction_file(params, name) for name in names}
    if names:
        write_psg_models(
            world_of(params),
            {k: PsgDetector(**v) for k, v in sim["detectors"].items()},
            {name: PsgMethod(**sim["methods"][params["models"][name]["sim_method"]]) for name in names},
            out,
            seed=int(sim["seed"]),
        )
    write_json(f"{folder}/index.json", {"simulated_submissions": sorted(os.path.basename(p) for p in out.values())})
    return list(out.values())


def run_psg_evaluate(params: dict, entry: str) -> dict:
    """``entry`` under every protocol of ``evaluation.psg_protocols`` (one pass over the images), with the
    training statistics (zR@K, and wIMR@K at the default τ, which ``psg_reduce`` moves to ``metrics.tau``),
    instances matched at ``metrics.iou_threshold``; writes and returns the document."""
    from sgg_eval.panoptic.evaluate import evaluate_protocols

    json_path, root = psg_files(params)
    cfg = params["models"][entry]
    protocols = tuple(params["evaluation"]["psg_protocols"])
    docs = evaluate_protocols(
        psg_prediction_file(params, entry),
        json_path,
        root,
        protocols,
        stats=psg_stats_file(params),
        tau=TAU,  # τ is psg_reduce's: wIMR's weights alone depend on it
        iou_threshold=float(params["metrics"]["iou_threshold"]),
        longtail=params["metrics"]["longtail"],
    )
    for doc in docs.values():  # the paths say where the pipeline keeps them; the fingerprint is data/psg_inputs
        doc["input"]["predictions"] = os.path.relpath(doc["input"]["predictions"])
    doc = {
        "entry": {
            "name": entry,
            "method": cfg["method"],
            "simulated": cfg["source"] == "simulated" or simulated_dataset(params),
            "dataset": params["psg_dataset"]["name"],
        },
        "protocols": docs,
    }
    write_json(psg_ranked_file(params, entry), doc)
    return doc


def run_psg_reduce(params: dict) -> dict[str, dict]:
    """Every entry of ``evaluation.psg_entries`` at ``metrics.tau``: its ranked document with wIMR@K weighted by
    ``n_c^τ`` again (``metrics.engine.with_tau``: the evaluation's own formula, so bit-identical to evaluating at
    τ), written where the tables, the figures and the site read it; returns the documents."""
    import json

    from sgg_eval.data.stats import read_stats
    from sgg_eval.metrics.engine import with_tau

    tau = float(params["metrics"]["tau"])
    train = read_stats(psg_stats_file(params))
    out = {}
    for entry in params["evaluation"]["psg_entries"]:
        with open(psg_ranked_file(params, entry), encoding="utf-8") as fh:
            doc = json.load(fh)
        doc["protocols"] = {
            p: with_tau(d, train.vocab.predicate_classes, train.num_pairs, tau) for p, d in doc["protocols"].items()
        }
        write_json(psg_metrics_file(params, entry), doc)
        out[entry] = doc
    return out


def load_psg_results(params: dict, ranked: bool = False) -> dict[str, dict]:
    """Every PSG entry's metrics document that exists, in ``evaluation.psg_entries`` order; ``ranked``: its
    ranked document instead (``psg_evaluate``'s, wIMR at the default τ), for a reader that shows no number τ moves,
    so that ``metrics.tau`` does not rerun it."""
    import json

    out = {}
    for entry in params["evaluation"]["psg_entries"]:
        path = psg_ranked_file(params, entry) if ranked else psg_metrics_file(params, entry)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                out[entry] = json.load(fh)
    return out
