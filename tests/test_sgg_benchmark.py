"""`sgg-eval evaluate --protocol sgg-benchmark` on SGG-Benchmark's ``predictions.pth``: every number its relation
evaluator computes, against a slow loop written from its rules (``sgg_benchmark_reference``), on random COCO-style
splits and predictions for every task, with its IoU's edge cases; and the reader's refusals. Its own evaluator, run
outside the repository on such files, gave the same numbers (the note of issue 69; docs/sgg_benchmark.md)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from coco_sgg_fixture import write_coco_sgg
from sgg_benchmark_fixture import write_predictions
from sgg_benchmark_reference import iou as loop_iou
from sgg_benchmark_reference import ir_reference, reference
from torch_writer import save_zip

from sgg_eval.cli import main
from sgg_eval.data.store import SplitStore
from sgg_eval.metrics import informative
from sgg_eval.metrics.iou import sgg_benchmark_iou
from sgg_eval.metrics.sgg_benchmark_document import OWN

TASKS = ("predcls", "sgcls", "sgdet")


@dataclass
class Pred:
    boxes: np.ndarray
    labels: np.ndarray
    obj_scores: np.ndarray
    pairs: np.ndarray
    rel_scores: np.ndarray


def as_read(entry: dict) -> Pred:
    """An entry as the toolkit's evaluator reads it (its ``box_convert`` for ``xywh``: x2 = x + max(w - 1, 0))."""
    b = entry["boxes"]
    if entry["mode"] == "xywh":
        b = np.concatenate([b[:, :2], b[:, :2] + np.maximum(b[:, 2:] - np.float32(1), 0)], axis=1)
    return Pred(b, entry["pred_labels"], entry["pred_scores"], entry["rel_pair_idxs"], entry["pred_rel_scores"])


def splits(tmp_path: Path, seed: int, capsys) -> tuple[Path, Path]:
    root = write_coco_sgg(tmp_path / "coco", seed)
    out = tmp_path / "stores"
    assert main(["split", "--coco-sgg", str(root), "--draw-seed", str(seed), "-o", str(out), "--splits",
                 "train,test"]) == 0  # fmt: skip
    assert main(["stats", str(out / "train.h5"), "--test", str(out / "test.h5"), "-o", str(tmp_path / "stats.h5")]) == 0
    capsys.readouterr()
    return out / "train.h5", out / "test.h5"


def evaluate(tmp_path: Path, pth: Path, test: Path, task: str, capsys, *extra: str) -> dict:
    out = tmp_path / f"result_{task}.json"
    code = main(["evaluate", str(pth), "--gt", str(test), "--stats", str(tmp_path / "stats.h5"), "--protocol",
                 "sgg-benchmark", "--task", task, "-o", str(out), *extra])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    return json.loads(out.read_text())


@pytest.mark.parametrize("seed", range(4))
def test_every_number_equals_the_rules_written_as_loops(tmp_path, seed, capsys):
    train, test = splits(tmp_path, seed, capsys)
    with SplitStore(train) as s:
        seen = {(g.labels[a], g.labels[b], p) for g in s for a, b, p in g.rels.tolist()}
    with SplitStore(test) as s:
        gts, vocab = list(s), s.vocab
    for task in TASKS:
        pth = tmp_path / f"predictions_{task}.pth"
        entries = write_predictions(pth, gts, task, vocab, seed)
        doc = evaluate(tmp_path, pth, test, task, capsys)
        want = reference([(g, as_read(e)) for g, e in zip(gts, entries)], task, vocab.num_predicates, seen)
        assert set(doc["metrics"]) == set(OWN)
        for name, value in want.items():
            got = doc["metrics"][name]
            assert (got is None) == (value is None), (task, name)
            if value is not None:
                assert abs(got - value) <= 1e-12, (task, name, got, value)
        assert doc["counts"]["images_skipped_no_pred"] == 0  # an image without a prediction is a miss, not skipped
        assert "beyond_protocol" in doc and "IMR@20" in doc["beyond_protocol"]["metrics"]


def test_its_iou_adds_the_pixel_to_the_intersection_only():
    rng = np.random.default_rng(3)
    a = np.round(rng.uniform(0, 60, (400, 4)), rng.integers(0, 3)).astype(np.float32)
    b = np.round(rng.uniform(0, 60, (400, 4)), rng.integers(0, 3)).astype(np.float32)
    for boxes in (a, b):
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2])
    fast = sgg_benchmark_iou(a, b)
    slow = np.array([loop_iou(x, y) for x, y in zip(a, b)], dtype=np.float32)
    assert np.array_equal(fast, slow, equal_nan=True)
    thin, square, wide = [10, 10, 11, 30], [10, 10, 12, 12], [10, 10, 12, 13]
    assert sgg_benchmark_iou(np.float32([thin]), np.float32([thin]))[0] < 0  # 1 px wide: never matches itself
    assert sgg_benchmark_iou(np.float32([square]), np.float32([square]))[0] < 0  # 2 x 2: 9 / (4 + 4 - 9)
    with np.errstate(divide="ignore"):
        assert np.isinf(sgg_benchmark_iou(np.float32([wide]), np.float32([wide]))[0])  # 2 x 3: 12 / 0
    # exactly 0.5: inter (1 + 1)(1 + 1) = 4, union 11 + 1 - 4 = 8 (matches, as `>=` there)
    half = sgg_benchmark_iou(np.float32([[0, 0, 11, 1]]), np.float32([[0, 0, 1, 1]]))[0]
    assert half == np.float32(0.5) and loop_iou([0, 0, 11, 1], [0, 0, 1, 1]) == 0.5


def test_a_gt_box_is_clipped_to_w_not_w_minus_1(tmp_path, capsys):
    """A split made with --no-clip is clipped at evaluation to [0, W] x [0, H], as its loader clips."""
    root = write_coco_sgg(tmp_path / "coco", 7)
    out = tmp_path / "stores"
    assert main(["split", "--coco-sgg", str(root), "--draw-seed", "7", "-o", str(out), "--splits", "train,test"]) == 0
    assert main(["split", "--coco-sgg", str(root), "--draw-seed", "7", "-o", str(tmp_path / "raw"), "--splits",
                 "train,test", "--no-clip"]) == 0  # fmt: skip
    assert main(["stats", str(out / "train.h5"), "--test", str(out / "test.h5"), "-o", str(tmp_path / "stats.h5")]) == 0
    capsys.readouterr()
    with SplitStore(out / "test.h5") as s:
        gts, vocab = list(s), s.vocab
    with SplitStore(tmp_path / "raw" / "test.h5") as s:
        assert any(not np.array_equal(a.boxes, b.boxes) for a, b in zip(s, gts))  # the fixture has boxes past W
    pth = tmp_path / "p.pth"
    write_predictions(pth, gts, "sgdet", vocab, 7)
    clipped = evaluate(tmp_path, pth, out / "test.h5", "sgdet", capsys)
    raw = evaluate(tmp_path, pth, tmp_path / "raw" / "test.h5", "sgdet", capsys)
    assert raw["metrics"] == clipped["metrics"]
    assert raw["counts"]["gt_boxes_clipped"] > 0


def captions_for(rng, gts, entries, vocab) -> dict:
    """Caption triplets per image: some a prediction's string (at any rank), some a GT triplet's, some repeated, some
    never predicted; some images without an entry or with an empty one, and one entry for an image not in the split."""
    out = {"999999": ["cup on table"]}
    for gt, e in zip(gts, entries):
        if rng.random() < 0.15:
            continue
        names, preds = vocab.object_classes, vocab.predicate_classes
        strings = [
            f"{names[gt.labels[s] - 1]} {preds[p - 1]} {names[gt.labels[o] - 1]}" for s, o, p in gt.rels.tolist()
        ]
        for (s, o), row in zip(e["rel_pair_idxs"].tolist(), e["pred_rel_scores"]):
            if rng.random() < 0.1:
                labels = e["pred_labels"]
                strings.append(f"{names[labels[s] - 1]} {preds[int(np.argmax(row[1:]))]} {names[labels[o] - 1]}")
        strings += ["a thing near another thing"] * int(rng.integers(0, 2))
        if strings and rng.random() < 0.3:
            strings.append(strings[0])  # a repeated caption counts twice
        out[str(gt.image_id)] = strings if rng.random() > 0.1 else []
    return out


@pytest.mark.parametrize("seed", range(3))
def test_informative_recall_with_the_exact_encoder_equals_the_loop(tmp_path, seed, capsys):
    from sgg_eval import evaluate_file

    train, test = splits(tmp_path, seed, capsys)
    with SplitStore(test) as s:
        gts, vocab = list(s), s.vocab
    rng = np.random.default_rng(seed)
    for task in TASKS:
        pth = tmp_path / f"predictions_{task}.pth"
        entries = write_predictions(pth, gts, task, vocab, seed)
        captions = captions_for(rng, gts, entries, vocab)
        cap_file = tmp_path / f"captions_{task}.json"
        cap_file.write_text(json.dumps(captions))
        doc = evaluate(tmp_path, pth, test, task, capsys, "--captions", str(cap_file))
        want = ir_reference([(g, as_read(e)) for g, e in zip(gts, entries)], task, captions, vocab.object_classes,
                            vocab.predicate_classes)  # fmt: skip
        for name, value in want.items():
            assert doc["metrics"][name] == value, (task, name, doc["metrics"][name], value)
        assert any(v for v in want.values())  # the fixture hits some captions
        with_captions = sum(1 for g in gts if len(g.rels) and captions.get(str(g.image_id)))
        assert doc["counts"]["images_evaluated"] - doc["counts"]["images_without_captions"] == with_captions
        api = evaluate_file(
            pth, task, gt=test, stats=tmp_path / "stats.h5", protocol="sgg-benchmark", captions=cap_file
        )
        assert api["metrics"] == doc["metrics"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--protocol", "reference", "--captions", "CAPTIONS"], "a metric of --protocol sgg-benchmark"),
        (["--protocol", "sgg-benchmark", "--ir-encoder", "some-model"], "give the file"),
        (["--protocol", "sgg-benchmark", "--captions", "CAPTIONS", "--ir-encoder", "/no/such/model"], "--ir-encoder"),
        (["--protocol", "sgg-benchmark", "--captions", "BAD"], "expected a list of caption triplets"),
    ],
)
def test_captions_are_refused_where_they_mean_nothing(tmp_path, capsys, monkeypatch, args, says):
    # sentence-transformers is not installed here, and no stand-in either (tests/fuzz/seeds.py installs one)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setattr(informative, "_MODELS", {})
    test, gts, vocab = _case(tmp_path, capsys)
    write_predictions(tmp_path / "p.pth", gts, "predcls", vocab, 1)
    (tmp_path / "c.json").write_text(json.dumps({str(gts[0].image_id): ["chair on table"]}))
    (tmp_path / "bad.json").write_text(json.dumps({str(gts[0].image_id): "chair on table"}))
    args = [{"CAPTIONS": str(tmp_path / "c.json"), "BAD": str(tmp_path / "bad.json")}.get(a, a) for a in args]
    out = tmp_path / "r.json"
    code = main(["evaluate", str(tmp_path / "p.pth"), "--gt", str(test), "--task", "predcls", "-o", str(out), *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and says in err, err
    assert not out.exists()


def test_informative_recall_with_a_sentence_model_matches_above_its_threshold(tmp_path, capsys, monkeypatch):
    """--ir-encoder MODEL: a SentenceTransformer (here the tests' stand-in: hashed character trigrams) embeds the
    predictions' strings and the captions; a caption is matched by a prediction at cosine similarity above 0.8."""
    import provision_fixture

    module = type(sys)("sentence_transformers")
    module.SentenceTransformer = provision_fixture.StandInSentenceTransformer
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    monkeypatch.setattr(informative, "_MODELS", {})
    test, gts, vocab = _case(tmp_path, capsys)
    pth = tmp_path / "p.pth"
    entries = write_predictions(pth, gts, "sgdet", vocab, 5)
    captions = captions_for(np.random.default_rng(5), gts, entries, vocab)
    captions = {k: v + [s.replace(" ", "  ") for s in v] for k, v in captions.items()}  # near, not equal
    (tmp_path / "c.json").write_text(json.dumps(captions))
    doc = evaluate(tmp_path, pth, test, "sgdet", capsys, "--captions", str(tmp_path / "c.json"), "--ir-encoder", "m")
    names, preds = vocab.object_classes, vocab.predicate_classes

    def unit(x):
        x = provision_fixture.embed(x)
        return x / np.maximum(np.sqrt((x * x).sum(axis=1, keepdims=True)), 1e-12)

    values = {k: [] for k in (5, 10, 20, 50, 100)}
    for gt, e in zip(gts, entries):
        caps = captions.get(str(gt.image_id))
        if not len(gt.rels) or not caps:
            continue
        p = as_read(e)
        strings = [f"{names[p.labels[s] - 1]} {preds[int(np.argmax(row[1:]))]} {names[p.labels[o] - 1]}"
                   for (s, o), row in zip(p.pairs.tolist(), p.rel_scores)]  # fmt: skip
        sims = unit(strings) @ unit(caps).T if strings else np.zeros((0, len(caps)))
        for k in values:
            values[k].append(len({j for row in sims[:k] for j in np.flatnonzero(row > 0.8)}) / len(caps))
    for k, v in values.items():
        assert abs(doc["metrics"][f"IR@{k}"] - float(np.mean(v))) < 1e-12, k
    exact = evaluate(tmp_path, pth, test, "sgdet", capsys, "--captions", str(tmp_path / "c.json"))
    assert doc["metrics"]["IR@100"] > exact["metrics"]["IR@100"]  # the doubled spaces match only by similarity


def _case(tmp_path, capsys):
    train, test = splits(tmp_path, 2, capsys)
    with SplitStore(test) as s:
        gts, vocab = list(s), s.vocab
    return test, gts, vocab


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda e: e[:-1], "images, but the GT split"),
        (lambda e: [{k: v for k, v in e[0].items() if k != "pred_rel_scores"}, *e[1:]], "'pred_rel_scores': missing"),
        (lambda e: [{**e[0], "mode": "cxcywh"}, *e[1:]], "field 'mode': box mode 'cxcywh'"),
        (lambda e: [{**e[0], "boxes": np.full_like(e[0]["boxes"], np.nan)}, *e[1:]], "field 'boxes'"),
        (lambda e: [{**e[0], "rel_pair_idxs": e[0]["rel_pair_idxs"] + 1000}, *e[1:]], "field 'rel_pair_idxs'"),
        (lambda e: [{**e[0], "pred_rel_scores": e[0]["pred_rel_scores"] * 3}, *e[1:]], "field 'pred_rel_scores'"),
        (lambda e: [{**e[0], "pred_labels": e[0]["pred_labels"].astype(np.float32)}, *e[1:]], "field 'pred_labels'"),
        (lambda e: [{**e[0], "boxes": [1, 2, 3, 4]}, *e[1:]], "field 'boxes': expected a tensor"),
        (lambda e: [e[0]["boxes"], *e[1:]], "expected a dict of tensors"),
    ],
)
def test_bad_files_get_one_line_naming_the_file_and_field(tmp_path, capsys, change, says):
    test, gts, vocab = _case(tmp_path, capsys)
    entries = write_predictions(tmp_path / "good.pth", gts, "predcls", vocab, 1)
    entries[0]["rel_pair_idxs"] = np.array([[0, 1]], np.int64)  # image 0 has a pair, so its fields are all read
    entries[0]["pred_rel_scores"] = entries[0]["pred_rel_scores"][:1] if len(entries[0]["pred_rel_scores"]) else (
        np.full((1, vocab.num_predicates + 1), 1 / (vocab.num_predicates + 1), np.float32))  # fmt: skip
    bad = tmp_path / "predictions.pth"
    save_zip(change(entries), bad)
    out = tmp_path / "r.json"
    code = main(["evaluate", str(bad), "--gt", str(test), "--protocol", "sgg-benchmark", "--task", "predcls", "-o",
                 str(out)])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "predictions.pth" in err and says in err, err
    assert not out.exists()


def test_a_file_of_another_kind_is_still_read_as_what_it_is(tmp_path, capsys):
    """A torch file holding a dict is Scene-Graph-Benchmark's eval_results, not SGG-Benchmark's list."""
    test, gts, vocab = _case(tmp_path, capsys)
    save_zip({"groundtruths": [], "predictions": [1]}, tmp_path / "x.pth")
    code = main(["evaluate", str(tmp_path / "x.pth"), "--gt", str(test), "--task", "predcls"])
    assert code == 2 and "groundtruths" in capsys.readouterr().err


def test_the_audit_tells_its_iou_and_test_gt_from_scene_graph_benchmarks(tmp_path, capsys):
    """On a split that keeps every relation, the audit's SGG-Benchmark variant (its IoU, one predicate per pair drawn
    with the seed, misses counted) is what `evaluate --protocol sgg-benchmark` gives on the split drawn with that
    seed, and its Scene-Graph-Benchmark variant (IoU +1, every relation, skipped) what `--protocol reference` gives;
    a published number is matched to the one it is."""
    root = write_coco_sgg(tmp_path / "coco", 11)
    for name, flags in (("drawn", ["--draw-seed", "3"]), ("all", ["--keep-all-relations"])):
        assert (
            main(["split", "--coco-sgg", str(root), "-o", str(tmp_path / name), "--splits", "train,test", *flags]) == 0
        )
    assert main(["stats", str(tmp_path / "drawn/train.h5"), "-o", str(tmp_path / "stats.h5")]) == 0
    capsys.readouterr()
    with SplitStore(tmp_path / "all/test.h5") as s:
        gts, vocab = list(s), s.vocab
    pth = tmp_path / "predictions.pth"
    write_predictions(pth, gts, "predcls", vocab, 11)
    its = evaluate(tmp_path, pth, tmp_path / "drawn/test.h5", "predcls", capsys)["metrics"]
    assert main(["evaluate", str(pth), "--gt", str(tmp_path / "all/test.h5"), "--task", "predcls", "-o",
                 str(tmp_path / "ref.json")]) == 0  # fmt: skip
    ref = json.loads((tmp_path / "ref.json").read_text())["metrics"]
    published = [f"R@50={100 * its['R@50']:.2f}", f"mR@100={100 * ref['mR@100']:.2f}"]
    code = main(["audit", str(pth), "--gt", str(tmp_path / "all/test.h5"), "--task", "predcls", "--protocol",
                 "sgg-benchmark", "--draw-seed", "3", "-o", str(tmp_path / "audit.json"),
                 *(a for p in published for a in ("--published", p))])  # fmt: skip
    capsys.readouterr()
    assert code == 0
    doc = json.loads((tmp_path / "audit.json").read_text())

    def value(metric, k, iou, gt, protocol):
        (v,) = [r["value"] for r in doc["variants"] if (r["metric"], r["k"], r["constraint"], r["aggregation"],
                r["protocol"], r["images"]) == (metric, k, "GC", "per-image", protocol, "all")
                and iou in r["iou"] and r["gt"].startswith(gt)]  # fmt: skip
        return v

    for k in (20, 50, 100):
        for metric in ("R", "mR"):
            assert value(metric, k, "SGG-Benchmark", "one predicate", "strict") == its[f"{metric}@{k}"]
            assert value(metric, k, "(Scene-Graph-Benchmark)", "as stored", "skipped") == ref[f"{metric}@{k}"]
    verdicts = [p["verdict"] for p in doc["published"]]
    assert verdicts[0].startswith("the reference variant")
    assert verdicts[1].startswith("WARNING not the reference variant") and "Scene-Graph-Benchmark" in verdicts[1]


def test_a_coco_split_clipped_to_w_is_refused_by_a_protocol_that_never_clips(tmp_path, capsys):
    """OvSGTR's loader keeps boxes past the border: a COCO-style split clipped to [0, W] is named as clipped, and the
    remedy is its own command with --no-clip."""
    test, gts, vocab = _case(tmp_path, capsys)
    write_predictions(tmp_path / "p.pth", gts, "sgdet", vocab, 1)
    code = main(["evaluate", str(tmp_path / "p.pth"), "--gt", str(test), "--task", "sgdet", "--protocol", "ovsgtr"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "this GT was clipped" in err and "`sgg-eval split --coco-sgg DIR --no-clip`" in err, err
