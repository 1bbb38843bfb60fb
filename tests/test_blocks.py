"""Evaluation in blocks on several processes: the document does not depend on the number of processes, and
errors raised in a worker reach the user with their file, image and field (issue 11)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_case, small_vocab

from sgg_eval.core import tuning
from sgg_eval.core.errors import InputError
from sgg_eval.data.stats import compute_stats
from sgg_eval.metrics.engine import evaluate
from sgg_eval.metrics.exact_sums import Rounded
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.metrics.rank_records import BlockRanks
from sgg_eval.metrics.ranking import blocks
from sgg_eval.metrics.reduce import Accumulator

VOCAB = small_vocab(6, 5)


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(tuning, "BLOCK_IMAGES", 7)  # 60 images: 9 blocks, a short last one


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
def test_the_document_is_identical_for_any_number_of_jobs(small_blocks, task):
    rng = np.random.default_rng(11)
    cases = [random_case(rng, VOCAB, task, i) for i in range(60)]
    stats = compute_stats([g for g, _ in cases[:30]], VOCAB, [g for g, _ in cases])
    docs = [
        json.dumps(
            evaluate(
                cases,
                VOCAB,
                EvalOptions(task=task, score_kind="probabilities"),
                triplet_counts=stats.triplet_counts,
                num_pairs=stats.num_pairs,
                zeroshot=stats.zeroshot_triplets,
                zeroshot_source="unit",
                jobs=jobs,
            ),
            sort_keys=True,
        )
        for jobs in (1, 2, 3)
    ]
    assert docs[0] == docs[1] == docs[2]
    assert json.loads(docs[0])["counts"]["images_input"] == 60


def test_merging_accumulators_adds_every_sum():
    rng = np.random.default_rng(3)
    cases = [random_case(rng, VOCAB, "predcls", i) for i in range(30)]
    opts = EvalOptions(task="predcls", score_kind="probabilities")
    whole, _ = blocks.rank_block(cases, VOCAB, opts, "", None, None)
    first, _ = blocks.rank_block(cases[:13], VOCAB, opts, "", None, None)
    second, _ = blocks.rank_block(cases[13:], VOCAB, opts, "", None, None)
    first.merge(second)
    assert first.images == whole.images == 30 - sum(len(g.rels) == 0 or len(p.pairs) == 0 for g, p in cases)
    assert first.families == whole.families
    _assert_same_sums(first, whole)  # the sums are exact (arrays.exact_sum), so the split changes no bit
    with pytest.raises(ValueError):
        first.merge(Accumulator(VOCAB.num_predicates + 1))


def test_an_error_in_a_worker_names_file_image_and_field(small_blocks):
    rng = np.random.default_rng(5)
    cases = [random_case(rng, VOCAB, "predcls", i) for i in range(40)]
    gt, pred = next((g, p) for g, p in cases[20:] if len(g.rels) and len(p.pairs))
    pred.pairs = pred.pairs.copy()
    pred.pairs[0, 0] = len(gt.labels) + 3  # an index past the GT objects: an SGDet file evaluated as PredCls
    with pytest.raises(InputError) as err:
        evaluate(cases, VOCAB, EvalOptions(task="predcls", score_kind="probabilities"), source="m.h5", jobs=2)
    assert err.value.path == "m.h5" and err.value.image_id == gt.image_id and err.value.field == "pairs"


class ListSource:
    """An ImageSource over a list that records which process read which block."""

    def __init__(self, cases, bad_position=None):
        self.cases, self.count, self.bad = cases, len(cases), bad_position

    def read(self, start, stop):
        for i in range(start, min(stop, self.count)):
            if i == self.bad:
                raise InputError(
                    "unreadable scores", path="m.pytorch", image_id=self.cases[i][0].image_id, field="pred_rel_scores"
                )
            yield self.cases[i]


@pytest.mark.parametrize("task", ["predcls", "sgdet"])
def test_workers_reading_their_own_blocks_give_the_same_document(small_blocks, task):
    rng = np.random.default_rng(23)
    cases = [random_case(rng, VOCAB, task, i) for i in range(45)]
    opts = EvalOptions(task=task, score_kind="probabilities")
    stream = json.dumps(evaluate(iter(cases), VOCAB, opts, jobs=1), sort_keys=True)
    for jobs in (1, 2, 3):
        done = []
        doc = evaluate(ListSource(cases), VOCAB, opts, jobs=jobs, progress=done.append)
        assert json.dumps(doc, sort_keys=True) == stream
        size = blocks.block_images(task)
        assert done == list(range(size, 45, size)) + [45]  # after every block, in order


@pytest.mark.parametrize("task_images", [1, 7, 20, 10**6])
def test_blocks_read_in_tasks_of_any_size_give_the_same_document(monkeypatch, task_images):
    """Blocks are read and ranked in tasks of several (``TASK_IMAGES``), the last ones alone; the document
    (block by block from a stream: one block per task) and the progress after every block do not depend on
    it, on 1 or 2 processes."""
    rng = np.random.default_rng(41)
    cases = [random_case(rng, VOCAB, "sgdet", i) for i in range(45)]
    opts = EvalOptions(task="sgdet", score_kind="probabilities")
    monkeypatch.setattr(tuning, "BLOCK_IMAGES", 24)  # SGDet blocks of 3 images: 15 blocks
    stream = json.dumps(evaluate(iter(cases), VOCAB, opts, jobs=1), sort_keys=True)
    monkeypatch.setattr(tuning, "TASK_IMAGES", task_images)
    for jobs in (1, 2):
        done = []
        doc = evaluate(ListSource(cases), VOCAB, opts, jobs=jobs, progress=done.append)
        assert json.dumps(doc, sort_keys=True) == stream
        assert done == list(range(3, 46, 3))


def test_tasks_group_blocks_and_leave_the_last_ones_alone(monkeypatch):
    monkeypatch.setattr(tuning, "TASK_IMAGES", 128)
    spans = [(i * 32, i * 32 + 32) for i in range(11)]
    sizes = [len(t) for t in blocks.tasks_of(spans, 32, 2)]
    assert sizes == [4, 3, 1, 1, 1, 1] and sum(blocks.tasks_of(spans, 32, 2), []) == spans
    assert [len(t) for t in blocks.tasks_of(spans, 32, 1)] == [4, 4, 3]
    assert [len(t) for t in blocks.tasks_of(spans, 256, 2)] == [1] * 11
    assert blocks.tasks_of([], 32, 2) == []


def test_a_reading_error_in_a_worker_names_file_image_and_field(small_blocks):
    rng = np.random.default_rng(29)
    cases = [random_case(rng, VOCAB, "predcls", i) for i in range(40)]
    with pytest.raises(InputError) as err:
        evaluate(
            ListSource(cases, bad_position=30), VOCAB, EvalOptions(task="predcls", score_kind="probabilities"), jobs=2
        )
    assert err.value.path == "m.pytorch" and err.value.image_id == cases[30][0].image_id
    assert err.value.field == "pred_rel_scores"


@pytest.mark.parametrize("task", ["predcls", "sgdet"])
def test_a_block_reduced_at_once_equals_its_images_added_one_by_one(task):
    """``Accumulator.add_many`` (segment sums over a block) against ``add`` image by image, every field."""
    from reference_ranks import image_ranks

    from sgg_eval.metrics.ranking.candidates import prepare

    rng = np.random.default_rng(31)
    cases = [
        c
        for c in (random_case(rng, VOCAB, task, i, max_objects=8) for i in range(80))
        if len(c[0].rels) and len(c[1].pairs)
    ]
    opts = EvalOptions(task=task, score_kind="probabilities")
    items = []
    for gt, pred in cases:
        ranks = image_ranks(
            gt.boxes,
            gt.labels,
            gt.rels,
            prepare(gt, pred, opts, ""),
            gt_pair_family=task != "sgdet",
            triplet_family=task != "sgdet",
        )
        zs = rng.random(len(gt.rels)) < 0.3
        items.append((ranks, zs, rng.integers(0, 5, size=len(gt.rels))))
    one_by_one, at_once = Accumulator(VOCAB.num_predicates), Accumulator(VOCAB.num_predicates)
    for r, zs, tc in items:
        one_by_one.add(r, zs, tc)
    ranks, zs, tc = zip(*items)
    at_once.add_many(BlockRanks.of(list(ranks)), np.concatenate(zs), np.concatenate(tc))
    assert at_once.families == one_by_one.families and at_once.images == len(cases)
    _assert_same_sums(at_once, one_by_one)


def _assert_same_sums(acc: Accumulator, other: Accumulator) -> None:
    """Every sum of ``acc`` equals ``other``'s bit for bit: the exact ones as read, and the counts."""
    skip = ("exact", "rounded", "sum_layout", "records", "subsets", "families")
    names = [n for n, v in vars(Accumulator).items() if isinstance(v, Rounded)] + [
        n for n in vars(acc) if n not in skip
    ]
    assert len(names) > 20
    assert set(acc.subsets) == set(other.subsets)
    for name in names:
        mine, theirs = getattr(acc, name), getattr(other, name)
        for key in mine if isinstance(mine, dict) else [None]:
            a, b = (mine[key], theirs[key]) if key is not None else (mine, theirs)
            np.testing.assert_array_equal(b, a, err_msg=f"{name} {key}")
    for name, sub in acc.subsets.items():
        _assert_same_sums(sub, other.subsets[name])


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
def test_large_images_ranked_with_their_scores_apart_give_the_same_document(monkeypatch, task):
    """Images above ``LARGE_IMAGE_PAIRS`` are ranked in runs of their own with their scores kept image by image;
    with the bound lowered so that large and small images alternate within blocks, the document equals the
    one where every image is ranked with the scores concatenated."""
    rng = np.random.default_rng(17)
    cases = [random_case(rng, VOCAB, task, i, max_objects=9) for i in range(60)]
    opts = EvalOptions(task=task, score_kind="probabilities")
    docs = []
    for bound in (10**9, 12):
        monkeypatch.setattr(tuning, "LARGE_IMAGE_PAIRS", bound)
        docs.append(json.dumps(evaluate(cases, VOCAB, opts), sort_keys=True))
    assert sum(len(p.pairs) > 12 for _, p in cases) > 10 and docs[0] == docs[1]


def test_runs_keep_large_and_small_images_apart_within_the_pair_limit(monkeypatch):
    monkeypatch.setattr(tuning, "LARGE_IMAGE_PAIRS", 10)
    sizes = [3, 4, 20, 30, 5, 11, 11, 11, 2, 0, 40]
    kept = [(None, type("P", (), {"pairs": np.zeros((n, 2))})()) for n in sizes]
    runs = [([len(p.pairs) for _, p in run], large) for run, large in blocks._by_pairs(kept, 25)]
    assert runs == [
        ([3, 4], False),
        ([20], True),
        ([30], True),
        ([5], False),
        ([11, 11], True),
        ([11], True),
        ([2, 0], False),
        ([40], True),
    ]
