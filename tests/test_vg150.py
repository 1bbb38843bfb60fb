"""The VG150 reader against a fixture in the real schema: split rules, id alignment, box conversion, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from vg150_fixture import write_vg150_fixture

from sgg_eval.core.errors import InputError
from sgg_eval.data.vg150 import VG150Files, convert_boxes, read_vg150_split


def _read(root, split, num_val_im=2):
    vocab, n, images = read_vg150_split(VG150Files.in_dir(str(root)), split, num_val_im=num_val_im)
    images = list(images)
    assert len(images) == n
    return vocab, images


def test_split_rules_and_val_carve_out(tmp_path):
    root = write_vg150_fixture(tmp_path)
    # Split-0 images with boxes and relations, in h5 order: ids 10, 13, 16. The first two are val.
    assert [im.image_id for im in _read(root, "val")[1]] == [10, 13]
    assert [im.image_id for im in _read(root, "train")[1]] == [16]
    # Test images: ids 14 and 17; id 15 has no relations and is dropped.
    assert [im.image_id for im in _read(root, "test")[1]] == [14, 17]
    # With no carve-out, val is empty and train has all three.
    assert [im.image_id for im in _read(root, "train", num_val_im=0)[1]] == [10, 13, 16]


def test_vocabulary_is_one_based(tmp_path):
    vocab, _ = _read(write_vg150_fixture(tmp_path), "test")
    assert vocab.object_classes == ("man", "shirt", "horse", "street", "car")
    assert vocab.predicate_classes == ("on", "wearing", "parked on")


def test_widths_align_after_dropping_corrupted_ids(tmp_path):
    # image_data lists 1592 and 1722 between the kept images; row i must take the i-th *remaining* entry.
    _, val = _read(write_vg150_fixture(tmp_path), "val")
    assert [(im.width, im.height) for im in val] == [(512, 256), (1024, 768)]
    _, test = _read(tmp_path, "test")
    assert [(im.width, im.height) for im in test] == [(300, 500), (700, 700)]


def test_box_conversion_by_hand(tmp_path):
    # Image 10: W=512, H=256, so pixels = 1024-scale * 512/1024 = 0.5.
    # (101, 50, 31, 20): x1 = trunc(101 - 15.5) = 85, y1 = 40, x2 = 85 + 31 = 116, y2 = 60 -> * 0.5.
    # (1020, 100, 40, 10): x1 = 1000, x2 = 1040 -> 500, 520 -> x2 clipped to W - 1 = 511.
    # (5, 300, 15, 40): x1 = trunc(-2.5) = -2 (toward zero, not floor), x2 = -2 + 15 = 13 -> x1 clipped to 0,
    #   x2 = 6.5 (floor would give 6.0); y1 = 280 -> 140, y2 = 320 -> 160 (inside H - 1 = 255).
    _, val = _read(write_vg150_fixture(tmp_path), "val")
    expected = np.array([[42.5, 20, 58, 30], [500, 47.5, 511, 52.5], [0, 140, 6.5, 160]], dtype=np.float32)
    np.testing.assert_array_equal(val[0].boxes, expected)
    assert val[0].boxes.dtype == np.float32


def test_clipping_to_image_and_float32():
    # A box covering the whole 1024 canvas of a 600x400 image: scale 600/1024; clipped to [0, 599] x [0, 399].
    out = convert_boxes(np.array([[512, 512, 1024, 1024]]), 600, 400)
    np.testing.assert_array_equal(out, np.array([[0, 0, 599, 399]], dtype=np.float32))


def test_labels_relations_and_duplicates_kept(tmp_path):
    _, val = _read(write_vg150_fixture(tmp_path), "val")
    np.testing.assert_array_equal(val[0].labels, [1, 2, 5])
    np.testing.assert_array_equal(val[0].rels, [[0, 1, 2], [2, 0, 1]])
    np.testing.assert_array_equal(val[1].rels, [[0, 1, 2], [0, 1, 2]])  # duplicate rows stay
    _, test = _read(tmp_path, "test")
    np.testing.assert_array_equal(test[0].rels, [[0, 1, 3], [0, 1, 3], [0, 1, 1]])
    # relation indices are local to the image even though the h5 stores global indices
    np.testing.assert_array_equal(test[1].rels, [[0, 1, 2], [2, 1, 1]])


def _expect_error(root, split, *fragments):
    with pytest.raises(InputError) as info:
        _read(root, split)
    for f in fragments:
        assert f in str(info.value), str(info.value)


def test_missing_file(tmp_path):
    root = write_vg150_fixture(tmp_path)
    (root / "image_data.json").unlink()
    _expect_error(root, "train", "image_data.json", "file not found")


def test_missing_h5_key(tmp_path):
    root = write_vg150_fixture(tmp_path, mutate=lambda a: a.pop("predicates"))
    _expect_error(root, "train", "VG-SGG-with-attri.h5", "'predicates'", "missing h5 key")


def test_box_range_outside_arrays(tmp_path):
    def mutate(a):
        a["img_to_last_box"][7] = 99

    _expect_error(write_vg150_fixture(tmp_path, mutate=mutate), "test", "image 17", "img_to_first_box/img_to_last_box")


def test_relation_object_outside_image(tmp_path):
    def mutate(a):
        a["relationships"][0, 1] = 4  # image 10 owns boxes 0..2; box 4 belongs to another image

    _expect_error(write_vg150_fixture(tmp_path, mutate=mutate), "val", "image 10", "'relationships'")


def test_class_id_out_of_range(tmp_path):
    def mutate(a):
        a["labels"][5, 0] = 151  # boxes 5, 6 belong to image 13 (3, 4 to the dropped image 12)

    _expect_error(write_vg150_fixture(tmp_path, mutate=mutate), "val", "image 13", "'labels'")


def test_predicate_out_of_range(tmp_path):
    def mutate(a):
        a["predicates"][0, 0] = 0

    _expect_error(write_vg150_fixture(tmp_path, mutate=mutate), "val", "image 10", "'predicates'")


def test_image_count_mismatch(tmp_path):
    root = write_vg150_fixture(tmp_path, image_data=[{"image_id": 1, "width": 5, "height": 5}])
    _expect_error(root, "train", "image_data.json", "h5 has 8 rows")


@pytest.mark.parametrize("value, column", [(1_000_000, 0), (1025, 2), (-1, 1)])
def test_a_box_value_outside_the_1024_scale_is_refused(tmp_path, value, column):
    """The split's boxes are clamped to the image at longest side 1024: a larger (or negative) value is a
    damaged file, which the reference would clip away into another box without a word."""

    def mutate(a):
        a["boxes_1024"][0, column] = value  # box 0 belongs to image 10 (val)

    _expect_error(write_vg150_fixture(tmp_path, mutate=mutate), "val", "image 10", "'boxes_1024'", "[0, 1024]")


def test_a_box_at_the_scale_edge_is_read(tmp_path):
    """1024 itself is in range (image 16's box spans the whole scaled image)."""
    _, train = _read(write_vg150_fixture(tmp_path), "train")
    assert len(train) == 1


def _edit_dicts(root, edit):
    path = root / "VG-SGG-dicts-with-attri.json"
    d = json.loads(path.read_text())
    edit(d)
    path.write_text(json.dumps(d))
    return root


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda d: d["idx_to_label"].__setitem__("2", d["idx_to_label"]["1"]), ("idx_to_label", "more than one id")),
        (lambda d: d["idx_to_predicate"].__setitem__("3", "on"), ("idx_to_predicate", "'on'", "more than one id")),
        (lambda d: d["idx_to_label"].__setitem__(str(len(d["idx_to_label"]) + 1), "zebra"), ("'label_to_idx'",)),
        (lambda d: d["idx_to_predicate"].__setitem__("1", "above"), ("'predicate_to_idx'",)),
    ],
)
def test_dicts_with_a_name_twice_or_an_extra_id_are_refused(tmp_path, edit, words):
    root = _edit_dicts(write_vg150_fixture(tmp_path), edit)
    _expect_error(root, "test", "VG-SGG-dicts-with-attri.json", *words)


def test_dicts_without_the_inverse_tables_are_read(tmp_path):
    root = _edit_dicts(write_vg150_fixture(tmp_path), lambda d: [d.pop("label_to_idx"), d.pop("predicate_to_idx")])
    vocab, _ = _read(root, "test")
    assert vocab.object_classes[0] == "man"


def _glip_unseen(a):
    """VS3's and OvSGTR's extra key: the split codes with -2 on a test image GLIP saw (here the first)."""
    codes = a["split"].copy()
    codes[np.flatnonzero(codes == 2)[0]] = -2
    a["split_GLIPunseen"] = codes


def test_split_key_reads_the_codes_from_another_h5_key(tmp_path):
    root = write_vg150_fixture(tmp_path, mutate=_glip_unseen)
    files = VG150Files.in_dir(str(root))
    _, n, images = read_vg150_split(files, "test", split_key="split_GLIPunseen")
    assert n == 1 and [im.image_id for im in images] == [17]  # 14 was seen by GLIP
    _, n, images = read_vg150_split(files, "train", num_val_im=2, split_key="split_GLIPunseen")
    assert [im.image_id for im in images] == [16]  # train and val as with the reference's key


def test_split_key_on_the_command_line(tmp_path):
    import subprocess
    import sys

    root = write_vg150_fixture(tmp_path / "vg", mutate=_glip_unseen)
    cli = [sys.executable, "-m", "sgg_eval.cli", "split", "--vg150-dir", str(root), "--splits", "test"]
    out = subprocess.run([*cli, "--split-key", "split_GLIPunseen", "-o", str(tmp_path / "s")], capture_output=True,
                         text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "test.h5: 1 images (split codes from the h5 key split_GLIPunseen)" in out.stdout
    bad = subprocess.run(
        [*cli, "--split-key", "split_other", "-o", str(tmp_path / "t")], capture_output=True, text=True
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "VG-SGG-with-attri.h5" in bad.stderr and "'split_other'" in bad.stderr and "missing h5 key" in bad.stderr
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").iterdir())
    other = [sys.executable, "-m", "sgg_eval.cli", "split", "--gqa-dir", str(tmp_path), "--split-key", "k", "-o", "x"]
    refused = subprocess.run(other, capture_output=True, text=True)
    assert refused.returncode == 2 and "--split-key" in refused.stderr
