"""``sgg-eval evaluate --per-image FILE`` (issue 49): every evaluated image's GT triplets with their first-hit rank
and its top-K predicted triplets with the GT rows they hit, checked against the slow loop reference
(``reference_metrics.Image``); reduced, the ranks give the document's R@K, ngR@K and mR@K."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_case, small_vocab
from reference_metrics import Image

from sgg_eval.cli import main
from sgg_eval.core.defaults import PER_IMAGE_K, RECALL_KS
from sgg_eval.data.store import write_predictions, write_split
from sgg_eval.data.types import PredictionMeta, SplitMeta
from sgg_eval.metrics.names import metric_name

VOCAB = small_vocab(6, 5)


def _write(tmp_path, task: str, n: int = 60, seed: int = 3, max_objects: int = 6):
    rng = np.random.default_rng(seed)
    cases = [random_case(rng, VOCAB, task, 10 + i, max_objects=max_objects) for i in range(n)]
    write_split(tmp_path / "test.h5", SplitMeta("test", VOCAB, "unit", True, "unit"), [g for g, _ in cases])
    meta = PredictionMeta(task, "probabilities", VOCAB, "m", True, "unit")
    write_predictions(tmp_path / "pred.h5", meta, [p for _, p in cases])
    return cases


def _run(tmp_path, task: str, *extra: str) -> tuple[dict, list[dict]]:
    args = ["evaluate", str(tmp_path / "pred.h5"), "--gt", str(tmp_path / "test.h5"), "--task", task]
    assert main([*args, "-o", str(tmp_path / "m.json"), "--per-image", str(tmp_path / "img.jsonl"), *extra]) == 0
    lines = (tmp_path / "img.jsonl").read_text().splitlines()
    return json.loads((tmp_path / "m.json").read_text()), [json.loads(line) for line in lines]


@pytest.mark.parametrize("task", ["predcls", "sgcls", "sgdet"])
def test_records_against_the_loop_reference(tmp_path, task):
    cases = _write(tmp_path, task, max_objects=14)  # crowded images: the top-K cut binds
    _, records = _run(tmp_path, task)
    evaluated = [(g, p) for g, p in cases if len(g.rels) and len(p.pairs)]
    assert [r["image"] for r in records] == [g.image_id for g, _ in evaluated]  # input order, evaluated only
    for record, (gt, pred) in zip(records, evaluated):
        im = Image(gt, pred, task, "score", "probabilities")
        rows = range(len(gt.rels))
        first = [next((q for q, (j, c) in enumerate(im.gc) if im.cand_matches(r, j, c)), None) for r in rows]
        ng_first = [next((q for q, (j, c) in enumerate(im.ng) if im.cand_matches(r, j, c)), None) for r in rows]
        assert [row["rank"] for row in record["gt"]] == first
        assert [row["ng_rank"] for row in record["gt"]] == ng_first
        names = [VOCAB.predicate_classes[int(p) - 1] for p in gt.rels[:, 2]]
        assert [(row["subject"], row["object"], row["predicate"]) for row in record["gt"]] == [
            (int(s), int(o), n) for (s, o, _), n in zip(gt.rels.tolist(), names)
        ]
        top = im.gc[:PER_IMAGE_K]
        assert len(record["predicted"]) == len(top)
        objs = record["predicted_objects"]
        for q, ((j, c), said) in enumerate(zip(top, record["predicted"])):
            a, b = im.pairs[j]
            assert said["predicate"] == VOCAB.predicate_classes[c - 1]
            assert objs[said["subject"]]["label"] == VOCAB.object_classes[int(im.labels[a]) - 1]
            assert objs[said["subject"]]["box"] == [round(float(v), 2) for v in im.boxes[a]]
            assert objs[said["object"]]["box"] == [round(float(v), 2) for v in im.boxes[b]]
            assert said["hits"] == [r for r in rows if first[r] == q]  # the rows it is the first match of


def test_the_ranks_reduce_to_the_documents_recall(tmp_path):
    _write(tmp_path, "sgdet", n=120, max_objects=14)
    doc, records = _run(tmp_path, "sgdet", "--jobs", "2")
    assert len(records) == doc["counts"]["images_evaluated"]
    for k in RECALL_KS:
        for field, ng in (("rank", False), ("ng_rank", True)):
            hit = [[row[field] is not None and row[field] < k for row in r["gt"]] for r in records]
            recall = np.mean([np.mean(h) for h in hit])
            assert recall == pytest.approx(doc["metrics"][metric_name("R", k, ng=ng)], abs=1e-15)
            per_c = {c: [] for c in VOCAB.predicate_classes}  # mR: per predicate, the mean over its images
            for r, h in zip(records, hit):
                for c in {row["predicate"] for row in r["gt"]}:
                    per_c[c].append(np.mean([x for x, row in zip(h, r["gt"]) if row["predicate"] == c]))
            mean_recall = np.mean([np.mean(v) if v else 0.0 for v in per_c.values()])
            assert mean_recall == pytest.approx(doc["metrics"][metric_name("mR", k, ng=ng)], abs=1e-15)


def test_the_same_bytes_for_any_number_of_jobs_and_none_on_bad_input(tmp_path, capsys):
    _write(tmp_path, "predcls", n=300)
    _run(tmp_path, "predcls", "--jobs", "1")
    one = (tmp_path / "img.jsonl").read_bytes()
    _run(tmp_path, "predcls", "--jobs", "2")
    assert (tmp_path / "img.jsonl").read_bytes() == one
    out, _ = tmp_path / "bad.jsonl", capsys.readouterr()
    write_split(tmp_path / "other.h5", SplitMeta("test", VOCAB, "unit", True, "unit"), [])
    args = ["evaluate", str(tmp_path / "pred.h5"), "--gt", str(tmp_path / "other.h5"), "--task", "predcls"]
    assert main([*args, "--per-image", str(out)]) == 2  # a GT without these images: refused, nothing written
    assert not out.exists() and capsys.readouterr().err.count("\n") == 1
    assert main(["evaluate", "x.zip", "--psg", "psg.json", "--per-image", str(out)]) == 2
    assert "--per-image" in capsys.readouterr().err and not out.exists()
