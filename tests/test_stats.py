"""Training statistics against plain loops over docs/definitions.md §4's words, on random images with duplicates."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_gt, small_vocab

from sgg_eval.data.stats import compute_stats, read_stats, write_stats

VOCAB = small_vocab(5, 4)


def _overlap(a, b):  # positive-area intersection, written the slow way
    return min(a[2], b[2]) - max(a[0], b[0]) > 0 and min(a[3], b[3]) - max(a[1], b[1]) > 0


def _reference(train, test, drop_non_overlapping, must_overlap):
    C, P = VOCAB.num_objects + 1, VOCAB.num_predicates + 1
    A = np.zeros((C, C, P), dtype=np.int64)
    bg = np.zeros((C, C), dtype=np.int64)
    for img in train:
        for s, o, p in img.rels:
            if drop_non_overlapping and not _overlap(img.boxes[s], img.boxes[o]):
                continue
            A[img.labels[s], img.labels[o], p] += 1
        n = len(img.labels)
        pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
        if must_overlap:
            ov = [(i, j) for i, j in pairs if _overlap(img.boxes[i], img.boxes[j])]
            pairs = ov or pairs
        for i, j in pairs:
            bg[img.labels[i], img.labels[j]] += 1
    zs = sorted(
        {
            (img.labels[s], img.labels[o], p)
            for img in test
            for s, o, p in img.rels
            if A[img.labels[s], img.labels[o], p] == 0
        }
    )
    n_c = [len({(s, o) for s in range(C) for o in range(C) if A[s, o, c] > 0}) for c in range(P)]
    dens = [len(im.rels) / (len(im.labels) * (len(im.labels) - 1)) if len(im.labels) > 1 else 0.0 for im in train]
    return A, bg, zs, n_c, dens


@pytest.mark.parametrize("drop,must", [(False, True), (True, True), (False, False)])
def test_stats_match_loops(rng, drop, must):
    train = [random_gt(rng, VOCAB, i) for i in range(150)]
    test = [random_gt(rng, VOCAB, 1000 + i) for i in range(60)]
    st = compute_stats(train, VOCAB, test, drop_non_overlapping=drop, background_must_overlap=must)
    A, bg, zs, n_c, dens = _reference(train, test, drop, must)
    np.testing.assert_array_equal(st.triplet_counts, A)
    np.testing.assert_array_equal(st.background_counts, bg)
    assert [tuple(r) for r in st.zeroshot_triplets] == zs and len(zs) > 0
    np.testing.assert_array_equal(st.num_pairs, n_c)
    np.testing.assert_allclose(st.graph_density, dens, rtol=0, atol=0)
    # A^s[p, s] = sum_o A[s, o, p]; A^o[p, o] = sum_s A[s, o, p]
    for p in range(VOCAB.num_predicates + 1):
        for c in range(VOCAB.num_objects + 1):
            assert st.subject_predicate[p, c] == A[c, :, p].sum()
            assert st.object_predicate[p, c] == A[:, c, p].sum()
    np.testing.assert_array_equal(st.predicate_counts, [A[:, :, p].sum() for p in range(VOCAB.num_predicates + 1)])
    objs = np.zeros(VOCAB.num_objects + 1, dtype=np.int64)
    for im in train:
        for lab in im.labels:
            objs[lab] += 1
    np.testing.assert_array_equal(st.object_counts, objs)


def test_duplicate_rows_are_counted(rng):
    from sgg_eval.data.types import GTImage

    img = GTImage(1, 50, 50, [[0, 0, 10, 10], [5, 5, 20, 20]], [1, 2], [[0, 1, 3], [0, 1, 3]])
    st = compute_stats([img], VOCAB)
    assert st.triplet_counts[1, 2, 3] == 2 and st.num_pairs[3] == 1


def test_stats_file_round_trip_is_deterministic(tmp_path, rng):
    train = [random_gt(rng, VOCAB, i) for i in range(40)]
    st = compute_stats(train, VOCAB, train[:5], simulated=True, source="unit")
    write_stats(tmp_path / "a.h5", st)
    write_stats(tmp_path / "b.h5", st)
    assert (tmp_path / "a.h5").read_bytes() == (tmp_path / "b.h5").read_bytes()
    back = read_stats(tmp_path / "a.h5")
    assert back.vocab == VOCAB and back.simulated and back.source == "unit"
    for name in ("triplet_counts", "background_counts", "zeroshot_triplets", "graph_density"):
        np.testing.assert_array_equal(getattr(back, name), getattr(st, name))
