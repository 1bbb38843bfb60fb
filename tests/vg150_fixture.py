"""Builds a tiny VG150 split (h5 + dicts json + image_data json) in the exact schema of the real files."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

OBJECTS = ["man", "shirt", "horse", "street", "car"]
PREDICATES = ["on", "wearing", "parked on"]

# image_data.json order; ids 1592 and 1722 are the reference's corrupted files and have no h5 row.
IMAGE_DATA = [
    {"image_id": 10, "width": 512, "height": 256},
    {"image_id": 1592, "width": 1, "height": 1},
    {"image_id": 11, "width": 800, "height": 600},
    {"image_id": 12, "width": 640, "height": 480},
    {"image_id": 1722, "width": 2, "height": 2},
    {"image_id": 13, "width": 1024, "height": 768},
    {"image_id": 14, "width": 300, "height": 500},
    {"image_id": 15, "width": 500, "height": 375},
    {"image_id": 16, "width": 600, "height": 400},
    {"image_id": 17, "width": 700, "height": 700},
]

# One entry per h5 row (= per kept image): split code, boxes (cx, cy, w, h at 1024), labels, rels (local s, o, p).
ROWS = [
    (0, [[101, 50, 31, 20], [1020, 100, 40, 10], [5, 300, 15, 40]], [1, 2, 5], [[0, 1, 2], [2, 0, 1]]),  # id 10
    (0, [], [], []),  # id 11: no boxes -> dropped
    (0, [[200, 200, 50, 50], [220, 210, 30, 30]], [1, 3], []),  # id 12: no relations -> dropped
    (0, [[300, 300, 100, 60], [310, 320, 40, 40]], [1, 2], [[0, 1, 2], [0, 1, 2]]),  # id 13: duplicate rows
    (2, [[400, 400, 80, 80], [420, 500, 300, 100]], [5, 4], [[0, 1, 3], [0, 1, 3], [0, 1, 1]]),  # id 14: test
    (2, [[100, 100, 10, 10]], [3], []),  # id 15: test, no relations -> dropped
    (0, [[512, 512, 1024, 1024], [600, 600, 20, 30]], [4, 5], [[1, 0, 1]]),  # id 16: train (after val carve-out)
    (2, [[50, 60, 21, 33], [70, 80, 11, 9], [90, 90, 5, 5]], [1, 2, 3], [[0, 1, 2], [2, 1, 1]]),  # id 17: test
]


def write_vg150_fixture(
    root: Path, rows=ROWS, image_data=IMAGE_DATA, mutate=None, objects=OBJECTS, predicates=PREDICATES
) -> Path:
    """Write the three files into ``root``; ``mutate(arrays)`` may corrupt the h5 arrays before writing;
    ``objects`` and ``predicates`` are the dictionary's names."""
    root.mkdir(parents=True, exist_ok=True)
    labels, boxes, rels, preds = [], [], [], []
    first_box, last_box, first_rel, last_rel, split = [], [], [], [], []
    for code, b, lab, r in rows:
        split.append(code)
        if b:
            first_box.append(len(boxes))
            last_box.append(len(boxes) + len(b) - 1)
        else:
            first_box.append(-1)
            last_box.append(-1)
        if r:
            first_rel.append(len(rels))
            last_rel.append(len(rels) + len(r) - 1)
            for s, o, p in r:
                rels.append([first_box[-1] + s, first_box[-1] + o])
                preds.append(p)
        else:
            first_rel.append(-1)
            last_rel.append(-1)
        boxes.extend(b)
        labels.extend(lab)
    arrays = {
        "split": np.array(split, dtype=np.int32),
        "img_to_first_box": np.array(first_box, dtype=np.int32),
        "img_to_last_box": np.array(last_box, dtype=np.int32),
        "img_to_first_rel": np.array(first_rel, dtype=np.int32),
        "img_to_last_rel": np.array(last_rel, dtype=np.int32),
        "labels": np.array(labels, dtype=np.int64).reshape(-1, 1),
        "boxes_1024": np.array(boxes, dtype=np.int32).reshape(-1, 4),
        "boxes_512": (np.array(boxes, dtype=np.int32).reshape(-1, 4) // 2),
        "relationships": np.array(rels, dtype=np.int32).reshape(-1, 2),
        "predicates": np.array(preds, dtype=np.int64).reshape(-1, 1),
    }
    if mutate:
        mutate(arrays)
    with h5py.File(root / "VG-SGG-with-attri.h5", "w") as h5:
        for k, v in arrays.items():
            h5.create_dataset(k, data=v)
    dicts = {
        "label_to_idx": {n: i + 1 for i, n in enumerate(objects)},
        "idx_to_label": {str(i + 1): n for i, n in enumerate(objects)},
        "predicate_to_idx": {n: i + 1 for i, n in enumerate(predicates)},
        "idx_to_predicate": {str(i + 1): n for i, n in enumerate(predicates)},
    }
    (root / "VG-SGG-dicts-with-attri.json").write_text(json.dumps(dicts))
    (root / "image_data.json").write_text(json.dumps(image_data))
    return root
