"""`make bench`: throughput of the full metric suite at VG-test scale, against a read floor measured in the
same run (reading every score array once and taking its row max). Inputs are synthesised in memory from a
pool of distinct images (so disk is not the bottleneck and memory stays flat); SGDet runs a stated subset.

Prints images/s, the ratio to the read floor and peak RSS. No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from sgg_eval.data.types import GTImage, PredImage, Vocabulary
from sgg_eval.metrics.engine import EvalOptions, evaluate

C_OBJ, C_PRED = 150, 50


def _pool(rng, n_pool: int, task: str, n_det: int):
    images = []
    for i in range(n_pool):
        n = 12
        xy = rng.integers(0, 500, size=(n, 2))
        boxes = np.column_stack([xy, xy + rng.integers(10, 200, size=(n, 2))]).astype(np.float32)
        labels = rng.integers(1, C_OBJ + 1, size=n)
        m = 6
        s = rng.integers(0, n, size=m)
        rels = np.column_stack([s, (s + rng.integers(1, n, size=m)) % n, rng.integers(1, C_PRED + 1, size=m)])
        gt = GTImage(i, 800, 600, boxes, labels, rels)
        if task == "sgdet":
            q = n_det
            pb = np.concatenate([boxes + rng.normal(0, 4, size=boxes.shape).astype(np.float32),
                                 np.column_stack([xy2 := rng.integers(0, 500, size=(q - n, 2)),
                                                  xy2 + rng.integers(10, 200, size=(q - n, 2))]).astype(np.float32)])
            pl = np.concatenate([labels, rng.integers(1, C_OBJ + 1, size=q - n)])
        else:
            q, pb, pl = n, boxes, labels
        pairs = np.array([(a, b) for a in range(q) for b in range(q) if a != b])
        logits = rng.normal(size=(len(pairs), C_PRED + 1)).astype(np.float32)
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        images.append((gt, PredImage(i, pb, pl, rng.random(q).astype(np.float32), pairs, probs.astype(np.float32))))
    return images


def _stream(pool, n_images):
    for i in range(n_images):
        yield pool[i % len(pool)]


def _read_floor(pool, n_images) -> float:
    t = time.perf_counter()
    acc = 0.0
    for _, pred in _stream(pool, n_images):
        acc += float(pred.rel_scores.max(axis=1)[0])
    return time.perf_counter() - t


def _suite(pool, n_images, task) -> float:
    vocab = Vocabulary(tuple(f"o{i}" for i in range(C_OBJ)), tuple(f"p{i}" for i in range(C_PRED)))
    t = time.perf_counter()
    res = evaluate(_stream(pool, n_images), vocab, EvalOptions(task=task, order="score"),
                   triplet_counts=np.zeros((C_OBJ + 1, C_OBJ + 1, C_PRED + 1), dtype=np.int64),
                   num_pairs=np.arange(C_PRED + 1), zeroshot=np.array([[1, 2, 3]]), zeroshot_source="bench")
    assert res["counts"]["images_evaluated"] == n_images
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--predcls-images", type=int, default=26446)
    ap.add_argument("--sgdet-images", type=int, default=1000, help="SGDet subset (80 detections = 6,320 pairs each)")
    ap.add_argument("--pool", type=int, default=256)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'task':8} {'images':>7} {'suite img/s':>12} {'floor img/s':>12} {'suite/floor':>12}")
    for task, n, det in (("predcls", args.predcls_images, 12), ("sgdet", args.sgdet_images, 80)):
        pool = _pool(rng, args.pool if task == "predcls" else min(args.pool, 64), task, det)
        floor = _read_floor(pool, n)
        suite = _suite(pool, n, task)
        print(f"{task:8} {n:>7} {n / suite:>12.0f} {n / floor:>12.0f} {suite / floor:>11.1f}x")
    if args.sgdet_images:
        print(f"SGDet at VG-test scale (26,446 images), extrapolated: {26446 * suite / args.sgdet_images:.0f} s")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
