"""Shared helpers: random GT/prediction images including the awkward cases (empty images, duplicates)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # test helper modules (vg150_fixture)

from sgg_eval.data.types import GTImage, PredImage, Vocabulary  # noqa: E402

FULL = os.environ.get("SGG_EVAL_FULL") == "1"


def small_vocab(n_obj: int = 6, n_pred: int = 4) -> Vocabulary:
    return Vocabulary(tuple(f"obj{i}" for i in range(1, n_obj + 1)), tuple(f"pred{i}" for i in range(1, n_pred + 1)))


def random_gt(rng: np.random.Generator, vocab: Vocabulary, image_id: int, max_objects: int = 6) -> GTImage:
    n = int(rng.integers(0, max_objects + 1))
    xy = rng.integers(0, 80, size=(n, 2))
    wh = rng.integers(1, 40, size=(n, 2))
    boxes = np.column_stack([xy, xy + wh]).astype(np.float32)
    labels = rng.integers(1, vocab.num_objects + 1, size=n)
    m = int(rng.integers(0, 2 * n + 1)) if n >= 2 else 0
    rels = np.zeros((m, 3), dtype=np.int64)
    if m:
        s = rng.integers(0, n, size=m)
        o = (s + rng.integers(1, n, size=m)) % n
        rels = np.column_stack([s, o, rng.integers(1, vocab.num_predicates + 1, size=m)])
        if m > 1 and rng.random() < 0.5:
            rels[-1] = rels[0]  # duplicate row
    return GTImage(image_id, 120, 120, boxes, labels, rels)


def random_pred(rng: np.random.Generator, vocab: Vocabulary, image_id: int, dtype=np.float32) -> PredImage:
    q = int(rng.integers(0, 6))
    xy = rng.integers(0, 80, size=(q, 2))
    boxes = np.column_stack([xy, xy + rng.integers(1, 40, size=(q, 2))]).astype(np.float32)
    pairs = np.array([(i, j) for i in range(q) for j in range(q) if i != j], dtype=np.int64).reshape(-1, 2)
    scores = rng.random((len(pairs), vocab.num_predicates + 1)).astype(dtype)
    return PredImage(image_id, boxes, rng.integers(1, vocab.num_objects + 1, size=q), rng.random(q), pairs, scores)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
