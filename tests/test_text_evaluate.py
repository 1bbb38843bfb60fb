"""`sgg-eval evaluate ANSWERS --text-graphs --gt SPLIT` (text/sets_evaluate.py, issue 48): the sets protocol on every
image of the split, unanswered and unreadable answers as empty ones, unknown names dropped and counted, by hand."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from sgg_eval.core.errors import InputError
from sgg_eval.data.store import write_split
from sgg_eval.data.types import GTImage, SplitMeta
from sgg_eval.data.vg150_facts import vg150_vocabulary
from sgg_eval.text.sets_evaluate import run_text_evaluation

VOCAB = vg150_vocabulary()
C, P = VOCAB.object_classes.index, VOCAB.predicate_classes.index
BOXES = np.array([[0, 0, 9, 9], [20, 20, 29, 29], [40, 40, 49, 49]], dtype=np.float32)


def _world(tmp_path):
    labels = np.array([C("man"), C("horse"), C("hat")]) + 1
    riding, wearing, on = P("riding") + 1, P("wearing") + 1, P("on") + 1
    images = [
        GTImage(1, 640, 480, BOXES, labels, np.array([[0, 1, riding], [0, 2, wearing]])),
        GTImage(2, 640, 480, BOXES, labels, np.array([[0, 1, on]])),
        GTImage(3, 640, 480, BOXES, labels, np.zeros((0, 3), dtype=np.int64)),
        GTImage(4, 640, 480, BOXES, labels, np.array([[0, 1, on]])),
    ]
    write_split(tmp_path / "test.h5", SplitMeta("test", VOCAB, "vg150", False, "test"), images)
    answers = [
        {"image_id": 1, "objects": [{"name": "man", "box": [0, 0, 9, 9]}, {"name": "Horse", "box": [20, 20, 29, 29]},
                                    {"name": "hats", "box": [40, 40, 49, 49]}, {"name": "dragon", "box": [0, 0, 1, 1]}],
         "relations": [[0, "riding", 1], [0, "riding", 1], [0, "wearing", 2], [3, "on", 0], [0, "levitating", 1]]},
        {"image_id": 4, "objects": "not a list", "relations": []},
    ]  # fmt: skip
    (tmp_path / "answers.jsonl").write_text("\n".join(json.dumps(a) for a in answers) + "\n")
    return str(tmp_path / "answers.jsonl"), str(tmp_path / "test.h5")


def test_the_sets_protocol_by_hand(tmp_path):
    answers, gt = _world(tmp_path)
    doc = run_text_evaluation(answers, gt)
    m, c = doc["metrics"], doc["counts"]
    for ng in ("", "ng-"):  # image 1 fully right, images 2 (unanswered) and 4 (unreadable) empty
        assert (
            m[f"{ng}R_set"] == pytest.approx(1 / 3)
            and m[f"{ng}P_set"] == 1.0
            and m[f"{ng}F1_set"] == pytest.approx(1 / 3)
        )
        assert m[f"{ng}R_set_pooled"] == 0.5 and m[f"{ng}P_set_pooled"] == 1.0
        assert m[f"{ng}mR_set"] == pytest.approx(2 / 50)  # riding and wearing 1, on 0, the 47 absent ones 0
    assert c["images_evaluated"] == 3 and c["images_skipped_no_gt"] == 1
    assert c["images_unanswered"] == 2 and c["images_failed"] == 1  # image 3 is unanswered too
    assert c["objects_unknown_name"] == 1 and c["relations_without_object"] == 1
    assert c["relations_unknown_predicate"] == 1  # "levitating"
    assert doc["names"]["read_through_the_table"] == [{"kind": "objects", "name": "hats", "read_as": "hat", "times": 1}]


def test_the_command_line(tmp_path):
    answers, gt = _world(tmp_path)
    cli = [sys.executable, "-m", "sgg_eval.cli", "evaluate", answers, "--text-graphs"]
    ok = subprocess.run([*cli, "--gt", gt, "-o", str(tmp_path / "m.json")], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "R_set=33.33 P_set=100.00" in ok.stdout and "2 unanswered and 1 unreadable" in ok.stdout
    for extra in ([], ["--gt", gt, "--task", "sgdet"], ["--gt", gt, "--protocol", "reference"]):
        run = subprocess.run([*cli, *extra], capture_output=True, text=True)
        assert run.returncode == 2 and run.stderr.count("\n") == 1, (extra, run.stderr)
    (tmp_path / "other.jsonl").write_text(json.dumps({"image_id": 77, "objects": [], "relations": []}) + "\n")
    with pytest.raises(InputError, match="another split"):
        run_text_evaluation(str(tmp_path / "other.jsonl"), gt)
