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
