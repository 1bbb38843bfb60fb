"""GQA as Knyazev et al. split it (and GQA-nLR): generated files in each layout, read into split stores, equal a
loop written from the documented rules (tests/gqa_fixture.py); text image ids survive the stores; the zero-shot
set counts train and val as seen; bad files are refused in one line naming the file, image and field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gqa_fixture import PREDICATES, assert_refused_in_one_line, expected_split, write_gqa

from sgg_eval.data.stats import read_stats, triplet_key
from sgg_eval.data.store import SplitStore


def _split(root: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    held = () if "--num-val-im" in extra else ("--num-val-im", "40")  # of the fixture's 160: a train split remains
    return subprocess.run(
        [sys.executable, "-m", "sgg_eval.cli", "split", "--gqa-dir", str(root), "-o", str(out), *held, *extra],
        capture_output=True,
        text=True,
    )


def _read(path: Path) -> list:
    with SplitStore(path) as store:
        return list(store)


@pytest.mark.parametrize(
    "questions, nested, nlr",
    [("cache", False, False), ("balanced", True, False), ("none", False, False), ("cache", True, True)],
)
def test_split_stores_equal_the_documented_rules(tmp_path, questions, nested, nlr):
    root = write_gqa(tmp_path / "gqa", questions=questions, nested=nested)
    extra = ["--num-val-im", "40", *(["--exclude-left-right"] if nlr else [])]
    proc = _split(root, tmp_path / "s", *extra)
    assert proc.returncode == 0, proc.stderr
    for split in ("train", "val", "test"):
        want = expected_split(root, split, 40, exclude_left_right=nlr)
        assert len(want) > 5
        assert f"{tmp_path / 's' / split}.h5: {len(want)} images" in proc.stdout
        got = _read(tmp_path / "s" / f"{split}.h5")
        assert [g.image_id for g in got] == [w[0] for w in want]  # text ids, as the files give them
        for g, (image_id, w, h, boxes, labels, rels) in zip(got, want):
            assert (g.width, g.height) == (w, h), image_id
            np.testing.assert_array_equal(g.boxes, np.array(boxes, dtype=np.float32).reshape(-1, 4))
            np.testing.assert_array_equal(g.labels, labels)
            np.testing.assert_array_equal(g.rels, np.array(rels).reshape(-1, 3))
    with SplitStore(tmp_path / "s" / "test.h5") as store:
        assert store.vocab.predicate_classes == tuple(sorted(PREDICATES))  # nLR keeps the names and indices
        assert store.image_ids.dtype.kind == "S" and any(i.startswith(b"n") for i in store.image_ids)
        assert store.meta.extra["exclude_left_right"] is nlr
    if nlr:
        left_right = {sorted(PREDICATES).index(p) + 1 for p in ("to the left of", "to the right of")}
        assert not any(set(g.rels[:, 2]) & left_right for g in _read(tmp_path / "s" / "test.h5"))


def test_the_rules_matter_on_the_fixture(tmp_path):
    """The fixture exercises each rule: without it the loop would give another split."""
    root = write_gqa(tmp_path / "gqa")
    plain, nlr = expected_split(root, "test", 40), expected_split(root, "test", 40, exclude_left_right=True)
    assert len(nlr) < len(plain)  # images whose only relations are left/right
    train_all = expected_split(root, "train", 0)
    assert [i[0] for i in train_all] != sorted((i[0] for i in train_all), key=lambda s: int(s.strip("n")))
    assert any(len(i[5]) != len({tuple(r) for r in i[5]}) for i in train_all)  # duplicates kept


def test_zero_shot_test_triplets_are_unseen_in_train_and_val(tmp_path):
    root = write_gqa(tmp_path / "gqa", n_train=120, n_val=90)
    s = tmp_path / "s"
    assert _split(root, s, "--num-val-im", "50").returncode == 0
    cli = [sys.executable, "-m", "sgg_eval.cli", "stats", str(s / "train.h5"), "--test", str(s / "test.h5")]
    assert subprocess.run([*cli, "--seen", str(s / "val.h5"), "-o", str(tmp_path / "zs.h5")]).returncode == 0
    assert subprocess.run([*cli, "-o", str(tmp_path / "train_only.h5")]).returncode == 0

    def triplets(split):
        return {(g.labels[r[0]], g.labels[r[1]], r[2]) for g in _read(s / f"{split}.h5") for r in g.rels}

    def zero_shot(path):
        return {tuple(int(v) for v in row) for row in read_stats(path).zeroshot_triplets}

    want = triplets("test") - triplets("train") - triplets("val")
    assert zero_shot(tmp_path / "zs.h5") == want
    assert zero_shot(tmp_path / "train_only.h5") == triplets("test") - triplets("train") != want
    alone = subprocess.run([*cli[:5], "--seen", str(s / "val.h5"), "-o", str(tmp_path / "x.h5")], capture_output=True)
    assert alone.returncode == 2 and b"give --test too" in alone.stderr  # --seen means nothing without --test


def _mutate(root: Path, name: str, change) -> None:
    path = next(root.rglob(name))
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _kept(doc: dict, wanted=lambda o: True) -> tuple[str, dict]:
    """An image id and graph the split keeps (it has an object with a relation), and one of its objects."""
    for image_id, sg in sorted(doc.items()):
        for obj in sg["objects"].values():
            if obj["relations"] and obj["x"] >= 0 and obj["y"] >= 0 and obj["w"] > 0 and obj["h"] > 0 and wanted(obj):
                return image_id, obj
    raise AssertionError("no such image")


def _unknown_target(doc):
    _kept(doc)[1]["relations"][0]["object"] = "999999"


def _negative_width(doc):
    doc[_kept(doc)[0]]["width"] = -4


def _text_x(doc):
    _kept(doc)[1]["x"] = "12"


def _fractional_h(doc):
    _kept(doc)[1]["h"] = 0.5


def _false_id(doc):
    doc[0] = False


def _nameless(doc):
    del _kept(doc)[1]["name"]


def _huge_box(doc):
    _kept(doc)[1]["w"] = 2**25  # x + w past float32's whole numbers


@pytest.mark.parametrize(
    "name, change, says",
    [
        ("val_sceneGraphs.json", _unknown_target, ["val_sceneGraphs.json", "image ", "'relations'", "'999999'"]),
        ("val_sceneGraphs.json", _negative_width, ["val_sceneGraphs.json", "image ", "'width/height'"]),
        ("train_sceneGraphs.json", _text_x, ["train_sceneGraphs.json", "image ", "'x/y/w/h'"]),
        ("train_sceneGraphs.json", _fractional_h, ["train_sceneGraphs.json", "image ", "'x/y/w/h'", "integers"]),
        ("train_images.json", _false_id, ["train_images.json", "'imageId'", "False"]),
        ("train_sceneGraphs.json", _nameless, ["train_sceneGraphs.json", "image ", "'objects.name'"]),
        ("val_sceneGraphs.json", _huge_box, ["val_sceneGraphs.json", "image ", "'x/y/w/h'", "2^24"]),
        ("val_sceneGraphs.json", lambda d: d.update({"bad id": d.popitem()[1]}), ["'image_id'", "'bad id'"]),
        ("train_images.json", lambda d: d.append(7), ["train_images.json", "'imageId'", "is not text"]),
        ("train_images.json", lambda d: d.append("4242"), ["train_images.json", "'4242' has questions but no scene"]),
    ],
)
def test_a_bad_file_is_refused_in_one_line_naming_file_image_and_field(tmp_path, name, change, says):
    root = write_gqa(tmp_path / "gqa")
    _mutate(root, name, change)
    assert_refused_in_one_line(_split(root, tmp_path / "s"), says, tmp_path / "s")


def test_missing_files_and_misused_flags_are_one_line(tmp_path):
    proc = _split(tmp_path / "nowhere", tmp_path / "s")
    assert proc.returncode == 2 and "train_sceneGraphs.json" in proc.stderr and "file not found" in proc.stderr
    root = write_gqa(tmp_path / "gqa")
    proc = subprocess.run(
        [sys.executable, "-m", "sgg_eval.cli", "split", "--simulated", "--exclude-left-right", "-o", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "--gqa-dir" in proc.stderr
    proc = _split(root, tmp_path / "s", "--gqa200-dir", str(root))  # two sources: never one chosen silently
    assert proc.returncode == 2 and "give one source, not --gqa-dir and --gqa200-dir" in proc.stderr
    _mutate(root, "train_sceneGraphs.json", lambda d: [
        r.update(name="near") for sg in d.values() for o in sg["objects"].values() for r in o["relations"]
        if r["name"] == "to the right of"])  # fmt: skip
    _mutate(root, "val_sceneGraphs.json", lambda d: [
        r.update(name="near") for sg in d.values() for o in sg["objects"].values() for r in o["relations"]
        if r["name"] == "to the right of"])  # fmt: skip
    proc = _split(root, tmp_path / "s", "--exclude-left-right")
    assert proc.returncode == 2 and "'to the right of'" in proc.stderr


@pytest.mark.skipif("not __import__('os').environ.get('SGG_EVAL_GQA_DIR')")
def test_real_gqa_files_give_knyazevs_sizes(tmp_path):
    """On the real download (SGG_EVAL_GQA_DIR: the scene graphs and the balanced questions), the split sizes
    Knyazev's loader asserts: 10,055 test images, 6,418 of them with a zero-shot triplet."""
    import os

    s = tmp_path / "s"
    assert _split(Path(os.environ["SGG_EVAL_GQA_DIR"]), s).returncode == 0
    stats = tmp_path / "stats.h5"
    cli = [sys.executable, "-m", "sgg_eval.cli", "stats", str(s / "train.h5"), "--test", str(s / "test.h5")]
    assert subprocess.run([*cli, "--seen", str(s / "val.h5"), "-o", str(stats)]).returncode == 0
    test = _read(s / "test.h5")
    assert len(test) == 10_055
    zs = read_stats(stats).zeroshot_triplets
    n_obj, n_pred = len(read_stats(stats).vocab.object_classes), len(read_stats(stats).vocab.predicate_classes)
    keys = set(triplet_key(zs[:, 0], zs[:, 1], zs[:, 2], n_obj, n_pred).tolist())
    with_zs = sum(
        bool(
            keys
            & set(triplet_key(g.labels[g.rels[:, 0]], g.labels[g.rels[:, 1]], g.rels[:, 2], n_obj, n_pred).tolist())
        )
        for g in test
    )
    assert with_zs == 6_418
