"""Ranks of a whole block of images at once are exactly the per-image ranks (issue 11, batched evaluation).

``ranks.image_ranks`` is itself checked against the loop references of ``reference_metrics.py``
(``test_metrics_reference.py``); here every family's integer ranks of ``block_ranks`` must equal it, image
by image, on random images with the documented edge cases (duplicate GT rows, two predicates on one pair,
same-label objects, IoU exactly 0.5, ties, images without any predicted pair, duplicate predicted pairs).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_case, small_vocab
from reference_ranks import image_ranks

from sgg_eval.arrays.rowwise import row_max
from sgg_eval.core import tuning
from sgg_eval.data import batch_checks
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.metrics.ranking.block_ranks import block_ranks
from sgg_eval.metrics.ranking.candidates import CandidateBlock, ImageScores, PairPredicates, prepare, prepare_block
from sgg_eval.metrics.ranking.ng_top import nth_largest

VOCAB = small_vocab(6, 5)
FIELDS = (
    "predicates",
    "gc",
    "pair",
    "imr",
    "ng",
    "gt_pair",
    "per_predicate",
    "triplet",
    "predicate_rank",
    "top_predicate",
)


def _with_duplicate_pairs(rng, pred):
    """Repeat a few predicted pairs with other scores: files may hold the same index pair twice."""
    if len(pred.pairs) < 2 or rng.random() < 0.5:
        return pred
    extra = rng.integers(0, len(pred.pairs), size=2)
    pred.pairs = np.concatenate([pred.pairs, pred.pairs[extra]])
    scores = rng.random((2, pred.rel_scores.shape[1])).astype(np.float32)
    pred.rel_scores = np.concatenate([pred.rel_scores, scores / scores.sum(axis=1, keepdims=True)])
    return pred


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
@pytest.mark.parametrize("order,score_kind", [("score", "probabilities"), ("stored", "ranked")])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_block_ranks_equal_image_ranks(task, order, score_kind, seed):
    rng = np.random.default_rng(100 + seed)
    opts = EvalOptions(task=task, order=order, score_kind=score_kind, ng_limit=int(rng.choice([3, 100])))
    gts, cands = [], []
    for i in range(60):
        gt, pred = random_case(rng, VOCAB, task, i, ties=bool(seed % 2 == 0), max_objects=int(rng.choice([4, 9])))
        if len(gt.rels) == 0:
            continue  # images without GT rows are skipped before ranking
        gts.append(gt)
        cands.append(prepare(gt, _with_duplicate_pairs(rng, pred), opts, ""))
    families = {"gt_pair_family": task != "sgdet", "triplet_family": task != "sgdet"}
    batch = block_ranks(gts, cands, ng_limit=opts.ng_limit, **families).images()
    alone = [block_ranks([g], [c], ng_limit=opts.ng_limit, **families).images()[0] for g, c in zip(gts, cands)]
    assert len(batch) == len(gts)
    for gt, cand, got in [*zip(gts, cands, batch), *zip(gts, cands, alone)]:  # a block, and one image at a time
        want = image_ranks(gt.boxes, gt.labels, gt.rels, cand, ng_limit=opts.ng_limit, **families)
        assert got.num_gt_objects == want.num_gt_objects and got.matched_gt_objects == want.matched_gt_objects
        for name in FIELDS:
            a, b = getattr(got, name), getattr(want, name)
            assert (a is None) == (b is None), (name, gt.image_id)
            if a is not None:
                np.testing.assert_array_equal(a, b, err_msg=f"{name}, image {gt.image_id}")


def test_block_ranks_of_one_image_and_of_images_without_pairs():
    rng = np.random.default_rng(7)
    opts = EvalOptions(task="sgdet", score_kind="probabilities")
    cases = [random_case(rng, VOCAB, "sgdet", i) for i in range(40)]
    cases = [(g, p) for g, p in cases if len(g.rels)]
    empty = [(g, p) for g, p in cases if len(p.pairs) == 0]
    assert empty  # the strict protocol ranks images without any predicted pair: every row a miss
    for block in (cases[:1], empty, cases):
        cands = [prepare(g, p, opts, "") for g, p in block]
        for (g, _), cand, got in zip(
            block, cands, block_ranks([g for g, _ in block], cands, gt_pair_family=False, triplet_family=False).images()
        ):
            want = image_ranks(g.boxes, g.labels, g.rels, cand, gt_pair_family=False, triplet_family=False)
            for name in FIELDS:
                if getattr(want, name) is not None:
                    np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)


@pytest.mark.parametrize("ng_limit", [1, 5, 100])
def test_block_ng_top_on_coarse_scores_zeros_and_negative_zero(ng_limit):
    """Scores on a coarse grid (many exact ties, across pairs and predicates), exact zeros and -0.0 (a valid
    probability that must tie with 0.0): the block's NG top equals each image's own."""
    rng = np.random.default_rng(ng_limit)
    opts = EvalOptions(task="sgcls", score_kind="probabilities", ng_limit=ng_limit)
    gts, cands = [], []
    for i in range(50):
        gt, pred = random_case(rng, VOCAB, "sgcls", i, max_objects=9)
        if len(gt.rels) == 0:
            continue
        grid = rng.integers(0, 4, size=pred.rel_scores.shape).astype(np.float32) / 4
        grid[rng.random(grid.shape) < 0.2] = -0.0
        pred.rel_scores = grid
        pred.obj_scores = rng.integers(1, 3, size=len(pred.obj_scores)).astype(np.float32) / 2
        gts.append(gt)
        cands.append(prepare(gt, pred, opts, ""))
    for gt, cand, got in zip(gts, cands, block_ranks(gts, cands, ng_limit=ng_limit).images()):
        want = image_ranks(gt.boxes, gt.labels, gt.rels, cand, ng_limit=ng_limit)
        np.testing.assert_array_equal(got.ng, want.ng, err_msg=f"image {gt.image_id}")


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
@pytest.mark.parametrize(
    "order,score_kind",
    [("score", "probabilities"), ("stored", "probabilities"), ("score", "logits"), ("stored", "ranked")],
)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_prepare_block_equals_prepare_image_by_image(task, order, score_kind, dtype):
    """Every field of every candidate list, and the concatenated scores, as ``prepare`` makes them one image
    at a time: images without pairs, ties (the first maximum wins), float16/64 scores, logits."""
    rng = np.random.default_rng(len(task) + len(order) + len(score_kind))
    opts = EvalOptions(task=task, order=order, score_kind=score_kind)
    images = []
    for i in range(30):
        gt, pred = random_case(rng, VOCAB, task, i)
        if score_kind == "logits":
            pred.rel_scores = rng.normal(size=pred.rel_scores.shape).astype(np.float32)
        pred.rel_scores = pred.rel_scores.astype(dtype)
        images.append((gt, pred))
    got = prepare_block(images, opts, "f")
    want = CandidateBlock.of([prepare(gt, pred, opts, "f") for gt, pred in images])
    for name in (
        "n_obj",
        "n_pairs",
        "boxes",
        "labels",
        "obj_scores",
        "pairs",
        "probs",
        "gc_pairs",
        "predicted",
        "pair_best",
    ):
        a, b = getattr(got, name), getattr(want, name)
        if name == "predicted":
            a, b = a.all(), b.all()
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a, b, err_msg=name)


def test_prepare_block_refuses_detector_pairs_as_predcls_like_prepare():
    rng = np.random.default_rng(5)
    opts = EvalOptions(task="predcls")
    images = [random_case(rng, VOCAB, "predcls", i) for i in range(6)]
    gt, pred = images[3]
    pred.pairs = pred.pairs.copy()
    if len(pred.pairs) == 0:
        pytest.skip("the random image has no pair")
    pred.pairs[0, 0] = len(gt.labels)  # an object the GT does not have
    with pytest.raises(Exception) as block_error:
        prepare_block(images, opts, "f")
    with pytest.raises(Exception) as image_error:
        prepare(gt, pred, opts, "f")
    assert str(block_error.value) == str(image_error.value)


@pytest.mark.parametrize("ng_limit", [2, 7, 40])
@pytest.mark.parametrize("uneven", [False, True])
def test_block_ng_top_with_spread_object_scores(ng_limit, uneven):
    """Every ordered pair of 6 (sometimes 8) objects with random object scores: the pair bests bound the top
    loosely, so the block finds each image's exact n-th largest entry from a padded [image, entry] matrix; the
    ranks still equal each image's own, with ties from coarse scores."""
    rng = np.random.default_rng(ng_limit + 10 * uneven)
    vocab = small_vocab(6, 40)  # many predicates per pair: entries far outnumber the pair bests
    opts = EvalOptions(task="sgcls", score_kind="probabilities", ng_limit=ng_limit)
    gts, cands = [], []
    for i in range(150):
        gt, pred = random_case(rng, vocab, "sgcls", i, max_objects=9)
        n = 6 if not uneven or i % 7 else 8
        if len(gt.rels) == 0 or len(pred.labels) < n:
            continue
        keep = np.arange(n)
        a, b = np.nonzero(~np.eye(n, dtype=bool))
        pred.boxes, pred.labels = pred.boxes[keep], pred.labels[keep]
        pred.obj_scores = rng.random(n).astype(np.float32)
        pred.pairs = np.column_stack([a, b]).astype(np.int64)
        pred.rel_scores = (rng.integers(0, 8, size=(len(a), 41)) / 8).astype(np.float32)
        gt.rels = gt.rels[(gt.rels[:, :2] < n).all(axis=1)]
        if len(gt.rels) == 0:
            continue
        gts.append(gt)
        cands.append(prepare(gt, pred, opts, ""))
    assert len(gts) > 10
    for gt, cand, got in zip(gts, cands, block_ranks(gts, cands, ng_limit=ng_limit).images()):
        want = image_ranks(gt.boxes, gt.labels, gt.rels, cand, ng_limit=ng_limit)
        np.testing.assert_array_equal(got.ng, want.ng, err_msg=f"image {gt.image_id}")


@pytest.mark.parametrize("width", [2, 3, 6, 51])
def test_lazy_pair_predicates_equal_the_first_maximum(width):
    """The lazy :class:`PairPredicates` of one image (predicates derived from each row's maximum) against a
    plain argmax over columns 1.., on coarse scores full of ties, zeros and -0.0."""
    rng = np.random.default_rng(width)
    for n in (1, 2, 7, 300):
        probs = rng.integers(0, 3, size=(n, width)).astype(np.float32) / 2
        probs[rng.random(probs.shape) < 0.2] = -0.0
        want = np.array([1 + max(range(width - 1), key=lambda c: (row[c + 1], -c)) for row in probs])
        lazy = PairPredicates(probs=probs, row_max=row_max(probs, 1))
        some = rng.integers(0, n, size=5)
        np.testing.assert_array_equal(lazy.at(some), want[some])
        for c in range(1, width):
            np.testing.assert_array_equal(lazy.equal_to(c), want == c, err_msg=f"predicate {c}")
        np.testing.assert_array_equal(lazy.all(), want)


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
@pytest.mark.parametrize("order", ["score", "stored"])
@pytest.mark.parametrize("coarse", [False, True])
@pytest.mark.parametrize("protocol", ["reference", "strict"])
def test_blocks_with_scores_kept_apart_equal_image_ranks(task, order, coarse, protocol):
    """Blocks whose scores stay image by image (``prepare_block(apart=True)``, the SGDet path: predicates
    derived on demand from row maxima, per-image NG tops, ng-IMR matrices and IMR counts) rank every row as
    ``image_ranks`` does: blocks of one and of several images, coarse scores where several predicates tie
    for a pair's maximum (and -0.0), duplicate pairs, and (strict) images without any predicted pair."""
    rng = np.random.default_rng(len(task) + 10 * coarse + len(order) + 100 * (protocol == "strict"))
    opts = EvalOptions(task=task, order=order, protocol=protocol, ng_limit=int(rng.choice([3, 100])))
    families = {"gt_pair_family": task != "sgdet", "triplet_family": task != "sgdet"}
    images = []
    for i in range(80):
        gt, pred = random_case(rng, VOCAB, task, i, max_objects=9)
        if len(gt.rels) == 0 or (len(pred.pairs) == 0 and protocol == "reference"):
            continue
        if coarse:
            grid = rng.integers(0, 3, size=pred.rel_scores.shape).astype(np.float32) / 2
            grid[rng.random(grid.shape) < 0.2] = -0.0
            pred.rel_scores = grid
        images.append((gt, _with_duplicate_pairs(rng, pred)))
    assert len(images) > 20 and any(len(p.pairs) for _, p in images)
    checked = 0
    for size in (1, 7, len(images)):
        for lo in range(0, len(images), size):
            chunk = images[lo : lo + size]
            block = prepare_block(chunk, opts, "", apart=True)
            if not any(len(p.pairs) for _, p in chunk):
                continue  # nothing to keep apart: the plain path
            assert isinstance(block.probs, ImageScores) and block.predicted._values is None
            got = block_ranks([g for g, _ in chunk], block, ng_limit=opts.ng_limit, **families).images()
            for (gt, pred), ranks in zip(chunk, got):
                want = image_ranks(
                    gt.boxes, gt.labels, gt.rels, prepare(gt, pred, opts, ""), ng_limit=opts.ng_limit, **families
                )
                for name in FIELDS:
                    a, b = getattr(ranks, name), getattr(want, name)
                    assert (a is None) == (b is None), name
                    if a is not None:
                        np.testing.assert_array_equal(a, b, err_msg=f"{name}, image {gt.image_id}, block of {size}")
                checked += 1
    assert checked > 60


@pytest.mark.parametrize("block_bytes", [1, 7 * 51 * 4, tuning.BLOCK_BYTES])
def test_apart_blocks_rank_with_the_row_maxima_the_reader_kept(monkeypatch, block_bytes):
    """Row maxima kept by validation (``batch_is_valid(keep_row_maxima=True)``, as evaluation reads an
    eval_results file, a block of rows at a time) are the very arrays a block ranks with, and give the ranks of
    maxima computed here; scores replaced since (PKO's ``dataclasses.replace``, or assigned) are never paired
    with the old maxima."""
    monkeypatch.setattr(tuning, "MAXIMA_ROWS", 1)  # the random images are small
    monkeypatch.setattr(tuning, "BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(21)
    opts = EvalOptions(task="sgdet", ng_limit=5)
    images = [
        case
        for case in (random_case(rng, VOCAB, "sgdet", i, max_objects=9) for i in range(40))
        if len(case[0].rels) and len(case[1].pairs)
    ]
    gts = [g for g, _ in images]
    computed = block_ranks(gts, prepare_block(images, opts, "", apart=True), ng_limit=5).images()
    assert batch_checks.batch_is_valid(gts, [p for _, p in images], VOCAB, probabilities=True, keep_row_maxima=True)
    block = prepare_block(images, opts, "", apart=True)
    for (_, pred), used in zip(images, block.probs.row_max):
        assert used is pred.row_maxima() is not None
        np.testing.assert_array_equal(used, pred.rel_scores[:, 1:].max(axis=1))
    for got, want in zip(block_ranks(gts, block, ng_limit=5).images(), computed):
        for name in FIELDS:
            a, b = getattr(got, name), getattr(want, name)
            assert (a is None) == (b is None), name
            if a is not None:
                np.testing.assert_array_equal(a, b, err_msg=name)
    gt, pred = images[0]
    other = pred.rel_scores[:, ::-1].copy()
    assert replace(pred, rel_scores=other).row_maxima() is None
    pred.rel_scores = other
    assert pred.row_maxima() is None
    np.testing.assert_array_equal(
        prepare_block([(gt, pred)], opts, "", apart=True).probs.row_max[0], other[:, 1:].max(axis=1)
    )


def test_image_scores_index_like_the_concatenated_matrix():
    """Rows, a column slice and one element per row of block pairs in any order (repeats too), across images
    of which some have no pair, against the concatenation; and the predicates derived from them."""
    rng = np.random.default_rng(3)
    probs = [rng.integers(0, 3, size=(n, 6)).astype(np.float32) / 2 for n in (4, 0, 1, 7, 0, 3)]
    scores, whole = ImageScores(probs), np.concatenate(probs)
    assert len(scores) == len(whole) and scores.shape == whole.shape
    pairs = rng.integers(0, len(whole), size=40)
    cols = rng.integers(0, 6, size=40)
    np.testing.assert_array_equal(scores[pairs], whole[pairs])
    np.testing.assert_array_equal(scores[pairs, 1:], whole[pairs, 1:])
    np.testing.assert_array_equal(scores[pairs, cols], whole[pairs, cols])
    assert scores[np.zeros(0, np.int64), 1:].shape == (0, 5)
    want = 1 + whole[:, 1:].argmax(axis=1)
    lazy = PairPredicates(probs=scores)
    np.testing.assert_array_equal(lazy.at(pairs), want[pairs])
    for c in range(1, 6):
        np.testing.assert_array_equal(lazy.equal_to(c), want == c, err_msg=f"predicate {c}")
    np.testing.assert_array_equal(lazy.all(), want)


@pytest.mark.parametrize("images,predicates", [(40, 5), (1400, 50)])
def test_within_predicate_positions_equal_a_loop(images, predicates):
    """IMR's count of earlier GC candidates with the same predicate, per queried pair, against a loop over
    each image's GC list; 1,400 images of 50 predicates overflow the 16-bit sort key (the general sort)."""
    from sgg_eval.metrics.ranking.block_ranks import _within_predicate

    rng = np.random.default_rng(images)
    n_pairs = rng.integers(0, 6, size=images)
    pair_img = np.repeat(np.arange(images), n_pairs)
    starts = np.cumsum(n_pairs) - n_pairs
    gc_pair = np.concatenate([s + rng.permutation(n) for s, n in zip(starts, n_pairs)]).astype(np.int64)
    gc_pos = np.empty(len(gc_pair), dtype=np.int64)
    gc_pos[gc_pair] = np.arange(len(gc_pair)) - starts[pair_img[gc_pair]]
    preds = rng.integers(1, predicates + 1, size=len(gc_pair))
    queries = rng.integers(0, len(gc_pair), size=60)
    want = [
        sum(1 for q in gc_pair[starts[pair_img[j]] : starts[pair_img[j]] + gc_pos[j]] if preds[q] == preds[j])
        for j in queries
    ]
    got = _within_predicate(queries, gc_pair, gc_pos, PairPredicates(preds), pair_img)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("size", [101, 399, 400, 401, 6320])
def test_nth_largest_equals_sorting(size):
    """Against a sort (NaN as the largest, as np.partition places it): coarse values with many ties, -0.0,
    NaNs, values in random, descending and ascending order."""
    rng = np.random.default_rng(size)
    for trial in range(12):
        values = (rng.integers(0, 5, size) / 4 if trial % 2 else rng.random(size)).astype(np.float32)
        if trial % 3 == 0:
            values[rng.integers(size, size=5)] = -0.0
        if trial % 4 == 0:
            values[rng.integers(size, size=3)] = np.nan
        if trial % 6 == 1:  # the reference's pair order: bests descending (the bound is then exact)
            values = np.sort(values)[::-1].copy()
        if trial % 6 == 5:
            values = np.sort(values)
        for n in (1, 3, 100):
            want = sorted(values.tolist(), key=lambda v: (math.isnan(v), v))[-n]
            got = nth_largest(values, n)
            assert (math.isnan(want) and np.isnan(got)) or got == want, (trial, n, got, want)
