"""Random COCO-style scene-graph files (SGG-Benchmark's layout) with what its loader treats specially: categories
with gaps in their ids (labels compacted), images without relations (dropped), annotations of different images
interleaved, relations to another image's annotations or of an unknown predicate (dropped), repeated relations and
pairs with several predicates (the test-time draw), boxes past the border (clipped to W, H), zero-size boxes, an
image whose relations are all dropped (kept, with none), annotations and relations of an image the file does not
list (never read)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OBJECTS = ("chair", "table", "cup", "lamp", "bed", "door", "window")
PREDICATES = ("on", "near", "has", "in front of", "behind")


def coco_sgg_document(rng: np.random.Generator, n_images: int = 12) -> dict:
    cat_ids = sorted(rng.choice(np.arange(1, 20), size=len(OBJECTS), replace=False).tolist())
    pred_ids = sorted(rng.choice(np.arange(1, 12), size=len(PREDICATES), replace=False).tolist())
    images, annotations, relations = [], [], []
    ann_id = 100
    for i in range(n_images):
        width, height = int(rng.integers(20, 200)), int(rng.integers(20, 200))
        images.append({"id": 1000 + 7 * i, "file_name": f"{i}.jpg", "width": width, "height": height})
    own: dict[int, list[int]] = {}
    for image in images:
        for _ in range(int(rng.integers(0, 6))):
            x, y = rng.integers(-10, image["width"]), rng.integers(-10, image["height"])
            fraction = rng.random(2) * (rng.random() < 0.3)  # sometimes not whole pixels
            w, h = (rng.integers(0, 80, size=2) if rng.random() > 0.1 else (0, 0)) + fraction
            annotations.append({"id": ann_id, "image_id": image["id"], "category_id": int(rng.choice(cat_ids)),
                                "bbox": [float(x), float(y), float(w), float(h)], "area": 0, "iscrowd": 0})  # fmt: skip
            own.setdefault(image["id"], []).append(ann_id)
            ann_id += 1
    order = rng.permutation(len(annotations))  # annotations of different images interleaved
    annotations = [annotations[k] for k in order]
    every = [a["id"] for a in annotations]
    for image in images:
        boxes = own.get(image["id"], [])
        if len(boxes) < 2 or rng.random() < 0.15:
            continue
        for _ in range(int(rng.integers(1, 8))):
            s, o = rng.choice(boxes, size=2, replace=False).tolist()
            p = int(rng.choice(pred_ids))
            kind = rng.random()
            if kind < 0.08:
                o = int(rng.choice(every))  # perhaps another image's annotation
            elif kind < 0.14:
                p = 99  # no such predicate
            relations.append({"id": len(relations), "image_id": image["id"], "subject_id": s, "predicate_id": p,
                              "object_id": o})  # fmt: skip
            if rng.random() < 0.3:  # the same pair again: a duplicate or a second predicate
                q = p if rng.random() < 0.5 else int(rng.choice(pred_ids))
                relations.append({**relations[-1], "id": len(relations), "predicate_id": q})
    relations.append(
        {"id": len(relations), "image_id": 1, "subject_id": 100, "predicate_id": pred_ids[0], "object_id": 101}
    )  # fmt: skip  (an image the file does not list)
    annotations.append({"id": 99999, "image_id": 2, "category_id": cat_ids[0], "bbox": [0, 0, 1, 1]})
    return {
        "images": images,
        "annotations": annotations,
        "rel_annotations": relations,
        "categories": [{"id": c, "name": n, "supercategory": "thing"} for c, n in zip(cat_ids, OBJECTS)],
        "rel_categories": [{"id": p, "name": n} for p, n in zip(pred_ids, PREDICATES)],
    }


def write_coco_sgg(root: Path, seed: int, splits=("train", "test")) -> Path:
    """``root/<split>/_annotations.coco.json`` (and the empty image files SGG-Benchmark's loader looks for)."""
    rng = np.random.default_rng(seed)
    for split in splits:
        folder = root / split
        folder.mkdir(parents=True, exist_ok=True)
        doc = coco_sgg_document(rng)
        (folder / "_annotations.coco.json").write_text(json.dumps(doc))
        for image in doc["images"]:
            (folder / image["file_name"]).touch()
    return root
