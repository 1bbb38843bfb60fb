"""A τ change is a reduction of a stored evaluation (engine.with_tau), bit-identical to evaluating at that τ."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_case

from sgg_eval.data.types import Vocabulary
from sgg_eval.metrics.engine import evaluate, with_tau
from sgg_eval.metrics.options import EvalOptions

# predicate names deliberately not in alphabetical order: the JSON file sorts its keys, the weights n_c
# follow the vocabulary, and with_tau must pair them by name (VG150's alphabetical names would hide it)
VOCAB = Vocabulary(tuple(f"obj{i}" for i in range(1, 7)), ("zebra", "apple", "mango", "kiwi", "banana"))


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
def test_with_tau_equals_a_full_evaluation_at_that_tau(task):
    rng = np.random.default_rng(5)
    cases = [random_case(rng, VOCAB, task, i) for i in range(40)]
    num_pairs = np.concatenate([[0], rng.integers(1, 500, size=VOCAB.num_predicates)])
    docs = {
        tau: evaluate(cases, VOCAB, EvalOptions(task=task, score_kind="probabilities", tau=tau), num_pairs=num_pairs)
        for tau in (0.5, 0.0, 0.25, 1.0)
    }
    stored = json.loads(json.dumps(docs[0.5], sort_keys=True))  # as the evaluate stage writes it
    for tau, direct in docs.items():
        reduced = with_tau(stored, VOCAB.predicate_classes, num_pairs, tau)
        assert reduced["tau"] == tau
        assert reduced["metrics"] == direct["metrics"]  # exact, every metric
    zero = with_tau(stored, VOCAB.predicate_classes, num_pairs, 0.0)["metrics"]
    for k in (10, 20, 50):
        assert zero[f"wIMR@{k}"] == zero[f"IMR@{k}"] and zero[f"ng-wIMR@{k}"] == zero[f"ng-IMR@{k}"]


def test_with_tau_keeps_undefined_values_and_refuses_bad_tau():
    doc = evaluate([], VOCAB, EvalOptions(task="predcls"), num_pairs=np.ones(VOCAB.num_predicates + 1))
    assert with_tau(doc, VOCAB.predicate_classes, np.ones(6), 0.3)["metrics"]["wIMR@20"] is None
    with pytest.raises(Exception, match="tau"):
        with_tau(doc, VOCAB.predicate_classes, np.ones(6), 1.5)
