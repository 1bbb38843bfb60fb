"""A PSG-test-sized benchmark fixture, written as the files ``sgbench`` and ``sgg-eval evaluate --psg`` read.

Shapes follow PSG's test split (a third-party COCO-format copy of PSG lists 2,186 test images, 24,910 objects
and 13,705 relations; psg.json has 48,749 entries): per test image, 640×480, ~11 GT segments covering the
image and ~6 relations; per prediction, ~40 instance masks (the GT segments, some shifted, plus false
detections; masks overlap), 200 ``triplets`` and 5,000 ``ng_triplets``. ``psg.json`` also lists ``other``
non-test entries (PSG: 46,563) with segments, boxes and relations but no PNG (no evaluator reads one).

Written: ``psg.json``, ``coco/panoptic/<id>.png``, ``submission.zip`` (``triplets.json`` + one Deflate TIFF
per image, as sgbench's own writer makes them) and ``submission.json`` (the same JSON alone: box mode).
Deterministic from the seed; the images are encoded by ``jobs`` processes. ``make bench`` caches the result.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import zipfile
from pathlib import Path

import numpy as np

N_CLASSES, N_PREDICATES = 133, 56


def _gt(rng, h: int, w: int) -> tuple[np.ndarray, list[int], list[int]]:
    """An id map covering the image with ~11 rectangles (later ones on top), its segment ids and classes."""
    ids = np.zeros((h, w), dtype=np.int64)
    seg_ids = rng.choice(np.arange(1, 1 << 24), size=int(rng.integers(8, 15)), replace=False)
    ids[:] = seg_ids[0]  # the first segment is the background stuff: every pixel belongs to a segment
    for seg in seg_ids[1:]:
        y, x = int(rng.integers(0, h - 40)), int(rng.integers(0, w - 40))
        ids[y : y + int(rng.integers(30, h // 2)), x : x + int(rng.integers(30, w // 2))] = seg
    present = [int(s) for s in seg_ids if (ids == s).any()]
    return ids, present, [int(c) for c in rng.integers(0, N_CLASSES, len(present))]


def _box(mask: np.ndarray) -> list[float]:
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if not len(rows):
        return [0.0, 0.0, 0.0, 0.0]
    return [float(cols[0]), float(rows[0]), float(cols[-1] + 1), float(rows[-1] + 1)]


def _image(args: tuple) -> tuple:
    """One test image: (GT entry, PNG bytes, prediction entry, TIFF bytes)."""
    seed, image_id, (h, w), n_masks, n_triplets, n_ng = args
    rng = np.random.default_rng(seed)
    ids, segs, cats = _gt(rng, h, w)
    n = len(segs)
    rels = [
        [int(s), int(o), int(rng.integers(0, N_PREDICATES))]
        for s, o in (rng.choice(n, 2, replace=False) for _ in range(int(rng.integers(3, 10))))
    ]
    masks = np.zeros((n_masks, h, w), dtype=np.uint8)
    labels = []
    for q in range(n_masks):
        if q < n:  # the GT segment, sometimes shifted
            masks[q] = ids == segs[q]
            if rng.random() < 0.3:
                masks[q] = np.roll(masks[q], int(rng.integers(5, 40)), axis=1)
            labels.append(cats[q] if rng.random() < 0.85 else int(rng.integers(0, N_CLASSES)))
        else:  # a false detection
            y, x = int(rng.integers(0, h - 20)), int(rng.integers(0, w - 20))
            masks[q, y : y + int(rng.integers(10, h // 3)), x : x + int(rng.integers(10, w // 3))] = 1
            labels.append(int(rng.integers(0, N_CLASSES)))
    triplets = [
        [int(s), int(o), int(p)]
        for s, o, p in zip(
            rng.integers(0, n_masks, n_triplets),
            rng.integers(0, n_masks, n_triplets),
            rng.integers(0, N_PREDICATES, n_triplets),
        )
    ]
    for r in rels:  # some GT relations among the first rows
        if r[0] < n_masks and r[1] < n_masks and rng.random() < 0.6:
            triplets.insert(int(rng.integers(0, 50)), list(r))
    ng = [
        [int(s), int(o), int(p)]
        for s, o, p in zip(
            rng.integers(0, n_masks, n_ng), rng.integers(0, n_masks, n_ng), rng.integers(0, N_PREDICATES, n_ng)
        )
    ]
    gt_entry = {
        "image_id": image_id,
        "file_name": f"{image_id}.jpg",
        "height": h,
        "width": w,
        "pan_seg_file_name": f"panoptic/{image_id}.png",
        "relations": rels,
        "segments_info": [{"id": s, "category_id": c, "iscrowd": 0} for s, c in zip(segs, cats)],
        "annotations": [{"bbox": _box(ids == s), "category_id": c} for s, c in zip(segs, cats)],
    }
    pred = {
        "id": image_id,
        "seg_filename": f"masks/{image_id}.tiff",
        "triplets": triplets[:n_triplets],
        "ng_triplets": ng,
        "annotation": [{"category": c, "bbox": _box(m)} for c, m in zip(labels, masks)],
    }
    return gt_entry, _png(ids), pred, _tiff(masks)


def _png(ids: np.ndarray) -> bytes:
    from PIL import Image

    rgb = np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(out, "PNG", compress_level=1)
    return out.getvalue()


def _tiff(stack: np.ndarray) -> bytes:
    import tifffile

    out = io.BytesIO()
    tifffile.imwrite(
        out,
        stack,
        photometric="minisblack",
        compression="zlib",
        compressionargs={"level": 1},
        metadata={"shape": list(stack.shape)},
    )
    return out.getvalue()


def _other(rng, i: int) -> dict:
    n = int(rng.integers(4, 15))
    boxes = rng.integers(0, 400, (n, 2))
    return {
        "image_id": str(2_000_000 + i),
        "file_name": f"{i}.jpg",
        "height": 480,
        "width": 640,
        "pan_seg_file_name": f"panoptic/{2_000_000 + i}.png",
        "relations": [
            [int(s), int(o), int(rng.integers(0, N_PREDICATES))]
            for s, o in (rng.choice(n, 2, replace=False) for _ in range(int(rng.integers(1, 9))))
        ],
        "segments_info": [
            {"id": int(k + 1), "category_id": int(c), "iscrowd": 0} for k, c in enumerate(rng.integers(0, N_CLASSES, n))
        ],
        "annotations": [
            {"bbox": [float(x), float(y), float(x + 100), float(y + 50)], "category_id": 0} for x, y in boxes
        ],
    }


def write_psg_scale_fixture(
    root: Path,
    *,
    test: int = 2186,
    other: int = 46563,
    size=(480, 640),
    masks: int = 40,
    triplets: int = 200,
    ng: int = 5000,
    seed: int = 0,
    jobs: int = 2,
) -> dict:
    """Write the fixture under ``root`` (module docstring); returns the paths."""
    root = Path(root)
    (root / "coco" / "panoptic").mkdir(parents=True, exist_ok=True)
    work = [(seed * 1_000_003 + i, str(1_000_000 + i), size, masks, triplets, ng) for i in range(test)]
    data, preds = [], []
    with multiprocessing.get_context("fork").Pool(jobs) as pool, zipfile.ZipFile(root / "submission.zip", "w") as zf:
        for gt_entry, png, pred, tiff in pool.imap(_image, work, chunksize=4):
            (root / "coco" / gt_entry["pan_seg_file_name"]).write_bytes(png)
            zf.writestr(pred["seg_filename"], tiff)
            data.append(gt_entry)
            preds.append(pred)
        doc = json.dumps({"version": 1, "images": preds})
        info = zipfile.ZipInfo("triplets.json")
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, doc)
    (root / "submission.json").write_text(doc)
    rng = np.random.default_rng(seed)
    data += [_other(rng, i) for i in range(other)]
    order = rng.permutation(len(data))  # test images spread through the file, as in psg.json
    psg = {
        "data": [data[i] for i in order],
        "test_image_ids": [e["image_id"] for e in data[:test]],
        "thing_classes": [f"thing{k}" for k in range(80)],
        "stuff_classes": [f"stuff{k}" for k in range(53)],
        "predicate_classes": [f"predicate{k}" for k in range(N_PREDICATES)],
    }
    (root / "psg.json").write_text(json.dumps(psg))
    return {
        "psg": root / "psg.json",
        "root": root / "coco",
        "zip": root / "submission.zip",
        "json": root / "submission.json",
    }
