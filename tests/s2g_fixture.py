"""S2G cases for checking sgg-eval against Scene-Graph-Benchmark.pytorch's own code (``scripts/s2g_reference.py``):
embeddings for its ``evaluator`` (``tests/data/s2g_golden.json``: random ones, ones with exact ties, as identical
graphs give, and a model-like gallery), and files for its preprocessing (``inputs``;
``tests/data/s2g_preprocess_golden.json``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def embeddings() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(50)
    out = {}
    img, txt = rng.standard_normal((300, 64), dtype=np.float32), rng.standard_normal((300, 64), dtype=np.float32)
    out["random"] = (img, txt)
    img, txt = img.copy(), txt.copy()
    txt[10] = txt[11]  # two captions alike: a tie in image 10's and 11's rows
    img[20] = img[21]
    img[30], txt[30] = img[31], txt[31]  # two identical image-caption pairs
    txt[40] = txt[41] = txt[42]
    txt[50] = 2.0 * txt[51]  # the same direction: an equal cosine
    out["ties"] = (img, txt)
    base = rng.standard_normal((1200, 128), dtype=np.float32)
    noise = rng.standard_normal((1200, 128), dtype=np.float32)
    out["model"] = (base, (base + 8.0 * noise).astype(np.float32))  # a gallery larger than 1,000
    return out


OBJECTS = ("man", "horse", "shirt", "street", "dog", "tree")
PREDICATES = ("on", "riding", "wearing", "wears", "near")
# the image graphs' names of VG's predicates: "wearing" and "wears" are one meta predicate, as in the real file
META = {"1": "on", "2": "ride", "3": "wear", "4": "wear", "5": "near"}
CAP_OBJECTS = ("man", "person", "horse", "shirt", "road", "dog", "tree", "none")
CAP_PREDICATES = ("on", "ride", "wear", "near", "in", "walk on")


def inputs(folder, n: int = 30, seed: int = 7):
    """An S2G case in the reference's layout under ``folder``: ``eval_results.pytorch`` (SGDet predictions with
    objects under the 0.1 score threshold, duplicated pairs, background-first rows), ``visual_info.json``,
    ``VG-SGG-dicts.json``, ``vg_capgraphs_anno.json`` (some images without captions, some captions without a
    relation); returns the (GT, prediction) cases."""
    from conftest import random_case
    from torch_writer import eval_results_object, save_zip

    from sgg_eval.data.types import Vocabulary

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = Vocabulary(OBJECTS, PREDICATES)
    rng = np.random.default_rng(seed)
    cases = [random_case(rng, vocab, "sgdet", 100 + i, max_objects=8) for i in range(n)]
    for i, (_, pred) in enumerate(cases):
        pred.obj_scores = np.where(rng.random(len(pred.obj_scores)) < 0.2, 0.05, pred.obj_scores).astype(np.float32)
        if len(pred.pairs) > 2:  # a duplicated pair, and a row whose maximum is the background
            pred.pairs = np.concatenate([pred.pairs, pred.pairs[:1]])
            pred.rel_scores = np.concatenate([pred.rel_scores, pred.rel_scores[:1, ::-1]])  # another predicate
            pred.rel_scores[1, 0] = 0.999
        if i % 7 == 3:
            pred.obj_scores = np.full(len(pred.obj_scores), 0.01, dtype=np.float32)  # nothing kept
    save_zip(eval_results_object(cases), folder / "eval_results.pytorch")
    (folder / "visual_info.json").write_text(json.dumps([{"img_file": f"/vg/{g.image_id}.jpg"} for g, _ in cases]))
    (folder / "VG-SGG-dicts.json").write_text(json.dumps({
        "idx_to_label": {str(i + 1): name for i, name in enumerate(OBJECTS)},
        "idx_to_predicate": {str(i + 1): name for i, name in enumerate(PREDICATES)},
    }))  # fmt: skip
    graphs = {}
    for i, (gt, _) in enumerate(cases):
        captions = []
        for _ in range(int(rng.integers(1, 4))):
            entities = [str(rng.choice(CAP_OBJECTS)) for _ in range(int(rng.integers(1, 5)))]
            relations = [[int(rng.integers(len(entities))), int(rng.integers(len(entities))),
                          str(rng.choice(CAP_PREDICATES))] for _ in range(int(rng.integers(0, 3)))]  # fmt: skip
            captions.append({"entities": entities, "relations": relations})
        graphs[str(5000 + i)] = captions
    valids = [int(i % 5 != 2) for i in range(n)]
    doc = {
        "vg_image_ids": [int(g.image_id) for g, _ in cases],
        "vg_coco_ids": [5000 + i for i in range(n)],
        "vg_valids": valids,
        "idx_to_meta_predicate": META,
        "cap_category": {name: 1 for name in CAP_OBJECTS},
        "cap_predicate": {name: 1 for name in CAP_PREDICATES},
        "vg_coco_id_to_capgraphs": graphs,
    }
    (folder / "vg_capgraphs_anno.json").write_text(json.dumps(doc))
    return cases


# The retrieval model's case (scripts/s2g_reference.py model, tests/data/s2g_model_golden.npz): small vocabularies,
# weights drawn here (never stored), graphs with repeated classes, a predicate id equal to a class id, one relation.
MODEL_SIZES = (6, 5, 8, 6)  # image objects, image predicates, caption objects, caption predicates
MODEL_STEPS = 3


def model_weights(seed: int = 50) -> dict[str, np.ndarray]:
    """An SGEncode state dict under the reference's names (float32)."""
    rng = np.random.default_rng(seed)
    io, ip, to, tp = (n + 1 for n in MODEL_SIZES)
    shapes = {}
    for side, n_obj, n_pred in (("img", io, ip), ("txt", to, tp)):
        for table, rows in (("obj", n_obj), ("rel_head", n_obj), ("rel_tail", n_obj), ("rel_pred", n_pred)):
            shapes[f"{side}_{table}_embed.weight"] = (rows, 512)
    for g in range(2):
        for layer, (out, inp) in (("lin_v", (512, 1536)), ("lin_q", (512, 512)), ("lin_atten", (512, 512))):
            key = f"apply_attention.glimpse_layers.{g}.{layer}.lin"
            shapes[f"{key}.weight_g"], shapes[f"{key}.weight_v"], shapes[f"{key}.bias"] = (), (out, inp), (out,)
    shapes.update({"final_fc.0.weight": (512, 512), "final_fc.0.bias": (512,), "final_fc.2.weight": (1024, 512),
                   "final_fc.2.bias": (1024,)})  # fmt: skip
    out = {}
    for key, shape in shapes.items():
        scale = 1.0 if "embed" in key else (4.0 if key.endswith("weight_g") else 0.03)
        value = rng.standard_normal(shape) * scale
        out[key] = np.asarray(np.abs(value) if key.endswith("weight_g") else value, dtype=np.float32)
    return out


def model_graphs(seed: int = 51) -> dict[str, list[tuple[list[int], list[list[int]]]]]:
    """Image and caption graphs as (entity class ids, [subject class id, object class id, predicate id])."""
    rng = np.random.default_rng(seed)
    out = {}
    for side, (n_obj, n_pred) in (("image", MODEL_SIZES[:2]), ("text", MODEL_SIZES[2:])):
        graphs = []
        for i in range(8):
            entities = rng.integers(1, n_obj + 1, size=int(rng.integers(2, 7))).tolist()
            count = 1 if i == 0 else int(rng.integers(1, 9))
            relations = [[int(rng.choice(entities)), int(rng.choice(entities)), int(rng.integers(1, n_pred + 1))]
                         for _ in range(count)]  # fmt: skip
            graphs.append((entities, relations))
        out[side] = graphs
    return out


def simulated_world(root, models=("gt", "random", "baseline")) -> tuple[dict, dict]:
    """A tiny SIMULATED world for S2G under ``root``: its three split stores (``splits/``), SIMULATED caption graphs
    (``captions.json``) and SGDet predictions of each of ``models`` on every split (``<model>.<split>.h5``): the GT
    graphs, random graphs, the simulated Motifs baseline. Returns (model -> split -> file, split -> split store)."""
    import yaml

    from sgg_eval.boxes.splits import build_splits, build_stats
    from sgg_eval.data.stats import read_stats
    from sgg_eval.data.store import SplitStore
    from sgg_eval.io.atomic import write_json
    from sgg_eval.pipeline.catalogue import SIMULATION_FILE
    from sgg_eval.simulate.captions import BOUNDS, simulated_captions, write_bound
    from sgg_eval.simulate.models import Backbone, simulate_models
    from sgg_eval.simulate.params import method_settings
    from sgg_eval.simulate.world import SimParams, SimulatedWorld

    sim = yaml.safe_load((Path(__file__).resolve().parents[1] / "conf" / SIMULATION_FILE).read_text())
    root = Path(root)
    (root / "splits").mkdir(parents=True, exist_ok=True)
    splits = {s: str(root / "splits" / f"{s}.h5") for s in ("train", "val", "test")}
    build_splits(SimulatedWorld(SimParams(scale="tiny")), splits)
    build_stats(splits["train"], splits["test"], root / "stats.h5")
    images = []
    for path in splits.values():
        with SplitStore(path) as split:
            images += list(split)
            vocab = split.vocab
    write_json(root / "captions.json", simulated_captions(images, vocab, sim["captions"]))
    files = {m: {s: str(root / f"{m}.{s}.h5") for s in splits} for m in models}
    for s, path in splits.items():
        for m in models:
            if m in BOUNDS:
                write_bound(m, path, files[m][s])
            else:
                backbone = Backbone("sim_motifs", **sim["backbones"]["sim_motifs"])
                settings = method_settings(sim, backbone.name, "sgdet")
                simulate_models(path, read_stats(root / "stats.h5"), backbone, "sgdet", {m: files[m][s]},
                                val_path=splits["val"], methods=settings)  # fmt: skip
    return files, splits
