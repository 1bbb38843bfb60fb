"""Shared helpers: random GT/prediction images including the awkward cases (empty images, duplicates)."""

from __future__ import annotations

import os
import sys

# as sgg_eval.retrieval.training sets it before torch starts: here torch may be imported first (by a test module)
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")
# Under pytest-xdist each worker (and what it starts: DVC stages, `make s2g-example`) takes its share of the cores.
# Torch and BLAS otherwise start a thread per core in every worker: on 2 cores beside a busy worker, S2G's training
# took 132 s with 2 threads and 78 s with 1 (tests/test_s2g_world.py, measured). Set before numpy or torch loads.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, str(max(1, (os.cpu_count() or 1) // _WORKERS)))

import numpy as np  # noqa: E402  (after the thread counts above)
import pytest  # noqa: E402

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
    return GTImage(image_id, 120, 120, boxes, labels, random_rels(rng, n, m, vocab.num_predicates, 0.5))


def random_rels(rng: np.random.Generator, n: int, m: int, num_predicates: int, dup_prob: float) -> np.ndarray:
    """``m`` relation rows among ``n`` objects (no self-relation); the last row repeats the first with
    probability ``dup_prob`` (a duplicate GT row)."""
    if not m:
        return np.zeros((0, 3), dtype=np.int64)
    s = rng.integers(0, n, size=m)
    o = (s + rng.integers(1, n, size=m)) % n
    rels = np.column_stack([s, o, rng.integers(1, num_predicates + 1, size=m)])
    if m > 1 and rng.random() < dup_prob:
        rels[-1] = rels[0]  # duplicate row
    return rels


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


def random_case(
    rng: np.random.Generator, vocab: Vocabulary, task: str, image_id: int, *, ties: bool = True, max_objects: int = 6
):
    """A (GT, prediction) pair for ``task`` with the documented edge cases mixed in at random.

    GT: duplicate rows, two predicates on one pair, same-label objects, sometimes no relation at all.
    Prediction: PredCls/SGCls objects are the GT objects (SGCls labels sometimes wrong); SGDet boxes are
    copies, boxes with IoU exactly 0.5 or just below, and false detections; scores have ties; sometimes
    there is no predicted pair. ``max_objects`` above 6 gives crowded images where K cut-offs bind.
    """
    n = int(rng.integers(1, max_objects + 1))
    xy = rng.integers(0, 60, size=(n, 2))
    wh = rng.integers(2, 30, size=(n, 2))
    boxes = np.column_stack([xy, xy + wh]).astype(np.float32)
    labels = rng.integers(1, min(4, vocab.num_objects) + 1, size=n)  # few labels: same-label objects are common
    m = int(rng.integers(0, 2 * n + 1)) if n >= 2 and rng.random() > 0.08 else 0
    rels = random_rels(rng, n, m, vocab.num_predicates, 0.4)
    if m > 2 and rng.random() < 0.4:
        rels[-2, :2] = rels[0, :2]  # a second predicate on the same pair
        rels[-2, 2] = rels[0, 2] % vocab.num_predicates + 1
    gt = GTImage(image_id, 100, 100, boxes, labels, rels)

    if task == "sgdet":
        pboxes, plabels = [], []
        for b, lab in zip(boxes, labels):
            w = b[2] - b[0] + 1
            kind = rng.integers(0, 5)
            if kind == 0:
                pboxes.append(b.copy())
            elif kind == 1:  # IoU exactly 0.5 (inclusive areas W*H vs 2W*H)
                pboxes.append(np.array([b[0], b[1], b[0] + 2 * w - 1, b[3]], dtype=np.float32))
            elif kind == 2:  # IoU just below 0.5
                pboxes.append(np.array([b[0], b[1], b[0] + 2 * w, b[3]], dtype=np.float32))
            elif kind == 3:
                j = b + rng.integers(-3, 4, size=4).astype(np.float32)  # jittered, still x1 <= x2
                pboxes.append(np.concatenate([j[:2], np.maximum(j[2:], j[:2])]))
            else:
                continue  # missed object
            plabels.append(lab if rng.random() < 0.8 else int(rng.integers(1, vocab.num_objects + 1)))
        for _ in range(int(rng.integers(0, 3))):  # false detections
            xy2 = rng.integers(0, 60, size=2)
            pboxes.append(np.concatenate([xy2, xy2 + rng.integers(2, 30, size=2)]).astype(np.float32))
            plabels.append(int(rng.integers(1, vocab.num_objects + 1)))
        order = rng.permutation(len(pboxes))
        pboxes = np.array(pboxes, dtype=np.float32).reshape(-1, 4)[order]
        plabels = np.array(plabels, dtype=np.int64)[order]
    else:
        pboxes, plabels = boxes.copy(), labels.copy()
        if task == "sgcls":
            wrong = rng.random(n) < 0.2
            plabels[wrong] = rng.integers(1, vocab.num_objects + 1, size=int(wrong.sum()))
    q = len(pboxes)
    obj_scores = (rng.integers(1, 5, size=q) / 4 if ties else rng.random(q)).astype(np.float32)
    if task == "predcls":
        obj_scores = np.ones(q, dtype=np.float32)
    all_pairs = np.array([(i, j) for i in range(q) for j in range(q) if i != j], dtype=np.int64).reshape(-1, 2)
    keep = rng.random(len(all_pairs)) < 0.8 if rng.random() > 0.1 else np.zeros(len(all_pairs), dtype=bool)
    pairs = all_pairs[keep][rng.permutation(int(keep.sum()))]
    c = vocab.num_predicates + 1
    raw = rng.integers(0, 6, size=(len(pairs), c)).astype(np.float64) if ties else rng.random((len(pairs), c))
    raw = raw + 0.01
    probs = (raw / raw.sum(axis=1, keepdims=True)).astype(np.float32)
    pred = PredImage(image_id, pboxes, plabels, obj_scores, pairs, probs)
    return gt, pred


@pytest.fixture(scope="module")
def fuzz_seeds(tmp_path_factory):
    """The fuzzer's seed world (``tests/fuzz/seeds.py``), written once per module."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fuzz"))
    from seeds import write_seeds

    return write_seeds(tmp_path_factory.mktemp("fuzzseeds") / "s")


@pytest.fixture
def case(fuzz_seeds, tmp_path, monkeypatch):
    """A copy of the fuzzer's seed world to change, the working folder, with an empty ``out/``."""
    import shutil

    folder = tmp_path / "case"
    shutil.copytree(fuzz_seeds, folder)
    (folder / "out").mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture(scope="session")
def reproduced_base(tmp_path_factory):
    """The quick start's `make repro` in a fresh clone at the tiny scale, built once per session and shared by
    every xdist worker (tests/reproduced.py); copy it with ``reproduced.copy_of`` before changing anything."""
    from reproduced import reproduced, shared_root

    return reproduced(shared_root(tmp_path_factory.getbasetemp()))


def short_head(monkeypatch, skipped: int) -> None:
    """PGSG's record with a head of ``skipped`` images left out, not its 5,000 (a test's split is small)."""
    from dataclasses import replace

    from sgg_eval.core import protocols

    monkeypatch.setitem(protocols.BY_NAME, "pgsg", replace(protocols.BY_NAME["pgsg"], skips_first=skipped))


# The modules that take minutes (each runs the pipeline or trains a model), started first, longest first, so that
# `make test`'s workers (pytest-xdist, --dist loadfile: a module per worker; --no-loadscope-reorder keeps this
# order) end together rather than one waiting on the last. The first worker builds the shared reproduced project
# (tests/reproduced.py, about 2.5 minutes) and is given the third module at once (xdist gives a worker its next module
# while two of its tests are left); the second trains S2G models, then takes the fourth, which runs its own
# pipelines: neither waits for the build (with a module that needed it fourth, the second worker sat idle for 61 s).
# test_service takes about 4 minutes, most of them waiting on the service it started: last in name order, it ran
# alone for the final 110 s of the suite while the other worker had finished.
SLOWEST_FIRST = ("test_readme_real_data", "test_s2g_world", "test_pipeline", "test_pipeline_real_formats",
                 "test_readme_queue", "test_readme", "test_params_tracked", "test_readme_other_datasets",
                 "test_pipeline_psg_real", "test_readme_experiments", "test_service", "test_bench",
                 "test_dvc_team")  # fmt: skip


def pytest_collection_modifyitems(items):
    """The slowest modules first (:data:`SLOWEST_FIRST`); the rest, and every module's own tests, keep their order."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__, len(SLOWEST_FIRST)))
