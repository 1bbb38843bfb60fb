"""A generated PSG-like benchmark, written as the files PSG researchers have: ``psg.json`` + COCO panoptic PNGs
(ground truth) and an SGBench submission (ZIP with one TIFF of instance masks per image, or its JSON alone).

Deterministic from a seed; small by default. Edge cases are mixed in: overlapping predicted masks, IoU
exactly 0.5, two same-class GT segments tied for a prediction, wrong labels, false detections, a segment
missing from its PNG, duplicate triplets, several predicates on one pair, test images without relations,
test images absent from the predictions, empty triplet lists, and 0-, 1-, 3- and 4-layer TIFFs.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

THINGS = ["person", "dog", "car", "cup", "chair", "kite"]
STUFF = ["grass", "sky", "wall"]
PREDICATES = ["on", "beside", "holding", "looking at", "in"]
SPELLINGS = ("annotation", "instances", "bboxes")


def _segments(rng, h: int, w: int, n: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """An id map [H, W] of ``n`` rectangles painted in turn (later ones cover earlier ones: no overlap), and
    (segment id, class) per segment."""
    ids = np.zeros((h, w), dtype=np.int64)
    info = []
    for k in range(n):
        seg_id = int(rng.integers(1, 256**3 - 1))
        y, x = int(rng.integers(0, h - 8)), int(rng.integers(0, w - 8))
        ids[y : y + int(rng.integers(6, h // 2)), x : x + int(rng.integers(6, w // 2))] = seg_id
        info.append((seg_id, int(rng.integers(0, len(THINGS) + len(STUFF)))))
    present = set(np.unique(ids).tolist())
    if rng.random() < 0.8:  # usually every segment shows; sometimes one is fully covered (an empty GT mask)
        info = [(s, c) for s, c in info if s in present]
    return ids, info


def _png(ids: np.ndarray) -> bytes:
    from PIL import Image

    rgb = np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(out, "PNG")
    return out.getvalue()


def _box(mask: np.ndarray) -> list[float]:
    ys, xs = np.nonzero(mask)
    if not len(ys):
        return [0.0, 0.0, 0.0, 0.0]
    return [float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1)]


def _predict(
    rng, ids: np.ndarray, info: list, rels: list, min_false: int
) -> tuple[list[np.ndarray], list[int], list, list]:
    """Predicted masks (overlapping allowed), classes, triplets and ng_triplets for one image."""
    masks, cats, origin = [], [], []
    for g, (seg_id, cat) in enumerate(info):
        gt = ids == seg_id
        kind = rng.integers(0, 6)
        if kind == 5 or not gt.any():
            continue  # missed
        m = gt.copy()
        if kind == 1:  # IoU exactly 0.5: as many extra pixels outside as the segment has
            extra = np.flatnonzero(~gt.reshape(-1))[: int(gt.sum())]
            m.reshape(-1)[extra] = True
        elif kind == 2:  # eroded: IoU below 1
            ys, xs = np.nonzero(gt)
            m[ys[::2], xs[::2]] = False
        elif kind == 3:  # grown into its neighbours: overlaps other predictions
            m = np.roll(gt, 3, axis=1) | gt
        masks.append(m)
        cats.append(cat if rng.random() < 0.85 else int(rng.integers(0, len(THINGS) + len(STUFF))))
        origin.append(g)
    for _ in range(int(rng.integers(min_false, 3))):  # false detections
        m = np.zeros_like(ids, dtype=bool)
        y, x = int(rng.integers(0, ids.shape[0] - 5)), int(rng.integers(0, ids.shape[1] - 5))
        m[y : y + 5, x : x + 9] = True
        masks.append(m)
        cats.append(int(rng.integers(0, len(THINGS) + len(STUFF))))
        origin.append(-1)
    where = {g: q for q, g in enumerate(origin) if g >= 0}
    q = len(masks)
    triplets = [[where[s], where[o], p] for s, o, p in rels if s in where and o in where and rng.random() < 0.7]
    for _ in range(int(rng.integers(0, 12 * q + 1))) if q >= 2 else ():  # wrong triplets, anywhere in the list
        s, o = rng.choice(q, 2, replace=False)
        triplets.insert(int(rng.integers(0, len(triplets) + 1)), [int(s), int(o), int(rng.integers(0, 5))])
    if triplets and rng.random() < 0.4:
        triplets.append(list(triplets[0]))  # a duplicate row
    ng = [[int(s), int(o), int(p)] for s, o, _ in triplets for p in rng.permutation(5)[:3]]
    return masks, cats, triplets, ng


def instance_values(pred: dict, field: str) -> list:
    """An SGBench image's ``category`` or ``bbox`` values, whichever of the three instance spellings it uses."""
    for key in ("annotation", "instances"):
        if key in pred:
            return [i[field] for i in pred[key]]
    return pred[{"category": "categories", "bbox": "bboxes"}[field]]


def set_first_instance(pred: dict, field: str, value) -> None:
    """Set the first instance's ``category`` or ``bbox``, in whichever spelling the image uses."""
    for key in ("annotation", "instances"):
        if key in pred:
            pred[key][0][field] = value
            return
    pred[{"category": "categories", "bbox": "bboxes"}[field]][0] = value


def write_psg_fixture(
    root: Path,
    *,
    seed: int = 0,
    test: int = 12,
    other: int = 5,
    size=(48, 64),
    absent: int = 2,
    spellings=SPELLINGS,
    min_false: int = 0,
    unused_predicates: int = 0,
) -> dict:
    """Write ``root/psg.json``, ``root/coco/panoptic/*.png``, ``root/submission.zip`` and ``root/submission.json``
    (the same predictions, boxes only); returns their paths. ``spellings``: the instance lists' spellings, in
    turn (sgbench 1.0.0 reads only ``annotation``); ``min_false``: false detections per image at least (sgbench
    fails on an image without instances in box mode); ``unused_predicates``: the last ones never occur in the GT
    (mR@K is then undefined)."""
    rng = np.random.default_rng(seed)
    (root / "coco" / "panoptic").mkdir(parents=True, exist_ok=True)
    data, test_ids, images, layers = [], [], [], {}
    for i in range(test + other):
        image_id = str(1000 + i)  # real PSG ids are strings
        ids, info = _segments(rng, *size, int(rng.integers(3, 8)))
        (root / "coco" / "panoptic" / f"{image_id}.png").write_bytes(_png(ids))
        n = len(info)
        rels = (
            []
            if i % 7 == 3 or n < 2
            else [
                [int(s), int(o), int(rng.integers(0, len(PREDICATES) - unused_predicates))]
                for s, o in (rng.choice(n, 2, replace=False) for _ in range(int(rng.integers(1, 2 * n))))
            ]
        )
        if len(rels) > 1 and rng.random() < 0.5:
            rels.append(list(rels[0]))  # a duplicate GT row
            rels.append([rels[0][0], rels[0][1], (rels[0][2] + 1) % (len(PREDICATES) - unused_predicates)])
        data.append(
            {
                "image_id": image_id,
                "file_name": f"{image_id}.jpg",
                "height": size[0],
                "width": size[1],
                "pan_seg_file_name": f"panoptic/{image_id}.png",
                "relations": rels,
                "segments_info": [{"id": s, "category_id": c, "iscrowd": 0} for s, c in info],
                "annotations": [{"bbox": _box(ids == s), "category_id": c} for s, c in info],
            }
        )
        if i >= test:
            continue
        test_ids.append(image_id)
        if i < absent:
            continue  # absent from the predictions
        masks, cats, triplets, ng = _predict(rng, ids, info, rels, min_false)
        if i == absent:
            triplets, ng = [], []  # present with an empty list
        spelling = spellings[i % len(spellings)]
        entry = {"id": image_id, "seg_filename": f"masks/{image_id}.tiff", "triplets": triplets, "ng_triplets": ng}
        boxes = [_box(m) for m in masks]
        if spelling == "bboxes":
            entry.update(bboxes=boxes, categories=cats)
        else:
            entry[spelling] = [{"bbox": b, "category": c} for b, c in zip(boxes, cats)]
        images.append(entry)
        layers[entry["seg_filename"]] = np.array(masks, dtype=np.uint8).reshape(len(masks), *size)
    psg = {
        "data": data,
        "test_image_ids": test_ids,
        "thing_classes": THINGS,
        "stuff_classes": STUFF,
        "predicate_classes": PREDICATES,
    }
    (root / "psg.json").write_text(json.dumps(psg))
    doc = {"version": 1, "images": images}
    (root / "submission.json").write_text(json.dumps(doc))
    with zipfile.ZipFile(root / "submission.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("triplets.json", json.dumps(doc))
        for name, stack in layers.items():
            zf.writestr(name, _tiff(stack))
    return {
        "psg": root / "psg.json",
        "root": root / "coco",
        "zip": root / "submission.zip",
        "json": root / "submission.json",
    }


def _tiff(stack: np.ndarray) -> bytes:
    import tifffile

    out = io.BytesIO()
    # 3 or 4 layers: one planar RGB(A) page, as tifffile's default has written them (sgbench's own writer)
    layout = {"photometric": "rgb", "planarconfig": "separate"} if len(stack) in (3, 4) else {}
    tifffile.imwrite(out, stack, compression="zlib", **layout)
    return out.getvalue()
