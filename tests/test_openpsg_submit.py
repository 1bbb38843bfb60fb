"""OpenPSG's ``--submit`` folder (relation.json + panseg/<idx>.png, matched by position, 1-based classes and
predicates): evaluated equal to the same predictions written as an SGBench ZIP, under every protocol; its bad
inputs refused in one line."""

from __future__ import annotations

import io
import json
import warnings
import zipfile

import numpy as np
import pytest
import tifffile
from PIL import Image
from psg_fixture import instance_values, write_psg_fixture
from test_bad_inputs import refused

from sgg_eval.panoptic.evaluate import run_psg_evaluation


def _painted(layers: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """The layers painted into one id image, later ones on top (OpenPSG's format cannot hold overlaps), and
    the masks that remain of each."""
    ids = np.zeros(layers.shape[1:], dtype=np.int64)
    colours = [
        int(c) for c in np.random.default_rng(len(layers)).choice(np.arange(1, 1 << 24), len(layers), replace=False)
    ]
    for layer, colour in zip(layers, colours):
        ids[layer != 0] = colour
    return ids, colours


def write_both(files: dict, tmp_path) -> tuple:
    """The fixture's predictions as an OpenPSG submit folder and, with the same (painted) masks, an SGBench ZIP."""
    psg = json.loads(files["psg"].read_text())
    zf = zipfile.ZipFile(files["zip"])
    preds = {p["id"]: p for p in json.loads(zf.read("triplets.json"))["images"]}
    folder, flat = tmp_path / "submission", tmp_path / "flat.zip"
    (folder / "panseg").mkdir(parents=True)
    entries, images, members = [], [], {}
    for entry in psg["data"]:
        if entry["image_id"] not in psg["test_image_ids"] or not entry["relations"]:
            continue
        idx = len(entries)
        pred = preds.get(entry["image_id"])
        if pred is None:  # OpenPSG writes every image: an absent one has no segment and no relation
            pred = {"id": entry["image_id"], "annotation": [], "triplets": []}
            layers = np.zeros((0, entry["height"], entry["width"]), dtype=np.uint8)
        else:
            layers = tifffile.imread(io.BytesIO(zf.read(pred["seg_filename"]))).reshape(
                len(instance_values(pred, "category")), entry["height"], entry["width"]
            )
        ids, colours = _painted(layers)
        rgb = np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)
        Image.fromarray(rgb, "RGB").save(folder / "panseg" / f"{idx}.png")
        cats = instance_values(pred, "category")
        entries.append(
            {
                "relations": [[s, o, p + 1] for s, o, p in pred["triplets"]],
                "segments_info": [{"id": c, "category_id": k + 1} for c, k in zip(colours, cats)],
                "pan_seg_file_name": f"{idx}.png",
            }
        )
        name = f"masks/{idx}.tiff"
        members[name] = np.stack([ids == c for c in colours]).astype(np.uint8) if colours else layers
        images.append(
            {
                "id": entry["image_id"],
                "seg_filename": name,
                "triplets": pred["triplets"],
                "annotation": [{"category": k, "bbox": [0, 0, 1, 1]} for k in cats],
            }
        )
    (folder / "relation.json").write_text(json.dumps(entries))
    with zipfile.ZipFile(flat, "w") as out:
        out.writestr("triplets.json", json.dumps({"version": 1, "images": images}))
        for name, stack in members.items():
            buf = io.BytesIO()
            with warnings.catch_warnings():  # 0 layers: "nonconformant TIFF", which sgbench reads
                warnings.simplefilter("ignore")
                tifffile.imwrite(buf, stack, photometric="minisblack", metadata={"shape": list(stack.shape)})
            out.writestr(name, buf.getvalue())
    return folder, flat


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("openpsg")
    files = write_psg_fixture(tmp, seed=11, test=24, other=4)
    return (files, *write_both(files, tmp))


@pytest.mark.parametrize("protocol", ["sgbench", "sgbench-paper", "openpsg"])
def test_the_folder_evaluates_as_the_same_predictions_in_an_sgbench_zip(made, protocol):
    files, folder, flat = made
    a = run_psg_evaluation(str(folder), str(files["psg"]), str(files["root"]), protocol=protocol, jobs=2)
    b = run_psg_evaluation(str(flat), str(files["psg"]), str(files["root"]), protocol=protocol, jobs=1)
    assert a["metrics"] == b["metrics"] and a["input"]["format"] == "openpsg submit folder"
    assert a["metrics"]["R@100"] > 0.02 and a["counts"]["images_absent"] == 0


def _break(made, tmp_path, edit):
    files, folder, _ = made
    bad = tmp_path / "bad"
    (bad / "panseg").mkdir(parents=True)
    for png in (folder / "panseg").iterdir():
        (bad / "panseg" / png.name).write_bytes(png.read_bytes())
    doc = json.loads((folder / "relation.json").read_text())
    edit(doc, bad)
    (bad / "relation.json").write_text(json.dumps(doc))
    return files, bad


def _first_with(doc, key):
    return next(e for e in doc if e[key])


CASES = {
    "one_entry_missing": (lambda d, b: d.pop(), "by position"),
    "zero_category": (
        lambda d, b: _first_with(d, "segments_info")["segments_info"][0].__setitem__("category_id", 0),
        "1-based",
    ),
    "zero_predicate": (lambda d, b: _first_with(d, "relations")["relations"][0].__setitem__(2, 0), "1-based"),
    "same_colour_twice": (
        lambda d, b: _first_with(d, "relations")["segments_info"].__setitem__(
            1, dict(_first_with(d, "relations")["segments_info"][0])
        ),
        "cannot be told apart",
    ),
    "segment_index": (lambda d, b: _first_with(d, "relations")["relations"][0].__setitem__(0, 99), "segment index"),
    "png_outside": (lambda d, b: d[0].__setitem__("pan_seg_file_name", "../x.png"), "pan_seg_file_name"),
    "png_missing": (lambda d, b: (b / "panseg" / d[0]["pan_seg_file_name"]).unlink(), "PNG"),
    "png_size": (lambda d, b: Image.new("RGB", (5, 5)).save(b / "panseg" / d[0]["pan_seg_file_name"]), "px"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_folders_are_refused_in_one_line(made, tmp_path, capsys, case):
    edit, words = CASES[case]
    files, bad = _break(made, tmp_path, edit)
    out = tmp_path / "out"
    out.mkdir()
    refused(
        capsys,
        [
            "evaluate",
            str(bad),
            "--psg",
            str(files["psg"]),
            "--psg-root",
            str(files["root"]),
            "--jobs",
            "1",
            "-o",
            str(out / "m.json"),
        ],
        out,
        must_name=(words,),
    )


def test_boxes_are_refused_for_the_folder(made, tmp_path, capsys):
    files, folder, _ = made
    refused(
        capsys, ["evaluate", str(folder), "--psg", str(files["psg"]), "--boxes"], tmp_path, must_name=("masks only",)
    )
