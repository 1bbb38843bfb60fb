"""``--protocol provision`` (issue 48): ProVision's text reader on each of its branches, torch's IoU types, the
scores against a loop reference written from the rules, and golden numbers its own code printed
(scripts/provision_eval.py; SBERT stood in for by ``provision_fixture.embed`` on both sides)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from provision_fixture import embed, write_fixture
from provision_reference import reference, torch_iou

from sgg_eval.core.errors import InputError
from sgg_eval.metrics.iou import torchvision_iou, torchvision_pair_iou
from sgg_eval.metrics.names import PROVISION_VALUES
from sgg_eval.text.provision.answers import gpt_text, parse_scene_graph
from sgg_eval.text.provision.evaluate import run_provision_evaluation
from sgg_eval.text.provision.gt import psg_names, read_provision_gt
from sgg_eval.text.provision.metrics import NearestClass, object_query, predicate_query
from sgg_eval.text.provision.rows import read_provision_answers

GOLDEN = Path(__file__).parent / "data" / "provision_golden.json"
OBJECTS = "Objects:\nregion1: person\nregion2: horse\nregion3: wall-other-merged\n"


def _read(text, mode=2):
    p = parse_scene_graph(text, mode)
    return p.outcome, p.names, p.triplets


def test_the_text_is_read_as_provision_reads_it():
    assert _read(OBJECTS + "Relations:\nregion1: region2 riding, region3 beside") == (
        "read", ["person", "horse", "wall-other-merged"], [(0, 1, "riding"), (0, 2, "beside")])  # fmt: skip
    # region0 and a region without a number are -1; an item without a space is skipped; two ':' skip the line
    assert _read(OBJECTS + "Relations:\nregion0: regionX on, oops, region2  in front of\nregion1: a: b")[2] == [
        (-1, -1, "on"), (-1, 1, " in front of")]  # fmt: skip
    assert _read(OBJECTS + "no relations here")[0] == "no_relations"
    assert _read(OBJECTS + "Relations:\nregion1: region2 on\nRelations:")[0] == "dropped"  # twice
    assert _read(OBJECTS + "Relations:\nregion1: region2")[0] == "dropped"  # one target, no predicate
    assert _read(OBJECTS + "Relations:\nregion1: region" + "7" * 5000 + " on")[0] == "dropped"  # int() refuses
    assert _read("region1: person\nRelations:\nregion1: region1 on")[0] == "crashed"  # no Objects:
    assert _read("Objects:\nregion1: person\n\nregion2: dog\nRelations:\n")[0] == "crashed"  # a line without ':'
    assert _read(None)[0] == "crashed"
    # 's:' becomes region1: when region1 is absent, else is deleted (and the line, left without ':', skipped)
    assert _read(OBJECTS + "Relations:\nobjects: region2 on")[2] == [(0, 1, "on")]
    assert _read(OBJECTS + "Relations:\nregion1: region2 on\nthings: region1 on")[2] == [(0, 1, "on")]
    # mode 0, and its empty relations block (a ValueError: dropped)
    assert _read(OBJECTS + "Relations:\nregion1: on: region2, region3; holding: region2;\n", 0)[2] == [
        (0, 1, "on"), (0, 2, "on"), (0, 1, "holding")]  # fmt: skip
    assert _read(OBJECTS + "Relations:\n", 0)[0] == "dropped"


def test_a_gpt_graph_is_written_as_process_gpt_sg_writes_it():
    graph = {"1": {"name": "horse", "bbox": [1, 2, 3, 4], "rel": {}},
             "0": {"name": "person", "bbox": [0, 0, 5, 5.5], "rel": {"riding": [1], "near": [1, 1.0]}}}  # fmt: skip
    text, boxes = gpt_text(graph)
    assert text == ("Objects:\nregion1: person\nregion2: horse\n\nRelations:\nregion1: riding: region2;near: region2, "
                    "region2.0;\n")  # fmt: skip
    assert boxes == [[0, 0, 5, 5.5], [1, 2, 3, 4]]
    assert _read(text, 0)[2] == [(0, 1, "riding"), (0, 1, "near"), (0, 1, "near")]
    assert gpt_text({"x": {"name": "a", "bbox": [0, 0, 1, 1], "rel": {}}}) is None
    assert gpt_text({"0": {"name": "a", "bbox": [0, 0, 1, 1], "rel": {"on": "12"}}}) is None


def test_iou_in_the_types_torch_computes_in():
    big, half = [0, 0, 16777217, 1], [0, 0, 8388608, 1]
    assert 8388608 / 16777217 < 0.5 and torch_iou(big, half) == 0.5  # int64, then float32: meets the threshold
    assert torchvision_pair_iou([big], [half])[0, 0] == np.float32(0.5)
    assert torchvision_pair_iou([[float(v) for v in big]], [half])[0, 0] == np.float32(
        0.5
    )  # float32 rounds the box itself
    assert torchvision_pair_iou([[0, 0, 10, 10]], [[0, 0, 20, 10]])[0, 0] == 0.5  # exactly 0.5
    assert np.isnan(torchvision_pair_iou([[1, 1, 1, 1]], [[1, 1, 1, 1]])[0, 0])  # zero union: never a match
    rng = np.random.default_rng(3)
    a = [[int(v) for v in rng.integers(0, 50, 4)] for _ in range(20)] + [[1.5, 2.0, 30.25, 40.0]]
    b = [[int(v) for v in rng.integers(0, 50, 4)] for _ in range(15)] + [[0.5, 1, 20, 33.5]]
    got = torchvision_pair_iou(a, b)
    want = np.array([[torch_iou(x, y) for y in b] for x in a], dtype=np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(torchvision_iou(np.array(a[:20]), np.array(b[:15])), want[:20, :15])


def test_names_go_to_the_nearest_class():
    objects, predicates = psg_names()
    names = NearestClass(embed, objects, object_query)
    assert [objects[i] for i in names.labels(["person", "horse", "wall", "floor-wood"])] == [
        "person", "horse", "wall-other-merged", "floor-wood"]  # fmt: skip
    assert object_query("floor-wood") == "this object is floor in wood"
    assert object_query("wall-other-merged") == "this object is wall"
    assert predicates[NearestClass(embed, predicates, predicate_query).labels(["riding"])[0]] == "riding"
    assert names.listing("objects")[0] == {"kind": "objects", "name": "floor-wood", "read_as": "floor-wood",
                                           "times": 1}  # fmt: skip


def _run(out: Path, kind: str, top_k: int, seed: int) -> dict:
    gt = out / "psg_gt.json" if kind == "gpt" else None
    return run_provision_evaluation(out / f"{kind}.jsonl", gt, embed, model="stand-in", top_k=top_k, seed=seed)


def _fixture(out: Path, seed: int) -> Path:
    write_fixture(out, seed)
    (out / "gt.json").rename(out / "psg_gt.json")
    return out


@pytest.mark.parametrize("seed,kind,top_k", [(7, "e2e", 0), (8, "e2e", 4), (9, "gpt", 3), (10, "gpt", 0)])
def test_against_the_loop_reference(tmp_path, seed, kind, top_k):
    out = _fixture(tmp_path, seed)
    doc = _run(out, kind, top_k, seed)
    rows, _, _ = read_provision_answers(out / f"{kind}.jsonl")
    truth = read_provision_gt(out / "psg_gt.json")
    objects, predicates = psg_names()
    expected = reference(rows, truth, embed, objects, predicates, object_query, predicate_query, top_k, seed)
    assert doc["metrics"] == pytest.approx(expected, abs=1e-12)
    assert doc["counts"]["answers_crashed"] == 1 and doc["counts"]["answers_dropped"] > 0
    assert (doc["counts"]["relations_cut_by_top_k"] > 0) == (top_k > 0)


def test_golden_numbers_printed_by_provision(tmp_path):
    """ProVision's own code on these fixtures (scripts/provision_eval.py), its random seeded as sgg-eval's."""
    golden = json.loads(GOLDEN.read_text())
    assert len(golden["runs"]) == 36
    for run, expected in golden["runs"].items():
        seed, kind, top_k = run.split("/")
        out = tmp_path / seed
        if not out.exists():
            _fixture(out, int(seed))
        doc = _run(out, kind, int(top_k), int(seed))
        m = doc["metrics"]
        got = {"recall": 100 * m["ngR_provision"], "mean_recall": 100 * m["ng-mR_provision"],
               "object_recall": 100 * m["objR_provision"], "coverage": m["coverage_provision"],
               "images": doc["counts"]["images_scored"], "cut": doc["counts"]["relations_cut_by_top_k"]}  # fmt: skip
        assert got == pytest.approx(expected, abs=1e-12), run


def test_refusals(tmp_path):
    out = _fixture(tmp_path, 1)
    with pytest.raises(InputError, match="no --gt"):
        run_provision_evaluation(out / "e2e.jsonl", out / "psg_gt.json", embed, model="x")
    with pytest.raises(InputError, match="scored on --gt"):
        run_provision_evaluation(out / "gpt.jsonl", None, embed, model="x")
    gt = json.loads((out / "psg_gt.json").read_text())
    (out / "few_psg.json").write_text(json.dumps({"data": gt["data"][:3]}))
    with pytest.raises(InputError, match="another GT file"):
        run_provision_evaluation(out / "gpt.jsonl", out / "few_psg.json", embed, model="x")
    gt["data"][2]["relations"].append([0, 99, 1])
    (out / "bad_psg.json").write_text(json.dumps(gt))
    with pytest.raises(InputError, match=r"image 2 \(#2\).*relations"):
        read_provision_gt(out / "bad_psg.json")
    line = json.loads((out / "e2e.jsonl").read_text().splitlines()[0])
    (out / "bad.jsonl").write_text(json.dumps({**line, "gt_boxes": line["gt_boxes"][1:]}))
    with pytest.raises(InputError, match="gt_boxes"):
        read_provision_answers(out / "bad.jsonl")


def _cli(tmp_path, *args, stand_in=True):
    """The command, with SBERT stood in for by a ``sentence_transformers`` module on the path (or none at all)."""
    shim = tmp_path / "shim" / "sentence_transformers"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "__init__.py").write_text(
        "from provision_fixture import StandInSentenceTransformer as SentenceTransformer\n"
        if stand_in else "raise ImportError('not installed')\n"
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim.parent), str(Path(__file__).parent)])}
    cmd = [sys.executable, "-m", "sgg_eval.cli", "evaluate", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def test_the_command_line(tmp_path):
    out = _fixture(tmp_path, 2)
    ok = _cli(tmp_path, out / "gpt.jsonl", "--text-graphs", "--protocol", "provision", "--gt", out / "psg_gt.json",
              "--top-k", "3", "--seed", "4", "-o", out / "r.json")  # fmt: skip
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr
    assert all(n in ok.stdout for n in PROVISION_VALUES) and "that stop ProVision" in ok.stdout
    doc = json.loads((out / "r.json").read_text())
    assert doc["metrics"] == _run(out, "gpt", 3, 4)["metrics"]
    assert doc["names"]["model"] == "sentence-transformers/all-MiniLM-L6-v2" and doc["names"]["mapped"]
    missing = _cli(tmp_path, out / "e2e.jsonl", "--text-graphs", "--protocol", "provision", stand_in=False)
    assert missing.returncode == 2 and "sgg-eval[provision]" in missing.stderr
    assert missing.stderr.count("\n") == 1
    wrong = _cli(tmp_path, out / "e2e.jsonl", "--text-graphs", "--protocol", "sgvlm", "--top-k", "5")
    assert wrong.returncode == 2 and "--top-k is an option of --protocol provision only" in wrong.stderr
