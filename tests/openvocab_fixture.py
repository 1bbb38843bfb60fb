"""Small GENERATED VG150 files for the open-vocabulary protocols, and SGDet predictions on them; no real data.
``python tests/openvocab_fixture.py OUT`` (``make openvocab-example``) writes ``OUT/openvocab/vg150/`` (the three
VG150 files, with a ``split_GLIPunseen`` key beside ``split``) and ``OUT/openvocab/eval_results_sgdet.pytorch``
(the GLIP-unseen test images, Scene-Graph-Benchmark's format), plus ``predictions.npz`` (the same predictions as
plain arrays, what the scripts that run the reference codebases read: :func:`read_plain`).

VG150's real names (so the shipped base/novel splits apply), and every case the protocols' rules decide on:
triplets with no, one and two novel ends; novel and base predicates on one pair; same-class boxes at plain IoU just
below, at and above 0.9; an image with 120 boxes (OvSGTR cuts it to 100); boxes past the image border (VS3 clips,
OvSGTR does not); images without a predicted pair; tied scores; test images GLIP saw (``-2`` in
``split_GLIPunseen``). ``filler`` tiny test images come first, so that PGSG's first 5,000 can be dropped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from torch_writer import BoxList, save_zip  # noqa: E402
from vg150_fixture import write_vg150_fixture  # noqa: E402

from sgg_eval.data.vg150_facts import vg150_facts  # noqa: E402

FACTS = vg150_facts()
OBJECTS, PREDICATES = FACTS["object_classes"], FACTS["predicate_classes"]
# a few classes take most boxes, so that novel/base combinations repeat: novel (OvSGTR/VS3) and base ones
POOL = [OBJECTS.index(n) + 1 for n in ("man", "shirt", "car", "tree", "tile", "drawer", "railing", "kite", "woman")]
PRED_POOL = [PREDICATES.index(n) + 1 for n in ("on", "in", "of", "between", "wearing", "near", "holding", "riding")]


def _boxes(rng, n: int, span: int, other: int, border: bool) -> tuple[list, list]:
    """``n`` boxes ``(cx, cy, w, h)`` at 1024 inside the scaled image (``span`` x ``other``, longest 1024), even
    sizes so that x1 = cx - w / 2 exactly; near-duplicates of the same class at IoU 18/20, 20/22, 16/18."""
    boxes, labels = [], []
    for j in range(n):
        w, h = 2 * int(rng.integers(4, max(5, span // 6))), 2 * int(rng.integers(4, max(5, other // 6)))
        cx = int(rng.integers(w // 2, span - w // 2 + 1))
        cy = int(rng.integers(h // 2, other - h // 2 + 1))
        if border and j == 0:
            cx = span - w // 2  # x2 = the scaled width: past W - 1 once scaled back
        boxes.append([cx, cy, w, h])
        labels.append(int(rng.choice(POOL)) if rng.random() < 0.85 else int(rng.integers(1, 151)))
    for j, grow in ((0, 2), (1, 2), (2, 2)) if n >= 3 else ():
        if rng.random() < 0.6:
            cx, cy, w, h = boxes[j]
            w = {0: 18, 1: 20, 2: 16}[j]
            if cx - w // 2 < 0 or cx + (w + grow) // 2 + 1 > span:
                continue
            boxes[j] = [cx, cy, w, h]
            boxes.append([cx + grow // 2, cy, w + grow, h])  # same x1, one side grown: IoU w / (w + 2)
            labels.append(labels[j])
    return boxes, labels


def _rels(rng, n: int) -> list:
    rels = []
    for _ in range(int(rng.integers(1, 6))):
        s, o = (int(v) for v in rng.choice(n, 2, replace=False))
        rels.append([s, o, int(rng.choice(PRED_POOL)) if rng.random() < 0.8 else int(rng.integers(1, 51))])
    if rng.random() < 0.4:  # a multi-predicate pair: a second predicate on the first pair
        rels.append([rels[0][0], rels[0][1], int(rng.choice(PRED_POOL))])
    if rng.random() < 0.15:
        rels.append(list(rels[0]))  # a duplicate GT row
    return rels


def world(seed: int = 0, n_test: int = 60, filler: int = 0) -> tuple[list, list, np.ndarray]:
    """``(rows, image_data, glip)``: h5 rows as ``vg150_fixture.ROWS``, image sizes, and split_GLIPunseen."""
    rng = np.random.default_rng(seed)
    rows, image_data, glip = [], [], []
    for i in range(filler):  # tiny test images, GLIP-unseen
        image_data.append({"image_id": 100_000 + i, "width": 64, "height": 48})
        boxes, labels = [[16, 16, 8, 8], [30, 20, 10, 12]], [POOL[i % 4], POOL[(i + 1) % 5]]
        rows.append((2, boxes, labels, [[0, 1, PRED_POOL[i % 8]]]))
        glip.append(2)
    for i in range(n_test + 6):
        w, h = int(rng.integers(200, 1000)), int(rng.integers(200, 1000))
        scale = 1024 / max(w, h)
        span, other = (1024, int(h * scale)) if w >= h else (int(w * scale), 1024)
        n = 120 if i == 5 else int(rng.integers(2, 12))
        boxes, labels = _boxes(rng, n, span, max(other, 40), border=i % 3 == 0)
        boxes = [[min(v, 1024) for v in b] for b in boxes]
        rels = _rels(rng, len(boxes))
        code = 0 if i >= n_test else 2  # the last images are training ones
        if i == 7:
            rels = []  # a test image without relations: dropped by every loader
        image_data.append({"image_id": 200_000 + i, "width": w, "height": h})  # clear of the corrupted ids
        rows.append((code, boxes, labels, rels))
        glip.append(-2 if code == 2 and i % 11 == 4 else code)  # GLIP saw a few test images
    return rows, image_data, np.array(glip, dtype=np.int32)


def write_vg150(root: Path, seed: int = 0, n_test: int = 60, filler: int = 0) -> Path:
    rows, image_data, glip = world(seed, n_test, filler)

    def add_glip(arrays):
        arrays["split_GLIPunseen"] = glip
        arrays["attributes"] = np.zeros((len(arrays["labels"]), 10), dtype=np.int64)  # as VG150's h5 (VS3 reads it)

    return write_vg150_fixture(root, rows, image_data, mutate=add_glip, objects=OBJECTS, predicates=PREDICATES)


def _prediction(rng, gt, i: int, detections: int | None = None) -> dict:
    """A model's SGDet output for one GT image (``i`` picks the edge cases; ``detections``: boxes per image, the
    GT's and random ones, else the GT's), as plain arrays."""
    jitter = rng.normal(0, 3, gt.boxes.shape).astype(np.float32) * (rng.random(len(gt.boxes)) < 0.6)[:, None]
    boxes, labels = (
        gt.boxes + jitter,
        np.where(rng.random(len(gt.boxes)) < 0.85, gt.labels, rng.choice(POOL, len(gt.boxes))),
    )
    if detections is not None:
        boxes, labels = boxes[:detections], labels[:detections]
        extra = max(0, detections - len(boxes))
        corner = rng.uniform(0, [gt.width / 2, gt.height / 2], (extra, 2)).astype(np.float32)
        boxes = np.vstack([boxes, np.hstack([corner, corner + 40])])
        labels = np.concatenate([labels, rng.choice(POOL, extra)])
    n = len(boxes)
    boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2])
    scores = rng.uniform(0.2, 1.0, n).astype(np.float32)
    if i % 6 == 2:
        scores[:] = 0.5  # ties
    pairs = np.array([(s, o) for s in range(n) for o in range(n) if s != o], dtype=np.int64).reshape(-1, 2)
    if len(pairs) > 400:
        pairs = pairs[rng.choice(len(pairs), 400, replace=False)]
    if i % 10 == 7:
        pairs = pairs[:0]  # no predicted pair
    logits = rng.normal(0, 1.5, (len(pairs), 51))
    for s, o, p in gt.rels[(gt.rels[:, 0] < n) & (gt.rels[:, 1] < n)]:
        at = np.flatnonzero((pairs[:, 0] == s) & (pairs[:, 1] == o))
        logits[at, p] += 3.0 if rng.random() < 0.6 else 1.0
    probs = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype(np.float32)
    key = probs[:, 1:].max(axis=1) * scores[pairs[:, 0]] * scores[pairs[:, 1]] if len(pairs) else np.zeros(0)
    order = np.argsort(-key, kind="stable")
    return {"boxes": boxes, "labels": labels, "scores": scores, "pairs": pairs[order], "probs": probs[order]}


def _sgb_iou(a: np.ndarray, b: np.ndarray) -> float:
    """Scene-Graph-Benchmark's IoU of two xyxy boxes (float32, +1 pixel)."""
    a, b = a.astype(np.float32), b.astype(np.float32)
    wh = np.clip(np.minimum(a[2:], b[2:]) - np.maximum(a[:2], b[:2]) + 1, 0, None)
    inter = wh[0] * wh[1]
    area = lambda x: (x[2] - x[0] + 1) * (x[3] - x[1] + 1)  # noqa: E731
    return float(inter / (area(a) + area(b) - inter))


def _borderline(clipped: np.ndarray, unclipped: np.ndarray) -> np.ndarray | None:
    """A predicted box that matches the unclipped GT box (IoU ≥ 0.5) and not the clipped one, or ``None``: the box
    slid right until its IoU with the unclipped box falls to just above 0.5."""
    for shift in np.arange(0.0, unclipped[2] - unclipped[0] + 1, 0.125, dtype=np.float32):
        box = unclipped + np.array([shift, 0, shift, 0], np.float32)
        if _sgb_iou(box, unclipped) < 0.5:
            return None
        if _sgb_iou(box, clipped) < 0.5:
            return box
    return None


def _promote(p: dict, rels: np.ndarray) -> dict:
    """``p`` with the pairs of the GT relations ``rels`` sure of their predicate (0.9) and ranked again by the
    triplet score, so that whether they hit decides on their boxes alone."""
    probs, pairs = p["probs"].copy(), p["pairs"]
    for s, o, c in rels.tolist():
        at = np.flatnonzero((pairs[:, 0] == s) & (pairs[:, 1] == o))
        probs[at] = 0.1 / 50
        probs[at, c] = 0.9
    key = probs[:, 1:].max(axis=1) * p["scores"][pairs[:, 0]] * p["scores"][pairs[:, 1]] if len(pairs) else np.zeros(0)
    order = np.argsort(-key, kind="stable")
    return {**p, "pairs": pairs[order], "probs": probs[order]}


def write_predictions(
    root: Path,
    out: Path,
    split_key: str = "split_GLIPunseen",
    seed: int = 1,
    detections: int | None = None,
    borderline: bool = False,
    unclipped_gt: bool = False,
) -> int:
    """SGDet predictions for the test images of ``split_key`` (clipped GT in the file, as Scene-Graph-Benchmark
    writes it): ``out`` (eval_results.pytorch) and ``out``'s folder ``predictions.npz``; returns the count.
    ``borderline``: the box predicted for a GT box past the border matches it unclipped and not clipped, where such
    a box exists, so that clipping the GT changes the numbers (PGSG's loader does not clip). ``unclipped_gt``: the
    file's groundtruths keep their boxes past the border (as a loader that does not clip would store them)."""
    from sgg_eval.data.vg150 import VG150, VG150Files

    files = VG150Files.in_dir(str(root))
    _, _, images = VG150("vg150", files, split_key=split_key).open_split("test")
    _, _, raw = VG150("vg150", files, split_key=split_key, clip_boxes=False).open_split("test")
    rng = np.random.default_rng(seed)
    gts, preds, plain = [], [], []
    for i, (gt, unclipped) in enumerate(zip(images, raw)):
        p = _prediction(rng, gt, i, detections)
        for j in np.flatnonzero((gt.boxes != unclipped.boxes).any(axis=1)) if borderline else ():
            box = _borderline(gt.boxes[j], unclipped.boxes[j])
            if box is not None and j < len(p["boxes"]):
                p["boxes"][j], p["labels"][j] = box, gt.labels[j]
                p = _promote(p, gt.rels[(gt.rels[:, 0] == j) | (gt.rels[:, 1] == j)])
        stored = unclipped.boxes if unclipped_gt else gt.boxes
        gts.append(BoxList(stored, (gt.width, gt.height), labels=gt.labels, relation_tuple=gt.rels))
        preds.append(
            BoxList(
                p["boxes"],
                (gt.width, gt.height),
                pred_labels=p["labels"].astype(np.int64),
                pred_scores=p["scores"],
                rel_pair_idxs=p["pairs"],
                pred_rel_scores=p["probs"],
                pred_rel_labels=(p["probs"][:, 1:].argmax(1) + 1).astype(np.int64)
                if len(p["pairs"])
                else np.zeros(0, np.int64),
            )
        )
        plain.append((gt.image_id, p))
    save_zip({"groundtruths": gts, "predictions": preds}, out)
    write_plain(out.parent / "predictions.npz", plain)
    return len(gts)


def write_plain(path: Path, images: list) -> None:
    """``(image_id, prediction)`` pairs as one npz of concatenated arrays and per-image counts (no pickle)."""
    arrays = {"image_id": np.array([i for i, _ in images], dtype=np.int64)}
    for key, per in (("boxes", "boxes"), ("pairs", "pairs")):
        arrays[f"n_{key}"] = np.array([len(p[per]) for _, p in images], dtype=np.int64)
    for key, shape in (("boxes", (0, 4)), ("labels", (0,)), ("scores", (0,)), ("pairs", (0, 2)), ("probs", (0, 51))):
        parts = [p[key] for _, p in images]
        arrays[key] = np.concatenate(parts) if parts else np.zeros(shape)
    np.savez(path, **arrays)


def read_plain(path) -> list[dict]:
    """The images of :func:`write_plain`: per image ``image_id``, ``boxes``, ``labels``, ``scores``, ``pairs``,
    ``probs`` (what the scripts that run the reference codebases read)."""
    with np.load(path, allow_pickle=False) as npz:
        z = {key: npz[key] for key in npz.files}  # each read of an NpzFile key loads the array again
    box_at, pair_at = np.cumsum(z["n_boxes"]) - z["n_boxes"], np.cumsum(z["n_pairs"]) - z["n_pairs"]
    out = []
    for i, image_id in enumerate(z["image_id"].tolist()):
        b, p = slice(box_at[i], box_at[i] + z["n_boxes"][i]), slice(pair_at[i], pair_at[i] + z["n_pairs"][i])
        out.append({"image_id": image_id, "boxes": z["boxes"][b], "labels": z["labels"][b], "scores": z["scores"][b],
                    "pairs": z["pairs"][p], "probs": z["probs"][p]})  # fmt: skip
    return out


def main(out: str, filler: int = 0) -> None:
    root = Path(out) / "openvocab"
    vg = write_vg150(root / "vg150", filler=filler)
    n = write_predictions(vg, root / "eval_results_sgdet.pytorch")
    print(f"GENERATED VG150 files (no real data) in {vg} and SGDet predictions for {n} GLIP-unseen test images")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/examples", int(sys.argv[2]) if len(sys.argv) > 2 else 0)
