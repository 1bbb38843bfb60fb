"""Head, body and tail mean recall (issue 49, ``metrics.longtail``): PySGG's VG150 parts, the frequency rule on the
training statistics, and the values against the slow loop reference (``reference_metrics``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_case, small_vocab
from reference_metrics import reference_evaluate

from sgg_eval.cli import main
from sgg_eval.data.stats import compute_stats, write_stats
from sgg_eval.data.store import write_predictions, write_split
from sgg_eval.data.types import PredictionMeta, SplitMeta
from sgg_eval.data.vg150_facts import vg150_vocabulary
from sgg_eval.metrics.longtail import GROUPS, group_recalls, predicate_groups
from sgg_eval.metrics.names import subset_name


def test_pysgg_parts_of_vg150():
    predicates = vg150_vocabulary().predicate_classes
    groups, rule = predicate_groups(predicates, None)
    assert rule == "pysgg" and np.bincount(groups).tolist() == [4, 12, 34]
    # PySGG's visual_genome.py lists its head ids in a comment, 1-based: HEAD = [31, 20, 48, 30]
    assert {predicates[i - 1] for i in (31, 20, 48, 30)} == {p for p, g in zip(predicates, groups) if g == 0}
    assert predicates[int(np.flatnonzero(groups == 1)[0])] == "above" and groups[predicates.index("in")] == 1


def test_the_frequency_rule_follows_the_training_counts():
    names = tuple(f"p{i}" for i in range(56))
    counts = np.arange(56)[::-1] * 10  # p0 most frequent
    groups, rule = predicate_groups(names, counts)
    assert rule == "frequency" and np.bincount(groups).tolist() == [4, 13, 39]  # PySGG's sizes, scaled to 56
    assert groups[:4].tolist() == [0] * 4 and groups[4:17].tolist() == [1] * 13
    moved, _ = predicate_groups(names, counts[::-1])  # other statistics, other groups
    assert moved[-4:].tolist() == [0] * 4 and moved[0] == 2
    tied, _ = predicate_groups(names, np.zeros(56))  # ties: by index
    assert tied[:4].tolist() == [0] * 4
    assert predicate_groups(names, None) == (None, "frequency")
    assert predicate_groups(names, counts, "pysgg") == (None, "pysgg")  # not VG150's predicates


def test_group_means_of_a_hand_built_document():
    predicates = ("a", "b", "c", "d")
    per = {"mR@50": {"a": 0.5, "b": 0.25, "c": 0.0, "d": 1.0}}
    out = group_recalls(per, predicates, np.array([0, 1, 1, 2]))
    assert out["mR_head@50"] == 0.5 and out["mR_body@50"] == 0.125 and out["mR_tail@50"] == 1.0
    assert out["ng-mR_head@50"] is None and out["mR_head@20"] is None  # no such vector in the document


@pytest.mark.parametrize("task", ["predcls", "sgdet"])
def test_against_the_loop_reference(tmp_path, task):
    vocab = small_vocab(6, 25)
    rng = np.random.default_rng(5)
    cases = [random_case(rng, vocab, task, 100 + i) for i in range(50)]
    write_split(tmp_path / "test.h5", SplitMeta("test", vocab, "unit", True, "unit"), [g for g, _ in cases])
    write_predictions(tmp_path / "pred.h5", PredictionMeta(task, "probabilities", vocab, "m", True, "unit"),
                      [p for _, p in cases])  # fmt: skip
    seen = []
    for n, train in enumerate((cases[:25], cases[25:])):  # two training sets: two groupings
        write_stats(tmp_path / f"stats{n}.h5", stats := compute_stats([g for g, _ in train], vocab, []))
        out = tmp_path / f"m{n}.json"
        args = ["evaluate", str(tmp_path / "pred.h5"), "--gt", str(tmp_path / "test.h5"), "--task", task]
        assert main([*args, "--stats", str(tmp_path / f"stats{n}.h5"), "-o", str(out)]) == 0
        doc = json.loads(out.read_text())
        assert doc["longtail"]["rule"] == "frequency"
        groups = {g: [vocab.predicate_classes.index(p) + 1 for p in doc["longtail"][g]] for g in GROUPS}
        counts = stats.predicate_counts[1:]
        head = sorted((np.argsort(-counts, kind="stable")[:2] + 1).tolist())
        assert sorted(groups["head"]) == head and [len(groups[g]) for g in GROUPS] == [2, 6, 17]
        ref, _ = reference_evaluate(cases, vocab.num_predicates, task, groups=groups)
        for name, value in ref.items():
            if "_head@" in name or "_body@" in name or "_tail@" in name:
                assert doc["metrics"][name] == pytest.approx(value, abs=1e-15), name
        assert all(doc["metrics"][subset_name(f, g, 50)] is not None for f in ("R", "mR") for g in GROUPS)
        seen.append(doc["longtail"]["head"])
    assert seen[0] != seen[1]
