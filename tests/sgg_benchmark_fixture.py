"""Random SGG-Benchmark ``predictions.pth`` files for a GT split store, written without torch (``torch_writer``): a
list of dicts of tensors in split order, as its inference saves them, with the rank order its ``PostProcessor``
gives (triple score = best foreground probability x both object scores, descending, top 100). SGDet boxes are
jittered GT boxes (so they match, or miss, near the threshold), random boxes and, for the IoU's edge cases, boxes
1 pixel wide and 2 x 3; some images have no prediction; some files store their boxes as ``xywh``."""

from __future__ import annotations

import numpy as np
from torch_writer import save_zip


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def prediction_entry(rng: np.random.Generator, gt, task: str, num_objects: int, num_predicates: int) -> dict:
    n = len(gt.labels)
    gb = gt.boxes.astype(np.float32)
    if task == "predcls":
        boxes, labels, scores = gb, gt.labels.copy(), np.ones(n, np.float32)
    elif task == "sgcls":
        boxes, labels = gb, gt.labels.copy()
        flip = rng.random(n) < 0.3
        labels[flip] = rng.integers(1, num_objects + 1, int(flip.sum()))
        scores = rng.uniform(0.05, 1, n).astype(np.float32)
    else:
        jittered = gb + rng.normal(0, rng.choice([0.3, 1.5, 6.0]), gb.shape).astype(np.float32)
        jittered[:, 2:] = np.maximum(jittered[:, 2:], jittered[:, :2])
        x, y = rng.uniform(0, max(gt.width, 2) - 2, 2), rng.uniform(0, max(gt.height, 3) - 3, 2)
        edge = np.array([[x[0], y[0], x[0] + 1, y[0] + 5], [x[1], y[1], x[1] + 2, y[1] + 3]], np.float32)  # 1 px, 2x3
        boxes = np.concatenate([jittered, edge]).astype(np.float32)
        labels = np.concatenate([gt.labels, rng.integers(1, num_objects + 1, 2)])
        flip = rng.random(len(labels)) < 0.2
        labels[flip] = rng.integers(1, num_objects + 1, int(flip.sum()))
        scores = rng.uniform(0.05, 1, len(labels)).astype(np.float32)
    q = len(boxes)
    if q < 2 or rng.random() < 0.08:
        pairs = np.zeros((0, 2), np.int64)
    else:
        every = np.array([(i, j) for i in range(q) for j in range(q) if i != j])
        pairs = every[rng.choice(len(every), min(len(every), int(rng.integers(1, 150))), replace=False)]
    probs = _softmax(rng.normal(0, 2, (len(pairs), num_predicates + 1)))
    triple = probs[:, 1:].max(axis=1) * scores[pairs[:, 0]] * scores[pairs[:, 1]] if len(pairs) else np.zeros(0)
    order = np.argsort(-triple, kind="stable")[:100]
    pairs, probs = pairs[order], probs[order]
    mode = "xyxy"
    if task == "sgdet" and rng.random() < 0.3:  # its xywh: w = x2 - x1 + 1
        mode = "xywh"
        boxes = np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2] + 1], axis=1).astype(np.float32)
    return {
        "boxes": boxes.astype(np.float32),
        "image_size": (gt.width, gt.height),
        "mode": mode,
        "pred_labels": labels.astype(np.int64),
        "pred_scores": scores.astype(np.float32),
        "rel_pair_idxs": pairs.astype(np.int64),
        "pred_rel_scores": probs,
        "pred_rel_labels": (1 + probs[:, 1:].argmax(axis=1)).astype(np.int64),
        "image_path": f"{gt.image_id}.jpg",
    }


def write_predictions(path, gts: list, task: str, vocab, seed: int) -> list[dict]:
    """``predictions.pth`` at ``path`` for the GT images ``gts`` (split order); returns the entries."""
    rng = np.random.default_rng(seed)
    entries = [prediction_entry(rng, gt, task, vocab.num_objects, vocab.num_predicates) for gt in gts]
    save_zip(entries, path)
    return entries
