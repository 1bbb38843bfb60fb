"""The sets protocol on other tools' files (``text/inputs.py``, issue 48): R1-SGG's answer folder and GT rows,
ASMv2's answers and question file, each read as the same answers written in sgg-eval's JSONL would be."""

from __future__ import annotations

import json

import pytest
from asmv2_fixture import grid
from r1sgg_fixture import write_fixture as write_r1sgg

from sgg_eval.core.errors import InputError
from sgg_eval.io.jsonio import jsonl_lines
from sgg_eval.metrics.names import text_set_name
from sgg_eval.text.r1sgg.answers import read_r1sgg_folder
from sgg_eval.text.r1sgg.rows import read_r1sgg_rows
from sgg_eval.text.sets_evaluate import run_text_evaluation


def test_r1sgg_files_score_as_their_jsonl(tmp_path):
    write_r1sgg(tmp_path, "psg", 1)
    rows, _, _ = read_r1sgg_rows(tmp_path / "rows.jsonl")
    parsed, _ = read_r1sgg_folder(tmp_path / "answers", {r.image_id: (r.width, r.height) for r in rows})
    lines = []
    for image_id, a in parsed.items():
        if a.failure is not None:
            lines.append({"image_id": image_id, "objects": "failed", "relations": []})
            continue
        objects = [{"name": i.split(".")[0], "box": b, "id": i} for i, b in zip(a.ids, a.boxes)]
        lines.append({"image_id": image_id, "objects": objects, "relations": [[s, p, o] for s, p, o in a.relations]})
    (tmp_path / "same.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    folder = run_text_evaluation(tmp_path / "answers", tmp_path / "rows.jsonl")
    jsonl = run_text_evaluation(tmp_path / "same.jsonl", tmp_path / "rows.jsonl")
    assert folder["metrics"] == jsonl["metrics"] and folder["counts"] == jsonl["counts"]
    assert folder["counts"]["images_failed"] > 0 and folder["answers"]["failures"] == folder["counts"]["images_failed"]


def test_asmv2_files_by_hand(tmp_path):
    w, h = 640, 480
    person, car = [10, 100, 110, 300], [200, 150, 400, 350]
    tuples = [["person", person, "car", car, "beside"], ["person", person, "wall-other-merged", [0, 0, 640, 90], "on"]]
    question = {"question_id": 7, "width": w, "height": h, "relation_tuples": tuples}
    (tmp_path / "psg_eval.jsonl").write_text(json.dumps(question) + "\n")
    text = (f"<ref>man</ref><box>[{grid(person, w, h)}]</box><ref>cars</ref><box>[{grid(car, w, h)}]</box>"
            f"<pred>beside</pred><box>[{grid(person, w, h)}]</box><box>[{grid(car, w, h)}]</box>"
            f"<pred>beside</pred><box>[{grid(person, w, h)}]</box><box>[[1, 2, 3]]</box>")  # fmt: skip
    (tmp_path / "answers.jsonl").write_text(json.dumps({"question_id": 7, "text": text}) + "\n")
    doc = run_text_evaluation(tmp_path / "answers.jsonl", tmp_path / "psg_eval.jsonl")
    # "man" is no PSG class name (sets reads names by its own table, not ASMv2's): dropped; "cars" is car's plural
    assert doc["metrics"][text_set_name("R")] == 0.0 and doc["counts"]["objects_unknown_name"] == 1
    assert doc["answers"]["relations_dropped"] == 1  # the box of 3 numbers
    text = text.replace("<ref>man</ref>", "<ref>person</ref>")
    (tmp_path / "answers.jsonl").write_text(json.dumps({"question_id": 7, "text": text}) + "\n")
    doc = run_text_evaluation(tmp_path / "answers.jsonl", tmp_path / "psg_eval.jsonl")
    assert doc["metrics"][text_set_name("R")] == 0.5 and doc["metrics"][text_set_name("P")] == 1.0
    # read as --protocol asmv2 reads the file: a line that is not UTF-8 is counted, a U+2028 inside a text is no
    # line break
    line = json.dumps({"question_id": 7, "text": text.replace("beside", "beside\u2028")}, ensure_ascii=False)
    (tmp_path / "answers.jsonl").write_bytes(line.encode("utf-8") + b"\n\xff{bad\n")
    doc = run_text_evaluation(tmp_path / "answers.jsonl", tmp_path / "psg_eval.jsonl")
    assert doc["answers"]["unreadable_lines"] == 1 and doc["counts"]["images_failed"] == 0


def test_json_lines_break_on_newlines_only():
    """JSON allows U+2028 inside a string; ``str.splitlines`` would break a line there, Python's ``open`` does not."""
    assert jsonl_lines('{"a": "x\u2028y"}\r\n{"b": 1}\r{"c": 2}\n') == ['{"a": "x\u2028y"}', '{"b": 1}', '{"c": 2}']
    assert jsonl_lines("") == [] and jsonl_lines("a\n\nb") == ["a", "", "b"]


def test_a_gt_of_no_known_kind_is_refused(tmp_path):
    (tmp_path / "gt.jsonl").write_text(json.dumps({"image_id": 1}) + "\n")
    (tmp_path / "a.jsonl").write_text(json.dumps({"image_id": 1, "objects": [], "relations": []}) + "\n")
    with pytest.raises(InputError, match="split store"):
        run_text_evaluation(tmp_path / "a.jsonl", tmp_path / "gt.jsonl")
