"""The plots page's comparison CSV (report.per_predicate.by_model_rows): every task × predicate × model once,
predicates most frequent in training first, values taken from each model's own document."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import numpy as np
from conftest import small_vocab

from sgg_eval.pipeline.eval_stages import compared_entries
from sgg_eval.report.per_predicate import by_model_rows, write_rows_csv


def _doc(rng, names):
    values = {name: float(rng.random()) for name in names}
    values[names[1]] = None  # a predicate with no GT instance: no value, an empty cell
    return {"per_predicate": {"mR@50": values, "IMR@20": {n: float(rng.random()) for n in names}}}


def test_rows_follow_training_frequency_and_carry_each_models_values(tmp_path):
    vocab = small_vocab(6, 5)
    names = list(vocab.predicate_classes)
    counts = np.array([0, 7, 30, 7, 1, 30])  # ties (30, 30 and 7, 7) keep predicate id order
    stats = SimpleNamespace(vocab=vocab, predicate_counts=counts)
    rng = np.random.default_rng(0)
    docs = {(e, t): _doc(rng, names) for e in ("a", "b") for t in ("predcls", "sgdet")}
    rows = by_model_rows(docs, {"b": "Model B", "a": "Model A"}, {"predcls": "PredCls", "sgdet": "SGDet"}, stats)

    order = [2, 5, 1, 3, 4]  # 1-based predicate ids, most frequent first
    expected = []
    for task, label in (("predcls", "PredCls"), ("sgdet", "SGDet")):
        for c in order:
            for entry, model in (("b", "Model B"), ("a", "Model A")):
                r50 = docs[entry, task]["per_predicate"]["mR@50"][names[c - 1]]
                expected.append(
                    {
                        "task": label,
                        "predicate": names[c - 1],
                        "model": model,
                        "R@50": "" if r50 is None else repr(r50),
                        "IMR@20": repr(docs[entry, task]["per_predicate"]["IMR@20"][names[c - 1]]),
                    }
                )
    assert rows == expected
    write_rows_csv(tmp_path / "by_model.csv", rows)
    with open(tmp_path / "by_model.csv", newline="") as fh:
        assert list(csv.DictReader(fh)) == expected


def test_the_compared_entries_are_the_figures_models_and_the_summary_entry_once_each():
    params = {
        "evaluation": {"entries": ["m1", "m2", "m1_pko"], "summary_entry": "m1_pko"},
        "figures": {"biased_model": "m1", "debiased_model": "m1"},
    }
    assert compared_entries(params) == ["m1", "m1_pko"]
    params["evaluation"]["summary_entry"] = None  # null: the first entry
    params["figures"]["debiased_model"] = "not_evaluated"
    assert compared_entries(params) == ["m1"]
