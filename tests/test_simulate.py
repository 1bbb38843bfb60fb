"""The simulated VG150-like benchmark: determinism, labelling, and the long tail the paper reports."""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from sgg_eval.data.vg150_facts import vg150_facts
from sgg_eval.simulate.world import FIXED_NUM_PAIRS, SimParams, SimulatedWorld
from sgg_eval.stats import compute_stats


def _split(params, split):
    meta, n, images = SimulatedWorld(params).split(split)
    images = list(images)
    assert len(images) == n
    return meta, images


def test_deterministic_and_labelled_simulated():
    meta, a = _split(SimParams(seed=3, scale="tiny"), "test")
    _, b = _split(SimParams(seed=3, scale="tiny"), "test")
    _, c = _split(SimParams(seed=4, scale="tiny"), "test")
    assert meta.simulated and "SIMULATED" in meta.source and meta.extra["simulated"] is True
    assert all(np.array_equal(x.rels, y.rels) and np.array_equal(x.boxes, y.boxes) for x, y in zip(a, b))
    assert not all(np.array_equal(x.rels, y.rels) for x, y in zip(a, c))


def test_images_are_valid_and_vg_like():
    meta, images = _split(SimParams(scale="tiny"), "train")
    for im in images:
        im.validate(meta.vocab, "sim")
        assert len(im.rels) >= 1 and np.all(im.rels[:, 0] != im.rels[:, 1])
        assert np.all(im.boxes[:, 2] > im.boxes[:, 0]) and np.all(im.boxes[:, 3] > im.boxes[:, 1])
        assert np.all(im.boxes[:, 2] <= im.width - 1) and np.all(im.boxes[:, 3] <= im.height - 1)
    assert 10.5 < np.mean([len(im.labels) for im in images]) < 12.5
    assert 5.7 < np.mean([len(im.rels) for im in images]) < 6.7
    # duplicates and multi-predicate pairs exist, as in VG150's test split
    dup = sum(len(np.unique(im.rels, axis=0)) < len(im.rels) for im in images)
    multi = sum(len(np.unique(im.rels[:, :2], axis=0)) < len(np.unique(im.rels, axis=0)) for im in images)
    assert dup > 0 and multi > 0


def test_split_ids_are_disjoint():
    ids = [im.image_id for s in ("train", "val", "test") for im in _split(SimParams(scale="tiny"), s)[1]]
    assert len(ids) == len(set(ids))


def test_world_follows_paper_composable_pairs():
    world = SimulatedWorld(SimParams())
    names = world.vocab.predicate_classes
    sizes = {names[k]: len(p) for k, p in enumerate(world.pairs)}
    for name, n in FIXED_NUM_PAIRS.items():
        assert sizes[name] == n
    assert sizes["on"] > 4000
    # the six fixed tail predicates are the six with the fewest pairs, in the paper's order
    assert sorted(sizes, key=sizes.get)[:6] == list(FIXED_NUM_PAIRS)


def test_default_training_split_shows_the_long_tail():
    """Acceptance: n_c(on) in the thousands, n_c(flying in) = 2, frequencies correlate with VG150 (rho >= 0.9)."""
    meta, train = _split(SimParams(), "train")
    stats = compute_stats(train, meta.vocab)
    names = list(meta.vocab.predicate_classes)
    n_c = stats.num_pairs
    assert 1000 <= n_c[names.index("on") + 1] < 10000
    assert n_c[names.index("flying in") + 1] == 2
    # Table 1 of the paper: the six predicates with the fewest composable pairs *observed in training*, in
    # the paper's order and with its counts (every other predicate composes with more pairs)
    tail = sorted(range(1, len(n_c)), key=lambda c: (n_c[c], c))[:6]
    assert [(names[c - 1], int(n_c[c])) for c in tail] == list(FIXED_NUM_PAIRS.items())
    facts = vg150_facts()["predicate_count"]
    rho = spearmanr(stats.predicate_counts[1:], [facts[n] for n in names]).statistic
    assert rho >= 0.9, rho
