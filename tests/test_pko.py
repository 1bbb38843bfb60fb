"""PKO against a direct transcription of docs/definitions.md §5 on hand-built counts (zeros included); blind
replacement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import random_case, small_vocab

from sgg_eval.boxes.pko import (
    PKOParams,
    apply_pko_image,
    blind_replace_image,
    pko_predictions,
    pko_prior,
    tail_predicates,
)
from sgg_eval.boxes.sources import open_predictions
from sgg_eval.data.stats import compute_stats
from sgg_eval.data.store import PredictionStore, write_predictions, write_split
from sgg_eval.data.types import PredictionMeta, PredImage, SplitMeta

VOCAB = small_vocab(4, 3)


def _hand_counts():
    """A[s, o, p] for 4 classes and 3 predicates; class 4 never appears, predicate 3 only with class 2."""
    A = np.zeros((5, 5, 4), dtype=np.int64)
    A[1, 2, 1] = 10
    A[1, 3, 1] = 5
    A[2, 1, 2] = 3
    A[3, 3, 2] = 1
    A[2, 2, 3] = 2
    return A


def _spec_bias(A, eps):
    """docs/definitions.md §5 word for word, with loops. Returns b[i][j][k] for classes i, j in 1..4 and k in 1..3."""
    C_obj, C_pred = A.shape[0] - 1, A.shape[2] - 1
    As = [[sum(A[s, o, p] for o in range(1, C_obj + 1)) for s in range(C_obj + 1)] for p in range(C_pred + 1)]
    Ao = [[sum(A[s, o, p] for s in range(1, C_obj + 1)) for o in range(C_obj + 1)] for p in range(C_pred + 1)]

    def tilde(M, p, c):
        return (M[p][c] + eps) / sum(M[p][c2] + eps for c2 in range(1, C_obj + 1))

    def cond(M, k, c):
        return tilde(M, k, c) / sum(tilde(M, k2, c) for k2 in range(1, C_pred + 1))

    return {
        (i, j, k): math.log(cond(As, k, i)) + math.log(cond(Ao, k, j))
        for i in range(1, C_obj + 1)
        for j in range(1, C_obj + 1)
        for k in range(1, C_pred + 1)
    }


def _stats_from_counts(A):
    st = compute_stats([], VOCAB)
    st.triplet_counts = A
    st.predicate_counts = A.sum(axis=(0, 1))
    return st


@pytest.mark.parametrize("eps", [1e-3, 0.5])
def test_prior_matches_spec_transcription(eps):
    A = _hand_counts()
    st = _stats_from_counts(A)
    prior = pko_prior(st.subject_predicate, st.object_predicate, eps)
    ref = _spec_bias(A, eps)
    for (i, j, k), b in ref.items():
        assert abs(prior[0, i, k - 1] + prior[1, j, k - 1] - b) < 1e-12, (i, j, k)
    # the prior raises predicates with few composable classes given those classes (sign as in the text)
    assert ref[(2, 2, 3)] > ref[(2, 2, 1)]


@pytest.mark.parametrize("kind", ["logits", "probabilities"])
def test_apply_matches_spec_on_logits_and_probabilities(kind):
    A = _hand_counts()
    st = _stats_from_counts(A)
    params = PKOParams(lam=0.7, eps=1e-3)
    prior = pko_prior(st.subject_predicate, st.object_predicate, params.eps)
    ref = _spec_bias(A, params.eps)
    rng = np.random.default_rng(0)
    raw = rng.random((6, 4)).astype(np.float32) + 0.05
    if kind == "probabilities":
        raw = raw / raw.sum(axis=1, keepdims=True)
    pairs = np.array([[0, 1], [1, 0], [2, 3], [3, 2], [0, 3], [1, 2]])
    labels = np.array([1, 2, 2, 4])
    pred = PredImage(0, np.zeros((4, 4)), labels, np.ones(4), pairs, raw)
    out = apply_pko_image(pred, labels, prior, params, kind)
    only = apply_pko_image(pred, labels, prior, params, kind, only=True)
    for r, (a, b) in enumerate(pairs):
        z_hat = [float(v) if kind == "logits" else math.log(float(v)) for v in raw[r]]
        assert abs(out.rel_scores[r, 0] - z_hat[0]) < 1e-6  # background unchanged
        assert abs(only.rel_scores[r, 0] - z_hat[0]) < 1e-6
        for k in range(1, 4):
            bias = ref[(labels[a], labels[b], k)]
            assert abs(out.rel_scores[r, k] - (z_hat[k] + 0.7 * bias)) < 1e-4
            assert abs(only.rel_scores[r, k] - 0.7 * bias) < 1e-4


def test_pko_store_changes_only_predicate_scores(tmp_path):
    rng = np.random.default_rng(3)
    cases = [random_case(rng, VOCAB, "sgcls", i) for i in range(30)]
    write_split(tmp_path / "gt.h5", SplitMeta("test", VOCAB, "unit", True, "unit"), [g for g, _ in cases])
    write_predictions(
        tmp_path / "p.h5", PredictionMeta("sgcls", "probabilities", VOCAB, "m", True, "unit"), [p for _, p in cases]
    )
    before = (tmp_path / "p.h5").read_bytes()
    stats = compute_stats([g for g, _ in cases], VOCAB)
    source = open_predictions(str(tmp_path / "p.h5"), gt=str(tmp_path / "gt.h5"))
    pko_predictions(source, "sgcls", stats, tmp_path / "pko.h5", PKOParams())
    assert (tmp_path / "p.h5").read_bytes() == before  # input untouched
    prior = pko_prior(stats.subject_predicate, stats.object_predicate, 1e-3)
    with PredictionStore(tmp_path / "p.h5") as a, PredictionStore(tmp_path / "pko.h5") as b:
        assert b.meta.score_kind == "logits" and b.meta.task == "sgcls"
        for x, y in zip(a, b):
            assert x.image_id == y.image_id
            for f in ("boxes", "labels", "obj_scores", "pairs"):
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
            if len(x.pairs):
                z = np.log(x.rel_scores.astype(np.float64))
                np.testing.assert_allclose(y.rel_scores[:, 0], z[:, 0], rtol=1e-6)
                bias = prior[0][x.labels[x.pairs[:, 0]]] + prior[1][x.labels[x.pairs[:, 1]]]
                np.testing.assert_allclose(y.rel_scores[:, 1:], z[:, 1:] + bias, rtol=1e-5, atol=1e-5)


def test_blind_replacement_against_loops():
    A = _hand_counts()
    n_c = (A > 0).sum(axis=(0, 1))  # predicate 1: 2 pairs, 2: 2 pairs, 3: 1 pair
    assert tail_predicates(n_c, 2) == [3, 1]
    rng = np.random.default_rng(5)
    labels = np.array([1, 2, 2, 3, 4])
    pairs = np.array([(a, b) for a in range(5) for b in range(5) if a != b])
    z = rng.normal(size=(len(pairs), 4))
    pred = PredImage(0, np.zeros((5, 4)), labels, np.ones(5), pairs, z)
    chosen = [3, 1]
    out, replaced = blind_replace_image(pred, labels, A, chosen, n_c)
    count = 0
    for r, (a, b) in enumerate(pairs):
        s, o = labels[a], labels[b]
        seen = [c for c in chosen if A[s, o, c] > 0]
        new = out.rel_scores[r]
        if seen:
            count += 1
            target = min(seen, key=lambda c: (n_c[c], c))
            assert 1 + int(np.argmax(new[1:])) == target
            assert abs(new[1:].max() - z[r, 1:].max()) < 1e-12  # the pair keeps its best score
        else:
            np.testing.assert_array_equal(new, z[r])
    assert replaced == count and count > 0
