"""``sgg-eval psg-pack``: a ZIP packed from NPY and PNG masks evaluates as the original submission, is the same
bytes when packed twice, and bad mask folders are refused in one line with nothing written."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
import tifffile
from PIL import Image
from psg_fixture import instance_values, write_psg_fixture
from test_bad_inputs import refused

from sgg_eval.cli import main
from sgg_eval.panoptic.evaluate import run_psg_evaluation


def unpack(files: dict, folder) -> tuple:
    """The fixture's submission as a JSON without seg_filename and a folder of masks: NPY for even images, one
    PNG per instance for odd ones (NPY where an image has no instance)."""
    zf = zipfile.ZipFile(files["zip"])
    doc = json.loads(zf.read("triplets.json"))
    masks = folder / "masks"
    masks.mkdir(parents=True)
    for k, image in enumerate(doc["images"]):
        layers = tifffile.imread(io.BytesIO(zf.read(image.pop("seg_filename"))))
        n = len(instance_values(image, "category"))
        layers = layers.reshape(n, *layers.shape[-2:]) if n else np.zeros((0, 48, 64), np.uint8)
        if k % 2 and n:
            (masks / image["id"]).mkdir()
            for i, layer in enumerate(layers):
                Image.fromarray(layer * 255).save(masks / image["id"] / f"{i}.png")
        else:
            np.save(masks / f"{image['id']}.npy", layers.astype(bool))
    (folder / "preds.json").write_text(json.dumps(doc))
    return folder / "preds.json", masks


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pack")
    files = write_psg_fixture(tmp, seed=21, test=20, other=3)
    preds, masks = unpack(files, tmp / "in")
    assert main(["psg-pack", str(preds), str(masks), "-o", str(tmp / "packed.zip")]) == 0
    return files, preds, masks, tmp / "packed.zip"


@pytest.mark.parametrize("protocol", ["sgbench", "openpsg"])
def test_the_packed_zip_evaluates_as_the_original(packed, protocol):
    files, _, _, zip_path = packed
    ours = run_psg_evaluation(str(zip_path), str(files["psg"]), str(files["root"]), protocol=protocol)
    theirs = run_psg_evaluation(str(files["zip"]), str(files["psg"]), str(files["root"]), protocol=protocol)
    assert ours["metrics"] == theirs["metrics"] and ours["metrics"]["R@50"] > 0


def test_packing_twice_gives_the_same_bytes(packed, tmp_path):
    _, preds, masks, zip_path = packed
    assert main(["psg-pack", str(preds), str(masks), "-o", str(tmp_path / "again.zip")]) == 0
    assert (tmp_path / "again.zip").read_bytes() == zip_path.read_bytes()


def _first_npy(masks):
    return sorted(masks.glob("*.npy"))[-1]


def _first_png_dir(masks):
    return sorted(p for p in masks.iterdir() if p.is_dir())[0]


BAD = {
    "missing": (lambda m: _first_npy(m).unlink(), "no masks"),
    "layer_count": (lambda m: np.save(_first_npy(m), np.zeros((9, 48, 64), bool)), "shape [9, 48, 64]"),
    "pickled": (lambda m: np.save(_first_npy(m), np.array([{"a": 1}], dtype=object)), "readable .npy"),
    "float": (lambda m: np.save(_first_npy(m), np.zeros((1, 48, 64))), "dtype float64"),
    "png_size": (lambda m: Image.new("L", (3, 3)).save(_first_png_dir(m) / "0.png"), "different sizes"),
    "png_missing": (lambda m: (_first_png_dir(m) / "0.png").unlink(), "one PNG per instance"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_mask_folders_are_refused(packed, tmp_path, capsys, case):
    files, preds, _, _ = packed
    _, masks = unpack(files, tmp_path / "in")
    edit, words = BAD[case]
    edit(masks)
    out = tmp_path / "out"
    out.mkdir()
    refused(capsys, ["psg-pack", str(preds), str(masks), "-o", str(out / "s.zip")], out, must_name=(words,))


def test_an_id_that_cannot_name_a_file_is_refused(packed, tmp_path, capsys):
    _, preds, masks, _ = packed
    doc = json.loads(preds.read_text())
    doc["images"][0]["id"] = "../x"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    out = tmp_path / "out"
    out.mkdir()
    refused(capsys, ["psg-pack", str(bad), str(masks), "-o", str(out / "s.zip")], out, must_name=("cannot name",))
