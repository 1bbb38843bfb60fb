"""The predicate confusion matrix (issue 49): for each GT row whose subject and object are matched, the predicate
its matched pair (PRk's, the first in GC order) ranks first. One hand-built case exactly; on random cases every
row sums to the matched GT rows of its predicate."""

from __future__ import annotations

import numpy as np
from conftest import random_case, small_vocab

from sgg_eval.data.types import GTImage, PredImage
from sgg_eval.metrics.engine import evaluate
from sgg_eval.metrics.options import EvalOptions

VOCAB = small_vocab(4, 3)


def _scores(*rows):
    return np.array([[0.1, *r] for r in rows], dtype=np.float32)


def test_a_hand_built_case():
    boxes = np.array([[0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]], dtype=np.float32)
    gt = GTImage(1, 60, 60, boxes, np.array([1, 2, 3]), np.array([[0, 1, 1], [1, 2, 2], [0, 2, 1], [0, 1, 3]]))
    pred = PredImage(
        1, boxes, np.array([1, 2, 3]), np.ones(3, np.float32),
        np.array([[0, 1], [1, 2], [2, 0]]),
        _scores((0.2, 0.7, 0.1), (0.3, 0.3, 0.4), (0.5, 0.2, 0.3)),  # (0, 2) is not predicted: its row unmatched
    )  # fmt: skip
    doc = evaluate([(gt, pred)], VOCAB, EvalOptions(task="predcls"))
    counts = np.array(doc["confusion"]["counts"])
    want = np.zeros((3, 3), dtype=np.int64)
    want[0, 1] += 1  # (0, 1) on: its pair ranks 2 first
    want[2, 1] += 1  # (0, 1) with the third predicate: the same pair, the same first
    want[1, 2] += 1  # (1, 2): its pair ranks 3 first
    np.testing.assert_array_equal(counts, want)
    assert doc["confusion"]["predicates"] == list(VOCAB.predicate_classes)

    tied = PredImage(1, boxes, np.array([1, 2, 3]), np.ones(3, np.float32), np.array([[0, 1]]),
                     _scores((0.4, 0.4, 0.2)))  # fmt: skip
    doc = evaluate([(gt, tied)], VOCAB, EvalOptions(task="predcls"))
    assert np.array(doc["confusion"]["counts"])[:, 0].tolist() == [1, 0, 1]  # a tie goes to the lower id


def test_rows_sum_to_the_matched_gt_rows():
    rng = np.random.default_rng(11)
    for task in ("predcls", "sgdet"):
        cases = [random_case(rng, VOCAB, task, i) for i in range(80)]
        doc = evaluate(cases, VOCAB, EvalOptions(task=task))
        counts = np.array(doc["confusion"]["counts"])
        matched = np.zeros(3)
        for gt, pred in cases:
            if not len(gt.rels) or not len(pred.pairs):
                continue  # skipped by the reference protocol
            for s, o, p in gt.rels:
                for a, b in pred.pairs:
                    same = [_matches(gt, pred, s, a, task), _matches(gt, pred, o, b, task)]
                    if all(same):
                        matched[p - 1] += 1
                        break
        np.testing.assert_array_equal(counts.sum(axis=1), matched)
        assert counts.sum() > 0


def _matches(gt, pred, g, q, task) -> bool:
    if gt.labels[g] != pred.labels[q]:
        return False
    if task != "sgdet":
        return bool(np.array_equal(gt.boxes[g], pred.boxes[q]))
    a, b = gt.boxes[g].astype(np.float64), pred.boxes[q].astype(np.float64)
    iw = min(a[2], b[2]) - max(a[0], b[0]) + 1
    ih = min(a[3], b[3]) - max(a[1], b[1]) + 1
    inter = max(iw, 0) * max(ih, 0)
    union = (a[2] - a[0] + 1) * (a[3] - a[1] + 1) + (b[2] - b[0] + 1) * (b[3] - b[1] + 1) - inter
    return inter / union >= 0.5


def test_the_report_orders_by_frequency_and_words_the_largest_shares():
    from sgg_eval.data.stats import frequency_order
    from sgg_eval.report.confusion import confusion_rows, in_words, top_confusions

    confusion = {"predicates": ["a", "b", "c"], "counts": [[5, 5, 0], [1, 1, 0], [0, 3, 1]]}
    order = frequency_order([10, 30, 30])
    assert order == [1, 2, 0]  # most frequent first, ties by index
    rows = confusion_rows(confusion, order)
    assert [r["gt_predicate"] for r in rows] == ["b", "c", "a"] and list(rows[0])[2:] == ["b", "c", "a"]
    assert rows[2] == {"gt_predicate": "a", "matched": 10, "b": 5, "c": 0, "a": 5}
    top = top_confusions(confusion)
    assert top == [("c", "b", 0.75, 3), ("a", "b", 0.5, 5), ("b", "a", 0.5, 1)]  # ties: more rows first
    assert in_words(*top[0][:3]) == "c → b: 75.0% of `c`"
