"""`sgg-eval audit` (issue 12): every variant of R@K and mR@K against plain loops over the documented definitions
(docs/definitions.md), the reference variant equal to `evaluate`, and `--published` naming the variant a number
really is."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_case, small_vocab
from reference_metrics import Image

from sgg_eval.cli import main
from sgg_eval.data.store import write_predictions, write_split
from sgg_eval.data.types import GTImage, PredictionMeta, PredImage, SplitMeta
from sgg_eval.metrics.engine import evaluate
from sgg_eval.metrics.options import EvalOptions
from sgg_eval.metrics.ranking.blocks import accumulate
from sgg_eval.metrics.variants import variants

VOCAB = small_vocab(6, 5)
KS = (20, 50, 100)


def loop_variants(cases, task, C):
    """Every variant by plain loops: per image, the GT rows hit by the first K candidates (reference_metrics)."""
    images = []  # (predicates of the rows, {K: hit rows} per constraint) per image with GT relations
    for gt, pred in cases:
        if len(gt.rels) == 0:
            continue
        preds = [int(p) for p in gt.rels[:, 2]]
        if len(pred.pairs) == 0:
            images.append((preds, None))  # no predicted pair: skipped, or all-miss when strict
            continue
        im = Image(gt, pred, task, "score", "probabilities")
        images.append(
            (preds, {"GC": {k: im.hit_rows(im.gc, k) for k in KS}, "NG": {k: im.hit_rows(im.ng, k) for k in KS}})
        )
    out = {}
    for constraint in ("GC", "NG"):
        for protocol in ("skipped", "strict"):
            used = [
                (p, h[constraint] if h else {k: set() for k in KS})
                for p, h in images
                if h is not None or protocol == "strict"
            ]
            for k in KS:
                per_image = [len(h[k]) / len(p) for p, h in used]
                out["R", k, constraint, "per-image", protocol] = sum(per_image) / len(per_image)
                out["R", k, constraint, "pooled", protocol] = sum(len(h[k]) for _, h in used) / sum(
                    len(p) for p, _ in used
                )
                per_c, pooled_c, present = [], [], []
                for c in range(1, C + 1):
                    ratios = [sum(1 for r in h[k] if p[r] == c) / p.count(c) for p, h in used if c in p]
                    rows = sum(p.count(c) for p, _ in used)
                    per_c.append(sum(ratios) / len(ratios) if ratios else 0.0)
                    pooled_c.append(sum(sum(1 for r in h[k] if p[r] == c) for p, h in used) / rows if rows else 0.0)
                    if ratios:
                        present.append(per_c[-1])
                out["mR", k, constraint, "per-image", protocol] = sum(per_c) / C
                out["mR", k, constraint, "pooled", protocol] = sum(pooled_c) / C
                out["mR", k, constraint, "present-only", protocol] = sum(present) / len(present)
    return out


def _ours(cases, task, subset=0):
    opts = EvalOptions(task=task)
    acc, _, _ = accumulate(iter(cases), VOCAB, opts)
    first = accumulate(iter(cases[:subset]), VOCAB, opts)[0] if subset else None
    return variants(acc, first, subset)


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
def test_every_variant_equals_plain_loops(task):
    rng = np.random.default_rng(11)
    cases = [random_case(rng, VOCAB, task, i) for i in range(120)]  # no-pred images, duplicates, ties
    for gt, _ in cases:  # and a predicate absent from the GT (present-only then differs)
        gt.rels[gt.rels[:, 2] == VOCAB.num_predicates, 2] = 1
    rows = _ours(cases, task, subset=40)
    for images, expected in (
        ("all", loop_variants(cases, task, VOCAB.num_predicates)),
        ("first 40", loop_variants(cases[:40], task, VOCAB.num_predicates)),
    ):
        mine = {(v.metric, v.k, v.constraint, v.aggregation, v.protocol): v.value for v in rows if v.images == images}
        assert set(mine) == set(expected)
        for key, value in expected.items():
            assert mine[key] == pytest.approx(value, abs=1e-12), (images, key)
    # the edge cases are there: variants differ along every dimension
    values = {(v.metric, v.k, v.constraint, v.aggregation, v.protocol, v.images): v.value for v in rows}
    assert values["R", 50, "GC", "per-image", "skipped", "all"] != values["R", 50, "GC", "pooled", "skipped", "all"]
    assert values["R", 50, "GC", "per-image", "skipped", "all"] != values["R", 50, "GC", "per-image", "strict", "all"]
    assert (
        values["mR", 50, "GC", "per-image", "skipped", "all"]
        != values["mR", 50, "GC", "present-only", "skipped", "all"]
    )


def test_the_reference_variant_is_what_evaluate_reports():
    rng = np.random.default_rng(12)
    cases = [random_case(rng, VOCAB, "sgcls", i) for i in range(80)]
    metrics = evaluate(iter(cases), VOCAB, EvalOptions(task="sgcls"))["metrics"]
    for v in _ours(cases, "sgcls"):
        if (v.aggregation, v.protocol, v.images) == ("per-image", "skipped", "all"):
            name = {"GC": f"{v.metric}@{v.k}", "NG": f"ng{v.metric}@{v.k}" if v.metric == "R" else f"ng-mR@{v.k}"}
            assert v.value == metrics[name[v.constraint]]  # bit for bit: the same reduction


def _image(i, n_objects, rels, best_predicate, with_pairs=True):
    boxes = np.array([[10 * j, 0, 10 * j + 8, 8] for j in range(n_objects)], np.float32)
    gt = GTImage(i, 100, 100, boxes, np.ones(n_objects, np.int64), np.array(rels, np.int64))
    pairs = np.array(
        [(a, b) for a in range(n_objects) for b in range(n_objects) if a != b] if with_pairs else np.zeros((0, 2)),
        np.int64,
    ).reshape(-1, 2)
    scores = np.full((len(pairs), VOCAB.num_predicates + 1), 0.1, np.float32)
    scores[:, best_predicate] = 0.5
    return gt, PredImage(i, boxes, gt.labels, np.ones(n_objects, np.float32), pairs, scores)


def test_published_names_the_variant_a_number_is(tmp_path, capsys):
    # image 0: its one row hit; image 1: nine rows, none hit (the model predicts predicate 3 everywhere);
    # image 2: no predicted pair. GC R@50: per-image 1/2 = 50.0, pooled 1/10 = 10.0, per-image strict 1/3,
    # pooled strict 1/12
    nine = [(a, b, 2) for a in range(4) for b in range(4) if a != b][:9]
    cases = [_image(0, 2, [(0, 1, 1)], 1), _image(1, 4, nine, 3), _image(2, 3, [(0, 1, 1), (1, 2, 2)], 1, False)]
    write_split(tmp_path / "test.h5", SplitMeta("test", VOCAB, "unit", True, "unit"), [g for g, _ in cases])
    write_predictions(
        tmp_path / "pred.h5",
        PredictionMeta("predcls", "probabilities", VOCAB, "m", True, "unit"),
        [p for _, p in cases],
    )
    args = [
        "audit",
        str(tmp_path / "pred.h5"),
        "--gt",
        str(tmp_path / "test.h5"),
        "--task",
        "predcls",
        "--jobs",
        "1",
        "-o",
        str(tmp_path / "audit.json"),
        "--md",
        str(tmp_path / "audit.md"),
    ]
    capsys.readouterr()
    assert (
        main(
            args
            + [
                "--published",
                "R@50=10.0",
                "--published",
                "R@50=50.0",
                "--published",
                "R@50=8.33",
                "--published",
                "R@50=42.0",
            ]
        )
        == 0
    )
    out = capsys.readouterr()
    doc = json.loads((tmp_path / "audit.json").read_text())
    pooled, reference, strict, none = doc["published"]
    assert pooled["matches"] == ["R@50 GC, pooled, skipped, all images"] and not pooled["reference"]
    assert pooled["verdict"].startswith("WARNING not the reference variant")
    assert reference["reference"] and reference["verdict"].startswith("the reference variant")
    assert strict["matches"] == ["R@50 GC, pooled, strict, all images"]
    assert none["matches"] == [] and none["verdict"].startswith("no variant within rounding")
    assert "warning" in out.err and "WARNING not the reference variant" in out.out
    assert (tmp_path / "audit.md").read_text() == out.out  # the terminal shows the Markdown written
    # 100: every R@50 variant of the first image alone, and the no-graph-constraint ones of all images (NG
    # ranks every predicate of image 1's pairs, so its nine rows are hit too)
    # ngR@K is the reference's own NG value: its per-image, skipped, all-images variant is not a warning
    ng = next(
        v
        for v in doc["variants"]
        if v["metric"] == "R"
        and v["k"] == 50
        and v["constraint"] == "NG"
        and v["aggregation"] == "per-image"
        and v["protocol"] == "skipped"
        and v["images"] == "all"
    )
    assert main(args + ["--published", f"ngR@50={100 * ng['value']:.2f}"]) == 0
    got = json.loads((tmp_path / "audit.json").read_text())["published"][0]
    assert got["reference"] and got["verdict"].startswith("the reference variant"), got
    assert main(args + ["--subset", "1", "--published", "R@50=100"]) == 0
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["images"]["subset"] == 1
    assert set(doc["published"][0]["matches"]) == {
        *(
            f"R@50 {c}, {a}, {p}, first 1 images"
            for c in ("GC", "NG")
            for a in ("per-image", "pooled")
            for p in ("skipped", "strict")
        ),
        "R@50 NG, per-image, skipped, all images",
        "R@50 NG, pooled, skipped, all images",
    }


def test_a_malformed_published_value_is_refused(tmp_path, capsys):
    rng = np.random.default_rng(1)
    cases = [random_case(rng, VOCAB, "predcls", i) for i in range(5)]
    write_split(tmp_path / "test.h5", SplitMeta("test", VOCAB, "unit", True, "unit"), [g for g, _ in cases])
    write_predictions(
        tmp_path / "pred.h5",
        PredictionMeta("predcls", "probabilities", VOCAB, "m", True, "unit"),
        [p for _, p in cases],
    )
    code = main(
        [
            "audit",
            str(tmp_path / "pred.h5"),
            "--gt",
            str(tmp_path / "test.h5"),
            "--task",
            "predcls",
            "--published",
            "mR@30=1.2",
        ]
    )
    assert code == 2 and "--published" in capsys.readouterr().err
