"""GQA200 (SHA-GCL's split): generated files in its format read into split stores equal a loop written here
from the documented rules (docs/definitions.md, "GQA200"), and bad files are refused in one line naming the
file, the image and the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gqa_fixture import GQA200_CLASSES as CLASSES
from gqa_fixture import GQA200_PREDICATES as PREDICATES
from gqa_fixture import assert_refused_in_one_line, write_gqa200

from sgg_eval.data.gqa200 import SKIPPED_TEST_RECORD
from sgg_eval.data.store import SplitStore


def _expected(root: Path, split: str, num_val_im: int) -> list[tuple]:
    """The documented rules, one image at a time."""
    doc = json.loads((root / ("GQA_200_Train.json" if split == "train" else "GQA_200_Test.json")).read_text())
    images = []
    for i, name in enumerate(doc["filenames_all"]):
        if split != "train" and i == 5579:  # the 5,580th record of the test file
            continue
        boxes, rels = doc["gt_boxes_all"][i], doc["relationships_all"][i]
        if len(boxes) == 0 or len(rels) == 0:
            continue
        w, h = doc["img_info_all"][i]["width"], doc["img_info_all"][i]["height"]
        clipped = [[min(max(np.float32(v), 0), (w if j % 2 == 0 else h) - 1) for j, v in enumerate(b)] for b in boxes]
        images.append((int(name.split(".")[0]), w, h, clipped, doc["gt_classes_all"][i], rels))
    return images[:num_val_im] if split == "val" else images


def _split(root: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sgg_eval.cli", "split", "--gqa200-dir", str(root), "-o", str(out), *extra],
        capture_output=True,
        text=True,
    )


def test_split_stores_equal_the_documented_rules(tmp_path):
    root = write_gqa200(tmp_path / "gqa200")
    proc = _split(root, tmp_path / "splits", "--num-val-im", "50")
    assert proc.returncode == 0, proc.stderr
    for split in ("train", "val", "test"):
        want = _expected(root, split, 50)
        assert f"{tmp_path / 'splits' / split}.h5: {len(want)} images" in proc.stdout
        with SplitStore(tmp_path / "splits" / f"{split}.h5") as store:
            assert store.vocab.object_classes == tuple(CLASSES[1:])
            assert store.vocab.predicate_classes == tuple(PREDICATES[1:])
            assert not store.meta.simulated
            got = list(store)
        assert [g.image_id for g in got] == [e[0] for e in want]
        for g, (image_id, w, h, boxes, labels, rels) in zip(got, want):
            assert (g.width, g.height) == (w, h), image_id
            np.testing.assert_array_equal(g.boxes, np.array(boxes, dtype=np.float32).reshape(-1, 4))
            np.testing.assert_array_equal(g.labels, labels)
            np.testing.assert_array_equal(g.rels, np.array(rels).reshape(-1, 3))
    with SplitStore(tmp_path / "splits" / "val.h5") as val, SplitStore(tmp_path / "splits" / "test.h5") as test:
        assert list(val.image_ids) == list(test.image_ids[:50])  # val is the first kept test images
        assert 100_000 + SKIPPED_TEST_RECORD not in test.image_ids  # the skipped record, though keepable


def _mutated(tmp_path: Path, name: str, change) -> Path:
    root = write_gqa200(tmp_path / "gqa200", n_test=SKIPPED_TEST_RECORD + 5)
    path = root / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return root


def _first_kept(doc: dict) -> int:
    return next(i for i in range(len(doc["filenames_all"])) if doc["gt_boxes_all"][i] and doc["relationships_all"][i])


def _relation_to_unknown_box(doc):
    i = _first_kept(doc)
    doc["relationships_all"][i][0][1] = len(doc["gt_boxes_all"][i])


def _negative_width(doc):
    doc["img_info_all"][_first_kept(doc)]["width"] = -3


def _inverted_box(doc):
    i = _first_kept(doc)
    doc["gt_boxes_all"][i][0] = [50, 10, 20, 30]


def _bool_class(doc):
    doc["gt_classes_all"][_first_kept(doc)][0] = True


@pytest.mark.parametrize(
    "name, change, says",
    [
        ("GQA_200_Train.json", _relation_to_unknown_box, ["GQA_200_Train.json", "image 2", "'relationships_all'"]),
        ("GQA_200_Train.json", _negative_width, ["GQA_200_Train.json", "image 2", "'img_info_all'"]),
        ("GQA_200_Train.json", _inverted_box, ["GQA_200_Train.json", "image 2", "'gt_boxes_all'"]),
        ("GQA_200_Train.json", _bool_class, ["GQA_200_Train.json", "image 2", "'gt_classes_all'"]),
        (
            "GQA_200_Test.json",
            lambda d: d["gt_classes_all"].pop(),
            ["GQA_200_Test.json", "'gt_classes_all'", "entries, but filenames_all has"],
        ),
        (
            "GQA_200_ID_Info.json",
            lambda d: d["rel_count"].update({"flying over": 3}),
            ["GQA_200_ID_Info.json", "'rel_count'", "unknown predicate 'flying over'"],
        ),
        (
            "GQA_200_ID_Info.json",
            lambda d: d["rel_name_to_id"].update({"rel1": 2}),
            ["GQA_200_ID_Info.json", "'rel_name_to_id'"],
        ),
        (
            "GQA_200_ID_Info.json",
            lambda d: d["rel_name_to_id"].update({"rel5": -1}),  # -1 would index the last name, rel5 itself
            ["GQA_200_ID_Info.json", "'rel_name_to_id'", "'rel5' -> -1"],
        ),
        ("GQA_200_ID_Info.json", lambda d: d["ind_to_classes"].pop(0), ["'ind_to_classes'", "__background__"]),
    ],
)
def test_a_bad_file_is_refused_in_one_line_naming_file_image_and_field(tmp_path, name, change, says):
    root = _mutated(tmp_path, name, change)
    assert_refused_in_one_line(_split(root, tmp_path / "splits"), says, tmp_path / "splits")


def test_an_eval_results_file_made_on_gqa200_evaluates_against_its_split(tmp_path):
    """A Scene-Graph-Benchmark-style eval_results.pytorch on GQA200 (100 predicates: not VG150) is scored on
    the GQA200 split store after the file's GT is checked against it, with statistics from its training split;
    any other split's store is refused."""
    from torch_writer import eval_results_object, save_zip

    from sgg_eval.cli import main
    from sgg_eval.data.types import PredImage

    root = write_gqa200(tmp_path / "gqa200")
    assert _split(root, tmp_path / "s", "--num-val-im", "20").returncode == 0
    assert main(["stats", str(tmp_path / "s/train.h5"), "--test", str(tmp_path / "s/test.h5"),
                 "-o", str(tmp_path / "stats.h5")]) == 0  # fmt: skip
    rng = np.random.default_rng(1)
    with SplitStore(tmp_path / "s/val.h5") as val:
        cases = []
        for g in val:
            pairs = np.array([(s, o) for s in range(len(g.labels)) for o in range(len(g.labels)) if s != o] or [[0, 0]])
            pairs = pairs[: 0 if len(g.labels) < 2 else len(pairs)]
            scores = rng.random((len(pairs), len(PREDICATES))).astype(np.float32)
            scores /= scores.sum(axis=1, keepdims=True) if len(scores) else 1
            cases.append((g, PredImage(g.image_id, g.boxes, g.labels, np.ones(len(g.labels)), pairs, scores)))
    save_zip(eval_results_object(cases), tmp_path / "eval_results.pytorch")
    args = ["evaluate", str(tmp_path / "eval_results.pytorch"), "--task", "predcls"]
    out = tmp_path / "m.json"
    assert main([*args, "--gt", str(tmp_path / "s/val.h5"), "--stats", str(tmp_path / "stats.h5"), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["counts"]["images_input"] == 20 and doc["metrics"]["R@50"] is not None
    assert doc["metrics"]["zR@50"] is not None  # zero-shot from the GQA200 training statistics
    assert list(doc["per_predicate"]["mR@100"]) == PREDICATES[1:]  # GQA200's predicates, by name
    assert main([*args, "--gt", str(tmp_path / "s/test.h5")]) == 2  # not the file's images
