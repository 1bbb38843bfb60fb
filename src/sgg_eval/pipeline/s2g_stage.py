"""The DVC stage ``s2g`` (issue 50, docs/s2g.md): Sentence-to-Graph retrieval on the simulated dataset, one metrics
document per model in ``<results>/s2g/``, which the ``tables`` stage turns into "S2G Recall@K per model".

Off (``s2g.run: false``, the default) the stage writes only its list of entries (empty). On, in a scratch folder it
removes afterwards: the SIMULATED caption graphs of every image (``simulate.captions``), the first
``s2g.train_images`` training images as a split store, and each model's SGDet predictions on them and on the val
split (simulated as the ``simulate`` stage simulates the test split's, which it reuses); with ``s2g.bounds``, the
GT graphs and random graphs on all three. Then ``retrieval.evaluate.run_s2g`` for each, exactly as ``sgg-eval s2g``
runs it on files.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict

from sgg_eval.core.tasks import SGDET
from sgg_eval.io.atomic import write_json, write_text
from sgg_eval.pipeline.paths import prediction_file, stats_file
from sgg_eval.pipeline.s2g_params import S2G_KEYS

GT_GRAPHS, RANDOM_GRAPHS = "gt_graphs", "random_graphs"  # the bounds' entry names (no model file has them)
BOUND_LABELS = {GT_GRAPHS: ("GT graphs", "perfect SGDet"), RANDOM_GRAPHS: ("random graphs", "chance")}


def s2g_folder(params: dict) -> str:
    return f"{params['paths']['results']}/s2g"


def s2g_entries(params: dict) -> list[str]:
    """The documents the stage writes when it runs, in table order."""
    cfg = params["s2g"]
    if not cfg["run"]:
        return []
    return list(cfg["entries"]) + ([GT_GRAPHS, RANDOM_GRAPHS] if cfg["bounds"] else [])


def _write_inputs(params: dict, work: str) -> dict[str, dict[str, str]]:
    """The scratch files (module docstring); returns each entry's prediction file per split, and ``""`` -> the
    caption file and the split stores."""
    from sgg_eval.data.stats import read_stats
    from sgg_eval.data.store import SplitStore, write_split
    from sgg_eval.simulate.captions import simulated_captions, write_bound
    from sgg_eval.simulate.models import Backbone, simulate_models
    from sgg_eval.simulate.params import method_settings

    cfg, sim, folder = params["s2g"], params["simulation"], params["paths"]["splits"]
    splits = {"train": f"{work}/train.h5", "val": f"{folder}/val.h5", "test": f"{folder}/test.h5"}
    with SplitStore(f"{folder}/train.h5") as train:
        limit = cfg["train_images"] or len(train)
        write_split(splits["train"], train.meta, (gt for i, gt in zip(range(limit), train)))
    images, vocab = [], None
    for path in splits.values():
        with SplitStore(path) as split:
            images += list(split)
            vocab = split.vocab
    captions = f"{work}/captions.json"
    write_json(captions, simulated_captions(images, vocab, sim["captions"]))
    files = {"": {"captions": captions, **splits}}

    stats = read_stats(stats_file(params))
    by_backbone: dict[str, dict[str, str]] = defaultdict(dict)
    for name in cfg["entries"]:
        model = params["models"][name]
        by_backbone[model["sim_backbone"]][model["sim_method"]] = name
        files[name] = {"test": prediction_file(params, name, SGDET.name)}
    for backbone, methods in sorted(by_backbone.items()):
        for split in ("train", "val"):
            outputs = {m: f"{work}/{name}.{split}.h5" for m, name in methods.items()}
            simulate_models(
                splits[split], stats, Backbone(backbone, **sim["backbones"][backbone]), SGDET.name, outputs,
                seed=int(sim["seed"]), score_kind=sim["score_kind"], score_dtype=sim["score_dtype"],
                val_path=splits["val"], methods=method_settings(sim, backbone, SGDET.name),
            )  # fmt: skip
            for method, name in methods.items():
                files[name][split] = outputs[method]
    if cfg["bounds"]:
        for name, kind in ((GT_GRAPHS, "gt"), (RANDOM_GRAPHS, "random")):
            files[name] = {split: f"{work}/{name}.{split}.h5" for split in splits}
            for split, path in splits.items():
                write_bound(kind, path, files[name][split], int(cfg["seed"]))
    return files


def _entry(params: dict, name: str) -> dict:
    if name in BOUND_LABELS:
        backbone, method = BOUND_LABELS[name]
        return {"name": name, "backbone": backbone, "method": method, "simulated": True, "bound": True}
    model = params["models"][name]
    return {"name": name, "backbone": model.get("backbone", name), "method": model.get("method", ""),
            "simulated": True, "bound": False}  # fmt: skip


def run_s2g_stage(params: dict) -> list[str]:
    """Every entry's S2G document (module docstring); the folder always holds ``s2g_entries.txt``."""
    folder = s2g_folder(params)
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):  # a document of an entry no longer listed must not reach the table
        if old.endswith(".json"):
            os.remove(os.path.join(folder, old))
    entries, cfg, written = s2g_entries(params), params["s2g"], []
    if entries:
        from sgg_eval.retrieval.evaluate import run_s2g

        with tempfile.TemporaryDirectory(prefix="s2g-", dir=folder) as work:
            files = _write_inputs(params, work)
            shared = files[""]
            gts = {split: shared[split] for split in ("train", "val", "test")}
            for name in entries:
                doc = run_s2g(
                    files[name]["train"], files[name]["val"], files[name]["test"], shared["captions"], gts=gts,
                    epochs=int(cfg["epochs"]), seed=int(cfg["seed"]), base_lr=float(cfg["lr"]),
                    progress=lambda line, name=name: print(f"{name}: {line}", flush=True),
                )  # fmt: skip
                doc["entry"] = _entry(params, name)
                doc["input"] = {
                    "captions": "SIMULATED (sgg_eval.simulate.captions)",
                    "train_images": cfg["train_images"],
                }
                path = f"{folder}/{name}.json"
                write_json(path, doc)
                written.append(path)
    # the settings, on or off: what the documents were (or would be) made with, so a change reruns the stage
    write_json(f"{folder}/s2g_settings.json", {key: cfg[key] for key in S2G_KEYS})
    write_text(f"{folder}/s2g_entries.txt", "".join(f"{name}\n" for name in entries))
    return written


def load_s2g_results(params: dict) -> dict[str, dict]:
    """The S2G documents by entry, in table order (those the stage wrote)."""
    import json

    out = {}
    for name in s2g_entries(params):
        path = f"{s2g_folder(params)}/{name}.json"
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                out[name] = json.load(fh)
    return out
