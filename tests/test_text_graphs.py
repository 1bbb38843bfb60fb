"""The reader of text scene graphs in sgg-eval's JSONL (text/graphs.py, issue 48): every problem of an
answer counted per image, none fatal; answers for another split refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sgg_eval.core.errors import InputError
from sgg_eval.text.graphs import read_text_graphs

SIZES = {1: (640, 480), 2: (100, 200), 3: (50, 50), 4: (10, 10)}


def _write(tmp_path, lines) -> str:
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return str(path)


def test_objects_relations_ids_and_grid(tmp_path):
    path = _write(tmp_path, [
        {"image_id": 1, "objects": [{"name": "man", "box": [10, 20, 110, 220]}, {"name": "horse", "box": [0, 0, 5, 5]}],
         "relations": [[0, "riding", 1], [1, "near", 0]]},
        {"image_id": "2", "box_scale": [1000, 1000],
         "objects": [{"id": "man.1", "name": "man", "box": [0, 0, 500, 1000]},
                     {"id": "hat.1", "name": "hat", "box": [100, 100, 200, 200]}],
         "relations": [["man.1", "wearing", "hat.1"]]},
    ])  # fmt: skip
    answers, report = read_text_graphs(path, SIZES)
    first = answers[1]
    assert first.names == ("man", "horse") and first.predicates == ("riding", "near")
    assert first.subjects.tolist() == [0, 1] and first.objects.tolist() == [1, 0]
    assert np.array_equal(first.boxes, [[10, 20, 110, 220], [0, 0, 5, 5]])
    second = answers[2]  # an integer id written as text, boxes on a 1000 x 1000 grid of a 100 x 200 image
    assert np.allclose(second.boxes, [[0, 0, 50, 200], [10, 20, 20, 40]])
    assert second.subjects.tolist() == [0] and second.objects.tolist() == [1]
    assert report.counts["lines"] == 2 and sum(v for k, v in report.counts.items() if k != "lines") == 0


def test_every_problem_is_counted_and_none_is_fatal(tmp_path):
    path = _write(tmp_path, [
        "not json at all",
        {"objects": [], "relations": []},  # no image id
        {"image_id": True, "objects": [], "relations": []},
        {"image_id": 1, "objects": "man", "relations": []},  # not lists: the image's answer failed
        {"image_id": 1, "objects": [], "relations": []},  # a second answer for image 1
        {"image_id": 2, "objects": [{"name": "a", "box": [0, 0, 1]}, {"name": "", "box": [0, 0, 1, 1]},
                                    {"name": "b", "box": [5, 5, 1, 1]}, {"name": "c", "box": [0, 0, 1, "1"]},
                                    {"name": "d", "box": [-5, 0, 150, 10]}, {"name": "e", "box": [1, 1, 2, 2]}],
         "relations": [[0, "on", 5], [4, "on", 5], [4, 3, 5], [4, "on"], [True, "on", 5], ["x", "on", 4]]},
        {"image_id": 3, "box_scale": [0, 10], "objects": [], "relations": []},
        '{"image_id": 4, "objects": [{"name": "f", "box": [0, 0, 1, 1e999]}], "relations": []}',  # not finite
    ])  # fmt: skip
    answers, report = read_text_graphs(path, SIZES)
    c = report.counts
    assert c["unreadable_lines"] == 3 and c["duplicate_answers"] == 1 and c["failures"] == 2
    assert answers[1].failure and answers[3].failure and answers[4].names == ()
    assert c["objects_dropped"] == 5 and answers[2].names == ("d", "e")
    assert c["relations_dropped"] == 5 and answers[2].predicates == ("on",)
    assert c["boxes_outside"] == 1 and any("boxes_outside" in p for p in report.problems[2])


def test_answers_for_another_split_and_bad_files_are_refused(tmp_path):
    path = _write(tmp_path, [{"image_id": 99, "objects": [], "relations": []}])
    with pytest.raises(InputError, match="another split") as info:
        read_text_graphs(path, SIZES)
    assert "answers.jsonl" in str(info.value) and "\n" not in str(info.value)
    (tmp_path / "bad.jsonl").write_bytes(b'{"image_id": 1}\n\xff\xfe\n')
    with pytest.raises(InputError, match="UTF-8"):
        read_text_graphs(tmp_path / "bad.jsonl", SIZES)
    with pytest.raises(InputError, match="not found"):
        read_text_graphs(tmp_path / "missing.jsonl", SIZES)
