"""Every defect the fuzzer found (``tests/fuzz``), as a named case with its input: each is refused with exit 2
and one line naming the file (and the field where there is one), nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))

from seeds import _cases  # noqa: E402
from test_bad_inputs import refused  # noqa: E402
from torch_writer import eval_results_object, save_zip  # noqa: E402

from sgg_eval.cli import main  # noqa: E402
from sgg_eval.core.errors import InputError  # noqa: E402
from sgg_eval.data import vg150  # noqa: E402
from sgg_eval.io.integrity import seal  # noqa: E402
from sgg_eval.pipeline.config import load_params  # noqa: E402
from sgg_eval.pipeline.params_check import check_params  # noqa: E402

pytestmark = pytest.mark.integration  # the command line end to end: not in `make test-fast`

EVAL = ["--task", "sgdet", "--jobs", "1", "-o", "out/m.json"]


def _store_edit(path: Path, fn) -> None:
    with h5py.File(path, "r+") as h5:
        fn(h5)
    seal(path)


def _replace(h5, name, value):
    del h5[name]
    h5[name] = value


STORE_CASES = {  # name: (file, edit, command, words the line must hold)
    "attribute_array_for_flag": (
        "pred.h5",
        lambda h5: h5.attrs.__setitem__("simulated", np.array([1, 2])),
        ["blind-replace", "pred.h5", "--gt", "test.h5", "--stats", "stats.h5", "--task", "sgdet", "--max-n", "2"],
        ("pred.h5", "simulated"),
    ),
    "attribute_text_for_flag": (
        "test.h5",
        lambda h5: h5.attrs.__setitem__("simulated", "false"),
        ["evaluate", "pred.h5", "--gt", "test.h5", *EVAL],
        ("test.h5", "simulated"),
    ),
    "schema_version_negative": (
        "stats.h5",
        lambda h5: h5.attrs.__setitem__("schema_version", -1),
        ["evaluate", "eval_zip.pytorch", "--stats", "stats.h5", *EVAL],
        ("stats.h5", "schema_version"),
    ),
    "zero_d_pairs": (
        "pred.h5",
        lambda h5: _replace(h5, "pairs/pairs", np.int32(1)),
        ["evaluate", "pred.h5", "--gt", "test.h5", *EVAL],
        ("pred.h5", "pairs"),
    ),
    "zero_d_rels": (
        "train.h5",
        lambda h5: _replace(h5, "relations/rels", np.int32(1)),
        ["stats", "train.h5", "-o", "out/s.h5"],
        ("train.h5", "rels"),
    ),
    "zero_d_offsets": (
        "pred.h5",
        lambda h5: _replace(h5, "pairs/offsets", np.int64(0)),
        ["evaluate", "pred.h5", "--gt", "test.h5", *EVAL],
        ("pred.h5", "pairs/offsets"),
    ),
    "float_offsets": (
        "test.h5",
        lambda h5: _replace(h5, "objects/offsets", h5["objects/offsets"][()] * 1.0),
        ["evaluate", "pred.h5", "--gt", "test.h5", *EVAL],
        ("test.h5", "objects/offsets"),
    ),
    "bool_labels": (
        "test.h5",
        lambda h5: _replace(h5, "objects/labels", h5["objects/labels"][()] > 0),
        ["evaluate", "pred.h5", "--gt", "test.h5", *EVAL],
        ("test.h5", "labels"),
    ),
    "names_not_a_list": (
        "test.h5",
        lambda h5: h5.attrs.__setitem__("object_classes", '{"a": 1}'),
        ["evaluate", "pred.h5", "--gt", "test.h5", *EVAL],
        ("test.h5", "object_classes"),
    ),
}


@pytest.mark.parametrize("name", sorted(STORE_CASES))
def test_store_content_found_by_the_fuzzer(case, capsys, name):
    file, edit, argv, words = STORE_CASES[name]
    _store_edit(case / file, edit)
    refused(capsys, argv, case / "out", must_name=words)


def _eval_with(field: str, value_of, image: int = 1, which: str = "predictions"):
    def make(path: Path) -> None:
        obj = eval_results_object(_cases())
        box = obj[which][image]
        box.extra_fields[field] = value_of(box.extra_fields[field])
        save_zip(obj, path)

    return make


TORCH_CASES = {
    "bool_pair_indices_in_pko": (
        _eval_with("rel_pair_idxs", lambda a: a != 0),
        ["pko", "eval_zip.pytorch", "--stats", "stats.h5", "--task", "sgdet", "-o", "out/p.h5"],
        "rel_pair_idxs",
    ),
    "bool_relation_tuple": (
        _eval_with("relation_tuple", lambda a: a != 0, which="groundtruths"),
        ["evaluate", "eval_zip.pytorch", "--stats", "stats.h5", *EVAL],
        "relation_tuple",
    ),
    "bool_labels": (
        _eval_with("labels", lambda a: a != 0, which="groundtruths"),
        ["evaluate", "eval_zip.pytorch", "--stats", "stats.h5", *EVAL],
        "labels",
    ),
    "float_labels": (
        _eval_with("pred_labels", lambda a: a.astype(np.float32)),
        ["evaluate", "eval_zip.pytorch", "--stats", "stats.h5", *EVAL],
        "pred_labels",
    ),
    "integer_object_scores": (
        _eval_with("pred_scores", lambda a: (a * 0).astype(np.uint8)),
        ["pko", "eval_zip.pytorch", "--stats", "stats.h5", "--task", "sgdet", "-o", "out/p.h5"],
        "pred_scores",
    ),
    "sgdet_file_as_predcls_in_blind_replace": (
        lambda path: None,
        ["blind-replace", "eval_zip.pytorch", "--stats", "stats.h5", "--task", "predcls", "--max-n", "1"],
        "pairs",
    ),
    "sgdet_file_as_predcls_in_pko": (
        lambda path: None,
        ["pko", "eval_zip.pytorch", "--stats", "stats.h5", "--task", "predcls", "-o", "out/p.h5"],
        "pairs",
    ),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_torch_content_found_by_the_fuzzer(case, capsys, name):
    make, argv, field = TORCH_CASES[name]
    make(case / "eval_zip.pytorch")
    refused(capsys, argv, case / "out", must_name=("eval_zip.pytorch", field))


def test_zip_bytes_inserted_before_the_members(case, capsys):
    """Bytes inserted into a zero-shot zip: zipfile's member offsets went below 0 (IndexError before)."""
    data = (case / "zs.pytorch").read_bytes()
    (case / "zs.pytorch").write_bytes(data[:653] + b"\x00\x01\x02" + data[653:])
    refused(
        capsys,
        ["evaluate", "eval_zip.pytorch", "--stats", "stats.h5", "--zeroshot", "zs.pytorch", *EVAL],
        case / "out",
        must_name=("zs.pytorch",),
    )


def test_zip_member_names_without_the_storage_prefix(case, capsys):
    """A zero-shot file whose storage member's name lost its folder: no candidate member (IndexError before)."""
    data = (case / "zs.pytorch").read_bytes()
    (case / "zs.pytorch").write_bytes(data.replace(b"archive/data/0", b"archive/dat\x00/0"))
    refused(
        capsys,
        ["evaluate", "eval_zip.pytorch", "--stats", "stats.h5", "--zeroshot", "zs.pytorch", *EVAL],
        case / "out",
        must_name=("zs.pytorch",),
    )


YAML_CASES = {
    "huge_integer": "k: " + "9" * 5000 + "\n",
    "unclosed_flow": "k: [1, 2\n",
    "alias_bomb": "a: &a [x, x]\nb: [*a, *a]\n",
    "binary_tag": "k: !!binary AAAA\n",
    "python_tag": "k: !!python/object/apply:os.system ['true']\n",
    "not_utf8": "k: \udcff\n",
}


@pytest.mark.parametrize("name", sorted(YAML_CASES))
def test_conf_yaml_found_by_the_fuzzer(case, capsys, name):
    path = case / "conf" / "metrics" / "default.yaml"
    with open(path, "a", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(YAML_CASES[name])
    refused(capsys, ["params", "--conf-dir", "conf", "-o", "out/params.yaml"], case / "out", must_name=("conf",))


PARAMS_CASES = {
    "list_for_a_model_name": ("pko_only_from: sim_motifs_pko_source", "pko_only_from: []", "pko"),
    "dict_for_a_model_name": ("pko_only_from: sim_motifs_pko_source", "pko_only_from: {}", "pko"),
    "number_for_the_dataset_name": ("name: vg150_sim", "name: -1", "dataset.name"),
    "null_dataset_name": ("name: vg150_sim", "name: null", "dataset.name"),
    "list_of_lists_for_tasks": ("  - predcls\n", "  - [predcls]\n", "evaluation.tasks"),
    "stray_metrics_key": ("  tau: 0.5\n", "  tau: 0.5\n  taw: 1\n", "metrics"),
    "dict_for_the_psg_scale": ("    scale: default", "    scale: {}", "psg_dataset.sim.scale"),  # was a TypeError
    "dict_for_the_dataset_kind": ("kind: simulated", "kind: {}", "dataset.kind"),  # a dict key lookup, unhashable
}


@pytest.mark.parametrize("name", sorted(PARAMS_CASES))
def test_params_found_by_the_fuzzer(case, name):
    old, new, field = PARAMS_CASES[name]
    text = (case / "params.yaml").read_text()
    assert old in text
    (case / "params.yaml").write_text(text.replace(old, new, 1))
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        check_params(load_params(case / "params.yaml", case / "conf"))


def test_params_yaml_that_is_not_utf8(case):
    (case / "params.yaml").write_bytes((case / "params.yaml").read_bytes()[:100] + b"\xa5\n")
    with pytest.raises(InputError, match="params.yaml: not UTF-8 text"):
        load_params(case / "params.yaml", case / "conf")


def test_damaged_vg150_h5_names_the_file(case, capsys):
    """libhdf5's RuntimeError (a damaged heap) was an internal error."""
    path = case / "vg" / "VG-SGG-with-attri.h5"
    data = bytearray(path.read_bytes())
    data[4064 : 4064 + 64] = data[4000:4064]
    path.write_bytes(bytes(data))
    line = refused(
        capsys,
        ["split", "--vg150-dir", "vg", "--splits", "test", "--num-val-im", "0", "-o", "out"],
        case / "out",
        must_name=("VG-SGG-with-attri.h5",),
    )
    assert "internal" not in line


def test_a_vg150_h5_that_hangs_libhdf5_is_stopped(case, capsys, monkeypatch):
    """No input may hang a reader: the raw VG150 h5 (no checksum) is read in a child with a time limit."""
    import time

    monkeypatch.setattr(vg150, "_read_h5_now", lambda path, scale, split_key: time.sleep(60))
    monkeypatch.setattr(vg150, "H5_READ_SECONDS", 0.5)
    start = time.monotonic()
    refused(
        capsys,
        ["split", "--vg150-dir", "vg", "--splits", "test", "--num-val-im", "0", "-o", "out"],
        case / "out",
        must_name=("VG-SGG-with-attri.h5", "did not finish"),
    )
    assert time.monotonic() - start < 10


def test_a_split_without_relations_in_any_image_is_refused(case, capsys):
    from sgg_eval.data.store import SplitStore, write_split

    with SplitStore(case / "test.h5") as split:
        meta, images = split.meta, list(split)
    for g in images:
        g.rels = g.rels[:0]
    write_split(case / "test.h5", meta, images)
    refused(capsys, ["evaluate", "pred.h5", "--gt", "test.h5", *EVAL], case / "out", must_name=("test.h5",))


PSG = [
    "evaluate",
    "psg/submission.zip",
    "--psg",
    "psg/psg.json",
    "--psg-root",
    "psg/coco",
    "--jobs",
    "1",
    "-o",
    "out/m.json",
]


def _psg_json(case, edit) -> None:
    import json

    path = case / "psg" / "psg.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def _first_evaluated(doc) -> dict:
    return next(e for e in doc["data"] if e["image_id"] in doc["test_image_ids"] and e["relations"])


PSG_JSON_CASES = {
    "ragged_relations": (lambda d: _first_evaluated(d)["relations"].__setitem__(0, [0, 1]), "relations"),
    "list_inside_a_box": (
        lambda d: _first_evaluated(d)["annotations"][0]["bbox"].__setitem__(1, [[1]]),
        "annotations.bbox",
    ),
    "bool_image_id": (lambda d: d["data"][0].__setitem__("image_id", False), "image_id"),
    "test_id_without_data": (lambda d: d["test_image_ids"].append("999999"), "test_image_ids"),
}


@pytest.mark.parametrize("name", sorted(PSG_JSON_CASES))
def test_psg_json_found_by_the_fuzzer(case, capsys, name):
    edit, field = PSG_JSON_CASES[name]
    _psg_json(case, edit)
    argv = PSG[:1] + ["psg/submission.json"] + PSG[2:4] + PSG[6:] if "box" in name else PSG
    refused(capsys, argv, case / "out", must_name=("psg.json", field))


def test_a_damaged_deflate_stream_in_the_submission(case, capsys):
    import zipfile

    path = case / "psg" / "submission.zip"
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("triplets.json")
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + 10 : start + 14] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(data))
    refused(capsys, PSG, case / "out", must_name=("submission.zip",))


def test_an_unsupported_zip_version(case, capsys):
    path = case / "psg" / "submission.zip"
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x01\x02")  # the last central directory record: its 'version needed' field
    data[at + 6] = 255
    path.write_bytes(bytes(data))
    refused(capsys, PSG, case / "out", must_name=("submission.zip",))


def test_a_broken_png(case, capsys):
    png = case / "psg" / "coco" / "panoptic" / "1002.png"
    data = bytearray(png.read_bytes())
    data[40:44] = b"\xff\xff\xff\xff"
    png.write_bytes(bytes(data))
    refused(capsys, PSG, case / "out", must_name=("1002.png",))


def test_score_rows_without_pairs_are_refused(case, capsys):
    """An eval_results prediction whose rel_pair_idxs is empty but pred_rel_scores has rows: was written to a
    store by pko and failed there (internal error)."""
    make = _eval_with("rel_pair_idxs", lambda a: a[:0], image=2)  # image 2 has 49 pairs
    make(case / "eval_zip.pytorch")
    refused(
        capsys,
        ["pko", "eval_zip.pytorch", "--stats", "stats.h5", "--task", "sgdet", "-o", "out/p.h5"],
        case / "out",
        must_name=("eval_zip.pytorch", "pred_rel_scores"),
    )


def test_a_flipped_bit_in_png_image_data(case, capsys):
    """Pillow does not check the CRC-32 of a PNG's image data: a flipped bit there decoded to other segment
    ids, i.e. another ground truth, with no message (found once the fuzzer stopped excusing a seed's own
    warning)."""
    import struct

    png = case / "psg" / "coco" / "panoptic" / "1002.png"
    data = bytearray(png.read_bytes())
    at = data.find(b"IDAT")
    (length,) = struct.unpack_from(">I", data, at - 4)
    data[at + 4 + length // 2] ^= 0x10
    png.write_bytes(bytes(data))
    refused(capsys, PSG, case / "out", must_name=("1002.png", "CRC-32"))


VG150_SPLIT = ["split", "--vg150-dir", "vg", "--splits", "train,test", "--num-val-im", "0", "-o", "out"]


@pytest.mark.parametrize(
    "mutation, file, words",
    [
        ("_name_twice", "VG-SGG-dicts-with-attri.json", ("more than one id",)),
        ("_extra_id", "VG-SGG-dicts-with-attri.json", ("_to_idx",)),
        ("_box_beyond_scale", "VG-SGG-with-attri.h5", ("'boxes_1024'", "[0, 1024]")),
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vg150_content_found_by_the_fuzzer(case, capsys, mutation, file, words, seed):
    """Each was read without a word: a name on two ids, an id only one of the two tables has, a box value
    beyond the 1024 scale (the reference clips it into another box)."""
    import random

    import mutations

    getattr(mutations, mutation)(case / "vg" / file, random.Random(seed))
    refused(capsys, VG150_SPLIT, case / "out", must_name=(file, *words))


@pytest.mark.parametrize("command", ["evaluate", "blind-replace"])
def test_predcls_boxes_off_the_gt_boxes_are_warned_of(case, capsys, command):
    """A PredCls file with another box in one image was scored (by IoU there) with no word. (An
    eval_results file numbers its images by position.)"""
    import json
    import random

    import mutations

    what = mutations._predcls_boxes_moved(case / "eval_predcls.pytorch", random.Random(4))
    extra = ["--jobs", "1"] if command == "evaluate" else ["--max-n", "1"]
    args = [command, "eval_predcls.pytorch", "--stats", "stats.h5", "--task", "predcls", *extra, "-o", "out/m.json"]
    capsys.readouterr()
    assert main(args) == 0
    err = capsys.readouterr().err
    image = int(what.split("[")[1].split("]")[0])
    assert err.count("not predcls boxes") == 1, (what, err)
    notes = json.loads((case / "out" / "m.json").read_text())["notes"]
    assert any("not predcls boxes" in n and f"the first image {image};" in n for n in notes), notes


def test_a_pickle_length_past_the_address_space_in_a_legacy_file(case, capsys):
    """One byte of the seed's legacy file turned a TUPLE3 (0x85) into BINUNICODE8 (0x8d), whose 8-byte length
    then read as more than 2^63: pickle's OverflowError was an internal error."""
    path = case / "eval_legacy.pytorch"
    data = bytearray(path.read_bytes())
    assert data[1367] == 0x85, "the seed changed: find the TUPLE3 opcode anew"
    data[1367] = 0x8D
    path.write_bytes(bytes(data))
    line = refused(
        capsys, ["evaluate", "eval_legacy.pytorch", "--stats", "stats.h5", *EVAL], case / "out", must_name=(path.name,)
    )
    assert "corrupt legacy torch file" in line and "internal" not in line


def _bytearray8_pickle() -> bytes:
    """A pickle whose BYTEARRAY8 opcode asks for 10**18 bytes: CPython's C unpickler raises MemoryError and prints
    "SystemError: deallocated bytearray object has exported buffers" beside it (formats.unpickling)."""
    import struct

    return b"\x80\x05\x96" + struct.pack("<Q", 10**18) + b"abc"


def test_a_bytearray_longer_than_memory_in_action_genomes_pickle(case, capsys):
    """The fuzzer's case (an inserted byte in the small-box file): the reader's line came with CPython's own
    SystemError line beside it."""
    path = case / "ag/AG/object_bbox_and_relationship_filtersmall.pkl"
    path.write_bytes(_bytearray8_pickle())
    args = ["split", "--ag-dir", "ag/AG", "--ag-small-boxes", str(path.relative_to(case)), "-o", "out/ag"]
    assert "not a readable pickle" in refused(capsys, args, case / "out", must_name=(path.name,))


def test_a_bytearray_longer_than_memory_in_a_torch_file(case, capfd, monkeypatch):
    """The same opcode as a torch file's data.pkl. Whether CPython prints its line depends on memory it never set,
    so the unpickler is made to do what CPython does there: report a SystemError through ``sys.excepthook``, then
    raise MemoryError. One line, not three; captured at the file descriptors, since the file may be read in a
    forked worker."""
    import sys
    import zipfile

    from sgg_eval.formats.torch import unpickler

    def cpython_on_a_huge_bytearray(*args, **kwargs):
        error = SystemError("deallocated bytearray object has exported buffers")
        sys.excepthook(SystemError, error, None)  # what PyErr_Print does
        raise MemoryError

    monkeypatch.setattr(unpickler, "bulk_unpickle", cpython_on_a_huge_bytearray)
    path = case / "eval_zip.pytorch"
    with zipfile.ZipFile(path) as zf:
        members = [(info, zf.read(info.filename)) for info in zf.infolist()]
    with zipfile.ZipFile(path, "w") as zf:
        for info, data in members:
            zf.writestr(info, _bytearray8_pickle() if info.filename.endswith("data.pkl") else data)
    line = refused(capfd, ["evaluate", "eval_zip.pytorch", "--stats", "stats.h5", *EVAL], case / "out",
                   must_name=(path.name,))  # fmt: skip
    assert "corrupt pickle" in line


def test_a_central_directory_entry_of_0xff_in_sgg_benchmarks_predictions(case, capsys):
    """The fuzzer's case (64 bytes of 0xff over one entry of predictions.pth's central directory: its flags then say
    the name is UTF-8, and the name is not): the sniff that tells SGG-Benchmark's list from an eval_results dict
    opened it with zipfile, whose UnicodeDecodeError was an internal error."""
    import re

    path = case / "sggbench/predictions.pth"
    data = bytearray(path.read_bytes())
    entries = [m.start() for m in re.finditer(b"PK\x01\x02", bytes(data))]
    at = entries[len(entries) // 2]
    data[at + 5 : at + 5 + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    args = ["evaluate", "sggbench/predictions.pth", "--gt", "sggbench/test.h5", "--protocol", "sgg-benchmark",
            "--task", "sgdet", "--jobs", "1", "-o", "out/m.json"]  # fmt: skip
    refused(capsys, args, case / "out", must_name=(path.name,))
