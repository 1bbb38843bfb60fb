"""The reader defects random mutation of valid files found in the newer readers (issue 64), each a named case with its
input: each is refused with exit 2 and one line naming the file (and the field where there is one), nothing
written; or, where the defining tool reads it, scored as the tool scores it and counted."""

from __future__ import annotations

import json
import math
import sys
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))

from test_bad_inputs import refused  # noqa: E402
from test_fuzz_regressions import EVAL, PSG  # noqa: E402
from test_psg_png_readers import _recrc  # noqa: E402

from sgg_eval.cli import main  # noqa: E402

pytestmark = pytest.mark.integration  # the command line end to end: not in `make test-fast`


def _ok(capsys, args: list[str]) -> str:
    capsys.readouterr()
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.err


def test_whitespace_before_the_first_brace_of_an_sgbench_json(case, capsys):
    """4,000 bytes of JSON whitespace before the brace is valid JSON: read, not "unknown prediction format"."""
    args = ["evaluate", "sg.json", "--gt", "test.h5", *EVAL]
    _ok(capsys, args)
    before = json.loads((case / "out" / "m.json").read_text())["metrics"]
    (case / "sg.json").write_bytes(b" \n\t\r" * 1000 + (case / "sg.json").read_bytes())
    _ok(capsys, args)
    assert json.loads((case / "out" / "m.json").read_text())["metrics"] == before
    (case / "blank.json").write_bytes(b" " * 70_000)
    refused(capsys, ["evaluate", "blank.json", "--gt", "test.h5", *EVAL], case / "out", must_name=("blank.json",))


def test_an_sgbench_image_id_past_64_bits(case, capsys):
    doc = json.loads((case / "sg.json").read_text())
    doc["images"][0]["id"] = 1180591620717411303424
    (case / "sg.json").write_text(json.dumps(doc))
    line = refused(capsys, ["evaluate", "sg.json", "--gt", "test.h5", *EVAL], case / "out", must_name=("sg.json", "id"))
    assert "64 bits" in line


def test_a_png_whose_image_data_fails_its_own_checksum_under_recomputed_crcs(case, capsys):
    """Pillow decoded it without a word (InstR moved); its zlib stream's Adler-32 refuses it."""
    png = case / "psg" / "coco" / "panoptic" / "1002.png"

    def damage(data: bytearray) -> bytearray:
        data[len(data) // 2] ^= 0x10
        return data

    png.write_bytes(_recrc(png.read_bytes(), damage))
    line = refused(capsys, PSG, case / "out", must_name=("1002.png",))
    assert "zlib" in line


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_nonfinite_r1sgg_box_scale_is_scored_as_r1sgg_does_and_counted(case, capsys, value):
    """R1-SGG's ``json.load`` reads NaN and ±Infinity and divides by them without a word: its boxes become NaN or
    0, match nothing and count as false detections. sgg-eval keeps that number and says how many answers it hit."""
    args = ["evaluate", "r1/answers", "--text-graphs", "--gt", "r1/rows.jsonl", "--protocol", "r1sgg", "-o"]
    _ok(capsys, [*args, "out/before.json"])
    answer = case / "r1" / "answers" / "1000.json"
    doc = json.loads(answer.read_text())
    text = json.dumps({**doc, "box_scale": [562, 0]}).replace('"box_scale": [562, 0]', f'"box_scale": [562, {value}]')
    answer.write_text(text)
    _ok(capsys, [*args, "out/after.json"])
    before, after = (json.loads((case / "out" / f"{n}.json").read_text()) for n in ("before", "after"))
    assert before["counts"]["answers_nonfinite_boxes"] == 0 and after["counts"]["answers_nonfinite_boxes"] == 1
    assert any("NaN or ±inf" in note for note in after["notes"])
    assert after["metrics"]["det_mAP@50"] <= before["metrics"]["det_mAP@50"]
    assert not any(isinstance(v, float) and math.isnan(v) for v in after["metrics"].values())


def test_a_split_that_leaves_no_image_is_refused(case, capsys):
    """Every test image of split_GLIPunseen marked −2, or an empty vrd-train-anno.json: no store of 0 images."""
    with h5py.File(case / "vg" / "VG-SGG-with-attri.h5", "r+") as h5:
        codes = h5["split"][:]
        h5["split_GLIPunseen"] = np.where(codes == 2, -2, codes)
    args = ["split", "--vg150-dir", "vg", "--split-key", "split_GLIPunseen", "--splits", "test", "--num-val-im", "0"]
    line = refused(capsys, [*args, "-o", "out/vg"], case / "out", must_name=("vg", "test"))
    assert "0 images" in line
    (case / "oiv6" / "annotations" / "vrd-train-anno.json").write_text("[]")
    line = refused(capsys, ["split", "--oiv6-dir", "oiv6", "-o", "out/oi"], case / "out", must_name=("oiv6", "train"))
    assert "0 images" in line


@pytest.mark.parametrize("value", ["1.0", "true", "0.0"])
def test_an_index_base_that_is_not_an_integer(case, capsys, value):
    (case / "split.yaml").write_text((case / "split.yaml").read_text() + f"index_base: {value}\n")
    args = ["evaluate", "pred.h5", "--gt", "test.h5", "--split-file", "split.yaml", "--protocol", "vs3", *EVAL]
    refused(capsys, args, case / "out", must_name=("split.yaml", "index_base"))


def test_a_truncated_tiff_layer_file_says_so_in_one_line(case, capsys):
    """tifffile logged two lines and read what it could; the error then blamed the layer count."""
    folder = case / "psg" / "folder"  # the seeds' SGBench submission as a folder of TIFFs
    tiff = sorted((folder / "masks").glob("*.tiff"))[0]
    tiff.write_bytes(tiff.read_bytes()[: len(tiff.read_bytes()) * 2 // 3])
    line = refused(capsys, ["evaluate", "psg/folder", *PSG[2:]], case / "out", must_name=("seg_filename",))
    assert "truncated" in line and "layers" not in line


def test_an_unreadable_first_line_of_asmv2_answers_under_sets(case, capsys):
    """The format is told by the first line that reads, not the first line: ASMv2's answers with a broken first line
    lose that line only (before, all 43 lines were unreadable)."""
    args = ["evaluate", "asmv2/answers.jsonl", "--text-graphs", "--gt", "asmv2/psg_eval.jsonl", "-o"]
    _ok(capsys, [*args, "out/before.json"])
    answers = case / "asmv2" / "answers.jsonl"
    answers.write_text('{"question_id": 99, "text": \n' + answers.read_text())
    _ok(capsys, [*args, "out/after.json"])
    before, after = (json.loads((case / "out" / f"{n}.json").read_text()) for n in ("before", "after"))
    assert after["metrics"] == before["metrics"] and after["metrics"]["R_set"] > 0


def test_a_segment_no_pixel_carries_is_counted(case, capsys):
    """A segments_info id that no pixel of its PNG carries is an empty GT mask (OpenPSG and sgbench read it so):
    scored so, and counted in the document's counts and notes."""
    psg = case / "psg" / "psg.json"
    doc = json.loads(psg.read_text())
    with zipfile.ZipFile(case / "psg" / "submission.zip") as zf:
        predicted = {entry["id"] for entry in json.loads(zf.read("triplets.json"))["images"] if entry["triplets"]}
    image = next(d for d in doc["data"] if d["image_id"] in predicted and d["relations"])
    image["segments_info"].append({"id": 16777215, "category_id": 0, "iscrowd": 0})
    image["annotations"].append({"bbox": [0.0, 0.0, 0.0, 0.0], "category_id": 0})
    psg.write_text(json.dumps(doc))
    for protocol in ("sgbench", "openpsg"):
        _ok(capsys, [*PSG, "--protocol", protocol])
        out = json.loads((case / "out" / "m.json").read_text())
        assert out["counts"]["gt_segments_without_pixels"] >= 1
        assert any("carried by no pixel" in note for note in out["notes"])
