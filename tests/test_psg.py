"""Panoptic SGG, protocol sgbench: the vectorised evaluation against the loop reference written from the
protocol's documentation (tests/psg_reference.py), on generated PSG-like files with every edge case of the
fixture; the matcher's ties and IoU exactly 0.5; bad submissions refused in one line."""

from __future__ import annotations

import io
import json
import os
import struct
import warnings
import zipfile

import numpy as np
import psg_reference as ref
import pytest
import tifffile
from PIL import Image
from psg_fixture import instance_values, set_first_instance, write_psg_fixture
from test_bad_inputs import refused

from sgg_eval.cli import main
from sgg_eval.metrics.document import every_metric
from sgg_eval.panoptic.evaluate import run_psg_evaluation
from sgg_eval.panoptic.matching import assign, assign_one_to_one, match_boxes, match_masks
from sgg_eval.panoptic.psg_json import read_psg, read_psg_names
from sgg_eval.panoptic.reduce import PROTOCOL_METRICS

EVALUATED: set = set()  # ids of the fixture's test images with relations (the ones whose files are read)


@pytest.fixture(scope="module")
def fixture(tmp_path_factory):
    files = write_psg_fixture(tmp_path_factory.mktemp("psg"), seed=3, test=30, other=30)
    files["stats"] = files["psg"].parent / "psg_stats.h5"
    assert main(["stats", "--psg", str(files["psg"]), "-o", str(files["stats"])]) == 0
    psg = json.loads(files["psg"].read_text())
    EVALUATED.update(e["image_id"] for e in psg["data"] if e["image_id"] in psg["test_image_ids"] and e["relations"])
    return files


def _reference(files, masks: bool, protocol: str = "sgbench", tau: float = 0.5) -> dict:
    psg = json.loads(files["psg"].read_text())
    zs, n_c = ref.training_stats(psg)
    absent_zs = 0
    preds = json.loads(files["json"].read_text())["images"]
    by_id = {p["id"]: p for p in preds}
    zf = zipfile.ZipFile(files["zip"])
    c = len(psg["predicate_classes"])
    present, absent = [], 0
    has_ng = any(p.get("ng_triplets") for p in preds)
    for entry in psg["data"]:
        if entry["image_id"] not in psg["test_image_ids"] or not entry["relations"]:
            continue
        pred = by_id.get(entry["image_id"])
        if pred is None or (protocol == "openpsg" and not pred["triplets"]):
            absent += 1
            absent_zs += bool(ref.zero_shot_rows(entry, zs))
            continue
        cats, boxes = instance_values(pred, "category"), instance_values(pred, "bbox")
        gt_labels = [s["category_id"] for s in entry["segments_info"]]
        if masks:
            rgb = np.asarray(Image.open(files["root"] / entry["pan_seg_file_name"])).astype(np.int64)
            ids = rgb[..., 0] + 256 * rgb[..., 1] + 65536 * rgb[..., 2]
            gt_items = [ids == s["id"] for s in entry["segments_info"]]
            layers = tifffile.imread(io.BytesIO(zf.read(pred["seg_filename"])))
            pred_items, iou = list(layers.reshape(len(cats), *ids.shape) != 0), ref.iou_masks
        else:
            gt_items, pred_items, iou = [a["bbox"] for a in entry["annotations"]], boxes, ref.iou_boxes
        ng = (pred.get("ng_triplets") or []) if has_ng else None
        present.append(
            ref.image(
                protocol,
                entry["relations"],
                gt_items,
                gt_labels,
                pred_items,
                cats,
                pred["triplets"],
                ng,
                iou,
                c,
                ref.zero_shot_rows(entry, zs),
            )
        )
    out = ref.aggregate(protocol, present, absent, c, absent_zs, n_c, tau, ref.frequency_groups(psg))
    confusion = np.zeros((c, c), dtype=np.int64)
    for values in present:
        for g, t in values["confusion"]:
            confusion[g, t] += 1
    return out, confusion


@pytest.mark.parametrize("protocol", ["sgbench", "sgbench-paper", "openpsg"])
@pytest.mark.parametrize("masks", [True, False])
@pytest.mark.parametrize("jobs", [1, 2])
def test_every_protocol_equals_its_loop_reference(fixture, protocol, masks, jobs):
    pred = fixture["zip"] if masks else fixture["json"]
    tau = 0.3 if jobs == 2 else 0.5
    doc = run_psg_evaluation(
        str(pred),
        str(fixture["psg"]),
        str(fixture["root"]),
        protocol=protocol,
        jobs=jobs,
        stats=str(fixture["stats"]),
        tau=tau,
    )
    want, confusion = _reference(fixture, masks, protocol, tau)
    # the confusion matrix: for GT triplets whose ends the model's rows stand for, the first such row's predicate
    assert doc["confusion"]["counts"] == confusion.tolist() and confusion.sum() > 0
    assert doc["confusion"]["predicates"] == json.loads(fixture["psg"].read_text())["predicate_classes"]
    assert doc["mode"] == ("masks" if masks else "boxes") and doc["protocol"] == protocol
    every = every_metric(doc)
    assert set(want) == set(every) and len(want) == 43 + 18  # 18: head/body/tail mR and ng-mR at 3 K
    # the protocol's own numbers in "metrics", the rest beside them in their own section, never both
    assert set(doc["metrics"]) == set(PROTOCOL_METRICS[protocol])
    assert not set(doc["metrics"]) & set(doc["beyond_protocol"]["metrics"])
    assert all(want[k] is not None for k in ("zR@20", "ng-zR@100", "wIMR@50")) and want["wIMR@20"] != want["IMR@20"]
    for key, value in want.items():
        got = every[key]
        if value is None:
            assert got is None, key
        else:
            assert got == pytest.approx(value, abs=1e-12), key
    assert doc["counts"]["images_absent"] == 2 and doc["counts"]["images_skipped_no_gt"] > 0
    assert any(v is not None and 0 < v < 1 for v in doc["metrics"].values())


@pytest.mark.parametrize("protocol", ["sgbench", "sgbench-paper", "openpsg"])
@pytest.mark.parametrize("masks", [True, False])
@pytest.mark.parametrize("threshold", [0.3, 0.75])
def test_another_iou_threshold_equals_the_loop_reference_at_it(fixture, protocol, masks, threshold, monkeypatch):
    """iou_threshold (metrics.iou_threshold, --iou-threshold) moves every protocol's matching, and says so."""
    pred = fixture["zip"] if masks else fixture["json"]
    kw = dict(protocol=protocol, stats=str(fixture["stats"]))
    doc = run_psg_evaluation(str(pred), str(fixture["psg"]), str(fixture["root"]), iou_threshold=threshold, **kw)
    monkeypatch.setattr(ref, "THRESHOLD", threshold)
    want, confusion = _reference(fixture, masks, protocol)
    assert doc["confusion"]["counts"] == confusion.tolist()
    assert set(want) == set(every_metric(doc))
    for key, value in want.items():
        got = every_metric(doc)[key]
        assert got is None if value is None else got == pytest.approx(value, abs=1e-12), key
    at_half = run_psg_evaluation(str(pred), str(fixture["psg"]), str(fixture["root"]), **kw)
    assert doc["metrics"] != at_half["metrics"] and doc["iou_threshold"] == threshold
    assert any(f"IoU {threshold:g}, not the protocol's 0.5" in n for n in doc["notes"])
    assert not any("not the protocol's" in n for n in at_half["notes"])


@pytest.mark.parametrize("masks", [True, False])
def test_the_protocols_differ_on_the_fixture(fixture, masks):
    pred = str(fixture["zip"] if masks else fixture["json"])
    r = {
        p: run_psg_evaluation(pred, str(fixture["psg"]), str(fixture["root"]), protocol=p)["metrics"]
        for p in ("sgbench", "sgbench-paper", "openpsg")
    }
    assert len({r[p]["R@100"] for p in r}) == 3 and r["sgbench-paper"]["mR@20"] is not None


def test_forcing_boxes_on_a_zip_reads_its_boxes(fixture):
    forced = run_psg_evaluation(str(fixture["zip"]), str(fixture["psg"]), boxes=True)
    plain = run_psg_evaluation(str(fixture["json"]), str(fixture["psg"]))
    assert forced["mode"] == "boxes" and forced["metrics"] == plain["metrics"]


def test_iou_exactly_half_matches_and_ties_go_to_the_lowest_gt_index():
    seg = np.full((4, 8), 2)  # 2: no segment
    seg[:, 0:2] = 0  # GT 0: 8 px, class 1
    seg[:, 6:8] = 1  # GT 1: 8 px, class 1
    masks = np.zeros((3, 4, 8), dtype=bool)
    masks[0, :, 0:4] = True  # 8 of GT 0 in 16: IoU exactly 0.5
    masks[1, :, 0:2] = masks[1, :, 6:8] = True  # IoU 0.5 with both: the lower index
    masks[2, :, 0:5] = True  # 8 / 20 = 0.4
    assert match_masks(seg, np.array([1, 1]), masks, np.array([1, 1, 1])).tolist() == [0, 0, -1]
    assert match_masks(seg, np.array([1, 1]), masks, np.array([2, 1, 1])).tolist() == [-1, 0, -1]  # label
    gt_boxes = np.array([[0.0, 0, 2, 4], [6, 0, 8, 4]])
    boxes = np.array([[0.0, 0, 4, 4], [0, 0, 0, 0]])
    assert match_boxes(gt_boxes, np.array([1, 1]), boxes, np.array([1, 1])).tolist() == [0, -1]


def test_the_papers_assignment_keeps_one_prediction_per_gt_instance():
    iou = np.array(
        [
            [0.5, 0.0],  # exactly 0.5: not > 0.5, no match (sgbench's code: a match)
            [0.7, 0.6],  # best is GT 0 ...
            [0.9, 0.2],  # ... which this one takes; row 1 does not fall back to GT 1
            [0.0, 0.8],  # GT 1, tied with the next: the earlier stays
            [0.0, 0.8],
        ]
    )
    labels, gt_labels = np.ones(5, dtype=np.int64), np.ones(2, dtype=np.int64)
    assert assign_one_to_one(iou, labels, gt_labels).tolist() == [-1, -1, 0, 1, -1]
    assert assign(iou, labels, gt_labels).tolist() == [0, 0, 0, 1, 1]
    assert assign_one_to_one(iou, np.array([2, 1, 1, 1, 1]), gt_labels).tolist() == [-1, -1, 0, 1, -1]
    assert assign_one_to_one(np.zeros((0, 2)), labels[:0], gt_labels).tolist() == []


def _edit_submission(files, tmp_path, edit, name="bad.zip"):
    doc = json.loads(zipfile.ZipFile(files["zip"]).read("triplets.json"))
    members = {n: zipfile.ZipFile(files["zip"]).read(n) for n in zipfile.ZipFile(files["zip"]).namelist()}
    edit(doc, members)
    members["triplets.json"] = json.dumps(doc).encode()
    out = tmp_path / name
    with zipfile.ZipFile(out, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    return out


def _first(doc):
    """The first predicted image that is evaluated and has triplets."""
    return next(i for i in doc["images"] if i["triplets"] and i["id"] in EVALUATED)


BAD = {
    "negative_index": (lambda d, m: _first(d)["triplets"][0].__setitem__(0, -1), "triplets"),
    "predicate_out_of_range": (lambda d, m: _first(d)["triplets"][0].__setitem__(2, 5), "triplets"),
    "category_out_of_range": (lambda d, m: set_first_instance(_first(d), "category", 99), "categor"),
    "duplicate_ids": (lambda d, m: d["images"].append(dict(d["images"][0])), "listed twice"),
    "path_outside": (lambda d, m: m.__setitem__("../evil.tiff", b"x"), "outside the archive"),
    "layer_count": (lambda d, m: m.__setitem__(_first(d)["seg_filename"], _tiff_of(np.zeros((9, 48, 64)))), "expected"),
    "mask_size": (
        lambda d, m: m.__setitem__(
            _first(d)["seg_filename"], _tiff_of(np.zeros((len(instance_values(_first(d), "category")), 10, 10)))
        ),
        "px",
    ),
    "integer_ids": (lambda d, m: [i.__setitem__("id", int(i["id"])) for i in d["images"]], "strings"),
    # a TIFF bomb: pages that claim 60000x60000 px each, refused from their headers, before any decoding
    "tiff_bomb": (lambda d, m: m.__setitem__(_first(d)["seg_filename"], _tiff_bomb(_first(d))), "before decoding"),
    # a mask file larger than its masks can be, refused from the archive's directory, before it is read
    "mask_file_too_large": (
        lambda d, m: m.__setitem__(_first(d)["seg_filename"], os.urandom(2 << 20)),
        "before reading",
    ),
    "version": (lambda d, m: d.__setitem__("version", 7), "version"),
    "box_inverted": (lambda d, m: set_first_instance(_first(d), "bbox", [9.0, 9.0, 1.0, 1.0]), "x2 < x1"),
    "triplets_of_one_empty_row": (lambda d, m: _first(d).__setitem__("triplets", [[]]), "triplets"),
}


def _tiff_of(stack) -> bytes:
    out = io.BytesIO()
    with warnings.catch_warnings():  # 0 layers: tifffile's "nonconformant TIFF", which it reads back
        warnings.simplefilter("ignore")
        tifffile.imwrite(out, np.asarray(stack, dtype=np.uint8))
    return out.getvalue()


def _tiff_bomb(image) -> bytes:
    raw = bytearray(_tiff_of(np.zeros((len(instance_values(image, "category")), 48, 64))))
    with tifffile.TiffFile(io.BytesIO(bytes(raw))) as tif:
        tags = [page.tags[name] for page in tif.pages for name in ("ImageWidth", "ImageLength")]
        spots = [(tag.valueoffset, "<H" if tag.dtype == 3 else "<I") for tag in tags]
    for at, code in spots:
        struct.pack_into(code, raw, at, 60000)
    return bytes(raw)


@pytest.mark.parametrize("jobs", ["1", "2"])  # 2: psg.json is read in a child while the submission is read
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_submissions_are_refused_in_one_line(fixture, tmp_path, capsys, case, jobs):
    edit, words = BAD[case]
    bad = _edit_submission(fixture, tmp_path, edit)
    out = tmp_path / "out"
    out.mkdir()
    refused(
        capsys,
        [
            "evaluate",
            str(bad),
            "--psg",
            str(fixture["psg"]),
            "--psg-root",
            str(fixture["root"]),
            "--jobs",
            jobs,
            "-o",
            str(out / "m.json"),
        ],
        out,
        must_name=(words,),
    )


def _rezipped(files, path, compression: int):
    """The fixture's submission with every member written with ``compression``."""
    with zipfile.ZipFile(files["zip"]) as src, zipfile.ZipFile(path, "w", compression) as out:
        for name in src.namelist():
            out.writestr(name, src.read(name))
    return path


def _data_at(path, name: str) -> tuple[int, int, int]:
    """Where member ``name``'s name in its local header ends, where its stored bytes start, and their count."""
    info = zipfile.ZipFile(path).getinfo(name)
    header = path.read_bytes()[info.header_offset : info.header_offset + 30]
    name_end = info.header_offset + 30 + int.from_bytes(header[26:28], "little")
    return name_end, name_end + int.from_bytes(header[28:30], "little"), info.compress_size


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_LZMA, zipfile.ZIP_BZIP2])
def test_members_read_the_same_whatever_their_compression(fixture, tmp_path, compression):
    """Stored and deflated members are read by the submission's own reader (ISA-L), the others by zipfile."""
    zipped = _rezipped(fixture, tmp_path / "sub.zip", compression)
    got = run_psg_evaluation(str(zipped), str(fixture["psg"]), str(fixture["root"]), jobs=1)
    want = run_psg_evaluation(str(fixture["zip"]), str(fixture["psg"]), str(fixture["root"]), jobs=1)
    assert got["metrics"] == want["metrics"] and got["counts"] == want["counts"]


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
@pytest.mark.parametrize("member", ["triplets.json", "a mask", "a local header's name"])
def test_a_changed_byte_in_a_member_is_refused(fixture, tmp_path, capsys, compression, member):
    zipped = _rezipped(fixture, tmp_path / "sub.zip", compression)
    names = zipfile.ZipFile(zipped).namelist()
    name = "triplets.json" if member == "triplets.json" else next(n for n in names if n.endswith(".tiff"))
    name_end, start, size = _data_at(zipped, name)
    raw = bytearray(zipped.read_bytes())
    if member == "a local header's name":
        raw[name_end - 1] ^= 0x01  # the name's last byte, in the local header only
        why = "names another member"
    else:
        raw[start + size // 2] ^= 0x10
        why = "CRC-32" if compression == zipfile.ZIP_STORED else "unreadable"
    zipped.write_bytes(bytes(raw))
    out = tmp_path / "out"
    out.mkdir()
    args = ["evaluate", str(zipped), "--psg", str(fixture["psg"]), "--psg-root", str(fixture["root"])]
    refused(capsys, [*args, "--jobs", "1", "-o", str(out / "m.json")], out, must_name=("sub.zip", name, why))


def _edit_psg(files, tmp_path, edit):
    doc = json.loads(files["psg"].read_text())
    edit(doc)
    out = tmp_path / "psg.json"
    out.write_text(json.dumps(doc))
    return out


def _first_test_entry(doc):
    return next(e for e in doc["data"] if e["image_id"] in doc["test_image_ids"] and e["relations"])


@pytest.mark.parametrize(
    "edit_psg, words",
    [
        (lambda d: _first_test_entry(d)["relations"][0].__setitem__(2, 999), "relations"),  # found by read_psg
        (lambda d: d.__setitem__("predicate_classes", 7), "predicate_classes"),  # found by the names too
        (lambda d: d.__setitem__("test_image_ids", []), "no test image"),
    ],
)
def test_with_both_files_bad_psg_json_is_named_first_whatever_the_jobs(fixture, tmp_path, capsys, edit_psg, words):
    """With --jobs 2 psg.json is read in a child while the submission is read here; the error reported is still
    the one a serial read meets first (psg.json's), the same line as with --jobs 1."""
    psg = _edit_psg(fixture, tmp_path, edit_psg)
    bad = _edit_submission(fixture, tmp_path, lambda d, m: d.__setitem__("version", 7))
    lines = []
    for jobs in ("1", "2"):
        args = ["evaluate", str(bad), "--psg", str(psg), "--psg-root", str(fixture["root"]), "--jobs", jobs]
        lines.append(refused(capsys, [*args, "-o", str(tmp_path / "m.json")], tmp_path, must_name=("psg.json", words)))
    assert lines[0] == lines[1]


@pytest.mark.parametrize("where", ["instance", "segment", "annotation"])
def test_a_key_named_twice_in_a_nested_object_is_refused(fixture, tmp_path, capsys, where):
    """simdjson reads the first of two values, Python's json (and so sgbench) the last: refused, not guessed."""
    psg = json.loads(fixture["psg"].read_text())
    sub = json.loads(fixture["json"].read_text())
    if where == "instance":
        image = next(i for i in sub["images"] if i["id"] in EVALUATED and ("annotation" in i or "instances" in i))
        set_first_instance(image, "TWICE", 0)
        twice, key = "category", "annotation" if "annotation" in image else "instances"
    else:
        entry = _first_test_entry(psg)
        (entry["segments_info"] if where == "segment" else entry["annotations"])[0]["TWICE"] = 0
        twice, key = ("category_id", "segments_info") if where == "segment" else ("bbox", "annotations")
    psg_path, sub_path = tmp_path / "psg.json", tmp_path / "sub.json"
    psg_path.write_text(json.dumps(psg).replace('"TWICE": 0', f'"{twice}": 1'))
    sub_path.write_text(json.dumps(sub).replace('"TWICE": 0', f'"{twice}": 1'))
    args = ["evaluate", str(sub_path), "--psg", str(psg_path), "--jobs", "1", "-o", str(tmp_path / "m.json")]
    named = "psg.json" if where != "instance" else "sub.json"
    refused(capsys, args, tmp_path, must_name=(named, "names a key twice", key))


def test_psg_names_alone_equal_the_full_reads(fixture):
    gt = read_psg(fixture["psg"], fixture["root"])
    assert read_psg_names(fixture["psg"]) == (gt.object_classes, gt.predicate_classes)


def test_a_zip_bomb_is_refused(fixture, tmp_path, capsys):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("triplets.json", b'{"version": 1, "images": []}' + b" " * (50 << 20))
    refused(
        capsys,
        ["evaluate", str(bomb), "--psg", str(fixture["psg"]), "--psg-root", str(fixture["root"])],
        tmp_path,
        must_name=("bomb.zip", "ZIP bomb"),
    )


def test_the_cli_writes_the_metrics_json_and_warns_of_absent_images(fixture, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert (
        main(
            [
                "evaluate",
                str(fixture["zip"]),
                "--psg",
                str(fixture["psg"]),
                "--psg-root",
                str(fixture["root"]),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "R@20=" in captured.out and "protocol sgbench" in captured.out
    assert "2 test images with relations have no prediction" in captured.err
    doc = json.loads(out.read_text())
    assert set(doc["metrics"]) >= {"R@20", "R@50", "R@100", "mR@20", "mR@50", "mR@100", "InstR", "PRk"}


def test_psg_training_statistics_equal_their_loop_reference(fixture):
    from sgg_eval.data.stats import read_stats

    psg = json.loads(fixture["psg"].read_text())
    zs, n_c = ref.training_stats(psg)
    stats = read_stats(fixture["stats"])
    assert {tuple(int(v) - 1 for v in t) for t in stats.zeroshot_triplets} == zs and zs
    assert stats.num_pairs[1:].tolist() == n_c and stats.vocab.predicate_classes == tuple(psg["predicate_classes"])


def test_without_statistics_zero_shot_and_wimr_are_null_with_the_command_to_run(fixture):
    doc = run_psg_evaluation(str(fixture["json"]), str(fixture["psg"]))
    beyond = doc["beyond_protocol"]["metrics"]  # none of the three is sgbench's
    assert beyond["zR@20"] is None and beyond["wIMR@20"] is None
    assert beyond["IMR@20"] is not None
    assert any("sgg-eval stats --psg" in note for note in doc["notes"])


def test_statistics_of_another_vocabulary_are_refused(fixture, tmp_path, capsys):
    psg = json.loads(fixture["psg"].read_text())
    psg["predicate_classes"][0] = "renamed"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(psg))
    assert main(["stats", "--psg", str(other), "-o", str(tmp_path / "other.h5")]) == 0
    capsys.readouterr()
    refused(
        capsys,
        ["evaluate", str(fixture["json"]), "--psg", str(fixture["psg"]), "--stats", str(tmp_path / "other.h5")],
        tmp_path / "none",
        must_name=("other.h5", "names differ"),
    )


def test_pixel_ids_map_to_segments_with_and_without_the_list_of_colours():
    from sgg_eval.panoptic.panoptic_png import index_of_ids

    rng = np.random.default_rng(0)
    for _ in range(200):
        segs = rng.choice(1 << 24, size=int(rng.integers(1, 30)), replace=False).astype(np.int64)
        others = rng.choice(1 << 24, size=int(rng.integers(0, 5)), replace=False)  # void and unnamed ids
        ids = rng.choice(np.concatenate([segs, others, [0]]), size=(20, 30)).astype(np.uint32)
        want = [[list(segs).index(v) if v in segs else len(segs) for v in row] for row in ids.tolist()]
        assert index_of_ids(ids, segs).tolist() == want
        assert index_of_ids(ids, segs, np.unique(ids).astype(np.int64)).tolist() == want


@pytest.mark.parametrize("masks", [True, False])
def test_an_image_without_instances_scores_zero_where_sgbench_fails(fixture, tmp_path, masks):
    """sgbench 1.0.0 raises IndexError on an image with no predicted instance in box mode; here it is an
    evaluated image that recalls nothing."""

    def empty(doc, members):
        image = _first(doc)
        for key in ("annotation", "instances"):
            if key in image:
                image[key] = []
        if "bboxes" in image:
            image["bboxes"], image["categories"] = [], []
        image["triplets"], image["ng_triplets"] = [], []
        members[image["seg_filename"]] = _tiff_of(np.zeros((0, 48, 64)))

    bad = _edit_submission(fixture, tmp_path, empty)
    doc = run_psg_evaluation(str(bad), str(fixture["psg"]), str(fixture["root"]), boxes=not masks)
    base = run_psg_evaluation(str(fixture["zip"]), str(fixture["psg"]), str(fixture["root"]), boxes=not masks)
    assert doc["counts"]["images_evaluated"] == base["counts"]["images_evaluated"]
    assert doc["metrics"]["R@100"] <= base["metrics"]["R@100"] and doc["metrics"]["InstR"] < base["metrics"]["InstR"]


@pytest.mark.parametrize("colours_listed", [True, False])
def test_segment_index_when_no_single_channel_tells_the_colours_apart(tmp_path, monkeypatch, colours_listed):
    from sgg_eval.panoptic import panoptic_png, types

    rgb = [(10, 20, 30), (10, 21, 31), (11, 20, 31), (11, 21, 30), (0, 0, 0)]  # every channel repeats a value
    rng = np.random.default_rng(1)
    pick = rng.integers(0, len(rgb), (12, 16))
    pixels = np.array(rgb, dtype=np.uint8)[pick]
    Image.fromarray(pixels, "RGB").save(tmp_path / "p.png")
    ids = [r + 256 * g + 65536 * b for r, g, b in rgb]
    segment_ids = np.array(ids[:3] + [123456], dtype=np.int64)  # the 4th colour and void name no segment
    if not colours_listed:
        monkeypatch.setattr(panoptic_png, "_MAX_COLOURS", 2)
    gt = types.PsgGT(str(tmp_path), str(tmp_path), ("a",), ("p",), [], 0)
    image = types.PsgImage(
        "x",
        0,
        segment_ids,
        np.zeros(4, dtype=np.int64),
        np.zeros((0, 3), dtype=np.int64),
        np.zeros((0, 4)),
        "p.png",
        np.zeros((0, 3), dtype=np.int64),
    )
    index, area = panoptic_png.segment_index(gt, image)
    want = np.where(pick < 3, pick, 4)
    assert index.tolist() == want.tolist()
    if colours_listed:
        assert area.tolist() == [int((pick == k).sum()) for k in range(3)] + [0]
    else:
        assert area is None


def test_same_class_ious_equal_the_full_computation_whatever_the_number_of_segments():
    from sgg_eval.panoptic.matching import mask_ious

    rng = np.random.default_rng(7)
    for trial in range(30):
        g = int(rng.integers(1, 9))
        seg = rng.integers(0, g + 1, (24, 40))  # g: no segment
        masks = (rng.random((int(rng.integers(0, 12)), 24, 40)) < rng.random()).astype(np.uint8)
        gt_labels = rng.integers(0, 2 if trial % 2 else 5, g)  # trial % 2: many segments share a class
        labels = rng.integers(0, 5, len(masks))
        full = mask_ious(seg, g, masks)
        same = mask_ious(seg, g, masks, labels, gt_labels)
        keep = labels[:, None] == gt_labels[None, :]
        assert np.array_equal(same[keep], full[keep]) and not same[~keep].any()
        area = np.bincount(seg.reshape(-1), minlength=g + 1)[:g]
        assert np.array_equal(mask_ious(seg, g, masks, labels, gt_labels, area), same)


def _annotation_class(doc, value):
    entry = _first_test_entry(doc)
    entry["annotations"][0]["category_id"] = value(entry["segments_info"][0]["category_id"])
    return entry["image_id"]


@pytest.mark.parametrize("protocol", ["sgbench", "sgbench-paper", "openpsg"])
@pytest.mark.parametrize("masks", [True, False])
def test_a_class_that_differs_between_annotations_and_segments_is_refused(fixture, tmp_path, capsys, protocol, masks):
    """OpenPSG and sgbench read a segment's class from `annotations`, sgg-eval from `segments_info`: where the
    two disagree each tool would score other classes, so the file is refused in one line, in both modes."""
    doc = json.loads(fixture["psg"].read_text())
    image = _annotation_class(doc, lambda c: (c + 1) % 133)
    psg = tmp_path / "psg.json"
    psg.write_text(json.dumps(doc))
    pred = fixture["zip"] if masks else fixture["json"]
    args = ["evaluate", str(pred), "--psg", str(psg), "--psg-root", str(fixture["root"]), "--protocol", protocol]
    line = refused(
        capsys, [*args, "-o", str(tmp_path / "m.json")], tmp_path, must_name=("psg.json", "annotations.category_id")
    )
    assert str(image) in line and "segments_info[0].category_id" in line, line


def test_annotations_are_optional_in_mask_mode_and_agreeing_ones_change_nothing(fixture, tmp_path):
    """Mask mode reads no box: a psg.json without `annotations` gives the same numbers as the full one."""
    doc = json.loads(fixture["psg"].read_text())
    for entry in doc["data"]:
        entry.pop("annotations", None)
    psg = tmp_path / "psg.json"
    psg.write_text(json.dumps(doc))
    bare = run_psg_evaluation(str(fixture["zip"]), str(psg), str(fixture["root"]))
    full = run_psg_evaluation(str(fixture["zip"]), str(fixture["psg"]), str(fixture["root"]))
    assert bare["metrics"] == full["metrics"]


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda i: i["instances"][0].__setitem__("category", (i["instances"][0]["category"] + 1) % 133), "category"),
        (lambda i: i["instances"][0]["bbox"].__setitem__(0, i["instances"][0]["bbox"][0] + 1), "bbox"),
        (lambda i: i["instances"].pop(), "instances under"),
    ],
)
@pytest.mark.parametrize("other", ["instances", "bboxes"])
def test_two_spellings_that_differ_are_refused_naming_both_keys(fixture, tmp_path, capsys, edit, words, other):
    doc = json.loads(fixture["json"].read_text())
    image = _first(doc)
    key = "annotation" if "annotation" in image else "instances"
    listed = image.get(key) or [{"bbox": b, "category": c} for b, c in zip(image["bboxes"], image["categories"])]
    for k in ("annotation", "instances", "bboxes", "categories"):
        image.pop(k, None)
    image["annotation"] = [dict(i, bbox=list(i["bbox"])) for i in listed]
    image["instances"] = [dict(i, bbox=list(i["bbox"])) for i in listed]
    edit(image)
    if other == "bboxes":  # the README's spelling in place of `instances`
        moved = image.pop("instances")
        image["bboxes"], image["categories"] = [i["bbox"] for i in moved], [i["category"] for i in moved]
    sub = tmp_path / "sub.json"
    sub.write_text(json.dumps(doc))
    args = ["evaluate", str(sub), "--psg", str(fixture["psg"]), "-o", str(tmp_path / "m.json")]
    line = refused(capsys, args, tmp_path, must_name=("sub.json", "'annotation'", words, "differ"))
    assert ("'bboxes' + 'categories'" if other == "bboxes" else "'instances'") in line, line


@pytest.mark.parametrize("edit", ["negative", "past_width"])
def test_a_gt_box_outside_its_image_is_refused_in_box_mode(fixture, tmp_path, capsys, edit):
    """Found by the fuzzer: a GT box coordinate of -1 changed the box-mode numbers without a word."""
    doc = json.loads(fixture["psg"].read_text())
    entry = _first_test_entry(doc)
    box = entry["annotations"][0]["bbox"]
    box[0 if edit == "negative" else 2] = -1 if edit == "negative" else entry["width"] + 5
    psg = tmp_path / "psg.json"
    psg.write_text(json.dumps(doc))
    args = ["evaluate", str(fixture["json"]), "--psg", str(psg), "-o", str(tmp_path / "m.json")]
    line = refused(capsys, args, tmp_path, must_name=("psg.json", "annotations.bbox", "outside the image"))
    assert str(entry["image_id"]) in line
