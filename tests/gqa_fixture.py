"""Small generated GQA files in both layouts, no real data: GQA200's three JSON files (``write_gqa200``) and a
GQA download (``write_gqa``). ``python tests/gqa_fixture.py OUT`` (``make gqa-example``) writes both.

The GQA download (scene graphs, and the question images either as Knyazev's id cache or as
balanced-question files) with every case the split rules treat: text ids (numeric and ``n…``), object ids
whose text order differs from their number order, boxes off the corner or empty (skipped with their
relations), images without relations, images whose only relations are left/right (dropped in GQA-nLR),
duplicate relations and scene graphs without questions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from sgg_eval.data.gqa200 import SKIPPED_TEST_RECORD

OBJECTS = ["man", "shirt", "table", "cup", "tree", "window", "dog", "car"]
PREDICATES = ["on", "wearing", "near", "holding", "to the left of", "to the right of", "behind"]


def _graph(rng, i: int) -> dict:
    w, h = int(rng.integers(60, 900)), int(rng.integers(60, 900))
    n = int(rng.integers(0, 9)) if i % 11 else 0  # every 11th image has no object
    oids = [str(int(v)) for v in rng.choice(np.arange(1, 40), size=n, replace=False)]  # "12" sorts before "7"
    objects = {}
    for k, oid in enumerate(oids):
        x, y = int(rng.integers(-3, 500)), int(rng.integers(-3, 500))
        bw, bh = int(rng.integers(-1, 300)), int(rng.integers(-1, 300))  # some empty, some off the corner
        rels = []
        for _ in range(int(rng.integers(0, 3)) if i % 7 else 0):  # every 7th image has no relation
            name = PREDICATES[int(rng.integers(0, len(PREDICATES)))] if i % 5 else "to the left of"
            rels.append({"name": name, "object": oids[int(rng.integers(0, n))]})
        if rels and k % 3 == 0:
            rels.append(dict(rels[0]))  # a duplicate
        name = OBJECTS[int(rng.integers(0, len(OBJECTS)))]
        objects[oid] = {"name": name, "x": x, "y": y, "w": bw, "h": bh, "attributes": ["red"], "relations": rels}
    return {"width": w, "height": h, "location": "outdoors", "objects": objects}


def _ids(rng, n: int, first: int) -> list[str]:
    return [f"n{first + i}" if i % 9 == 4 else str(first + i) for i in rng.permutation(n)]


def assert_refused_in_one_line(proc, says: list[str], out_dir: Path) -> None:
    """``sgg-eval split`` refused its input: exit 2, one line of stderr holding every text of ``says``, and no
    store written into ``out_dir``."""
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and all(s in lines[0] for s in says), proc.stderr
    assert not out_dir.exists() or list(out_dir.iterdir()) == []  # nothing half-written


def write_gqa(root: Path, *, seed: int = 0, n_train: int = 160, n_val: int = 70, questions: str = "cache",
              nested: bool = False) -> Path:  # fmt: skip
    """GQA's files under ``root``: ``questions`` is ``"cache"`` (train_images.json/val_images.json),
    ``"balanced"`` (*_balanced_questions.json) or ``"none"``; ``nested`` puts them in sceneGraphs/ and
    questions/ as the downloads unpack. Every 8th scene graph has no question."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    for mode, n, first in (("train", n_train, 1000), ("val", n_val, 5000)):
        graphs = {image_id: _graph(rng, i) for i, image_id in enumerate(_ids(rng, n, first))}
        folder = root / "sceneGraphs" if nested else root
        folder.mkdir(exist_ok=True)
        (folder / f"{mode}_sceneGraphs.json").write_text(json.dumps(graphs))
        asked = [image_id for i, image_id in enumerate(graphs) if i % 8 != 3]
        if questions == "cache":
            (root / f"{mode}_images.json").write_text(json.dumps(asked))
        elif questions == "balanced":
            folder = root / "questions" if nested else root
            folder.mkdir(exist_ok=True)
            qs = {
                f"{j}{image_id}": {"imageId": image_id, "question": "Is it red?"}
                for j in range(2)
                for image_id in asked
            }
            (folder / f"{mode}_balanced_questions.json").write_text(json.dumps(qs))
    return root


def expected_split(root: Path, split: str, num_val_im: int, exclude_left_right: bool = False) -> list[tuple]:
    """The documented rules (docs/definitions.md, "GQA"), one image at a time: (id, width, height, boxes,
    labels, rels) with 1-based labels and predicates over the sorted names of both files."""

    def load(name: str):
        for folder in (root, root / "sceneGraphs", root / "questions"):
            if (folder / name).exists():
                return json.loads((folder / name).read_text())
        return None

    graphs = {mode: load(f"{mode}_sceneGraphs.json") for mode in ("train", "val")}
    objects = sorted({o["name"] for g in graphs.values() for sg in g.values() for o in sg["objects"].values()})
    predicates = sorted(
        {
            r["name"]
            for g in graphs.values()
            for sg in g.values()
            for o in sg["objects"].values()
            for r in o["relations"]
        }
    )
    mode = "val" if split == "test" else "train"
    asked = load(f"{mode}_images.json")
    if asked is None:
        questions = load(f"{mode}_balanced_questions.json")
        asked = graphs[mode] if questions is None else {q["imageId"] for q in questions.values()}
    ids = sorted(asked)
    ids = ids[:num_val_im] if split == "val" else ids[num_val_im:] if split == "train" else ids
    out = []
    for image_id in ids:
        sg = graphs[mode][image_id]
        index, boxes, labels, raw, has_rel = {}, [], [], [], False
        for oid in sorted(sg["objects"]):
            o = sg["objects"][oid]
            if o["x"] < 0 or o["y"] < 0 or o["w"] <= 0 or o["h"] <= 0:
                continue
            index[oid] = len(labels)
            labels.append(objects.index(o["name"]) + 1)
            boxes.append([o["x"], o["y"], o["x"] + o["w"], o["y"] + o["h"]])
            has_rel = has_rel or len(o["relations"]) > 0
            raw += [(oid, r["object"], r["name"]) for r in o["relations"]]
        if not has_rel:
            continue
        rels = [
            [index[s], index[t], predicates.index(p) + 1]
            for s, t, p in raw
            if s in index and t in index and not (exclude_left_right and p in ("to the left of", "to the right of"))
        ]
        if rels:
            out.append((image_id, sg["width"], sg["height"], boxes, labels, rels))
    return out


GQA200_CLASSES = ["__background__", *(f"thing{i}" for i in range(1, 11))]
GQA200_PREDICATES = ["__background__", *(f"rel{i}" for i in range(1, 6))]


def _records(rng, n: int, first_id: int) -> dict[str, list]:
    """``n`` images in GQA200's parallel-list layout; some have no box or no relation (dropped), some boxes
    reach past the image (clipped), some relations repeat (kept)."""
    out: dict[str, list] = {k: [] for k in ("filenames_all", "img_info_all", "gt_boxes_all", "gt_classes_all")}
    out["relationships_all"] = []
    for i in range(n):
        w, h = int(rng.integers(50, 800)), int(rng.integers(50, 800))
        k = int(rng.integers(0, 5)) if i % 7 else 0  # every 7th image has no box
        xy = rng.integers(-5, 700, size=(k, 2))
        boxes = np.column_stack([xy, xy + rng.integers(0, 300, size=(k, 2))]).tolist()
        boxes = [[float(v) if j % 2 else int(v) for j, v in enumerate(b)] for b in boxes]  # ints and floats
        m = int(rng.integers(0, 4)) if k and i % 5 else 0
        rels = [[int(rng.integers(0, k)), int(rng.integers(0, k)), int(rng.integers(1, 6))] for _ in range(m)]
        if rels and i % 3 == 0:
            rels.append(list(rels[0]))  # a duplicate row
        out["filenames_all"].append(f"{first_id + i}.jpg")
        out["img_info_all"].append({"width": w, "height": h, "image_id": first_id + i})
        out["gt_boxes_all"].append(boxes)
        out["gt_classes_all"].append([int(c) for c in rng.integers(1, 11, size=k)])
        out["relationships_all"].append(rels)
    return out


def write_gqa200(root: Path, seed: int = 0, n_train: int = 300, n_test: int = SKIPPED_TEST_RECORD + 40) -> Path:
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    info = {
        "ind_to_classes": GQA200_CLASSES,
        "ind_to_predicates": GQA200_PREDICATES,
        "rel_name_to_id": {p: i for i, p in enumerate(GQA200_PREDICATES)},
        "rel_count": {p: 1 for p in GQA200_PREDICATES},
    }
    (root / "GQA_200_ID_Info.json").write_text(json.dumps(info))
    (root / "GQA_200_Train.json").write_text(json.dumps(_records(rng, n_train, 1)))
    test = _records(rng, n_test, 100_000)
    if n_test > SKIPPED_TEST_RECORD:  # a keepable image: skipped only by the rule
        test["gt_boxes_all"][SKIPPED_TEST_RECORD] = [[1, 1, 9, 9]]
        test["gt_classes_all"][SKIPPED_TEST_RECORD] = [1]
        test["relationships_all"][SKIPPED_TEST_RECORD] = [[0, 0, 1]]
    (root / "GQA_200_Test.json").write_text(json.dumps(test))
    return root


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "data/examples")
    write_gqa(out / "gqa", n_train=400, n_val=200)
    write_gqa200(out / "gqa200", n_test=SKIPPED_TEST_RECORD + 200)
    print(f"GENERATED (not real data): a GQA download in {out / 'gqa'}, GQA200's files in {out / 'gqa200'}")
