"""Action Genome's files: STTran's loader rules (video.ag_annotations), the plain-data pickle reader, the split
store, the per-video predictions in their three forms, and every bad file getting one line and exit 2 with
nothing written."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
from ag_fixture import release_with_splits
from torch_writer import save_zip

from sgg_eval.cli import main
from sgg_eval.core.errors import InputError
from sgg_eval.formats.plain_pickle import load_plain
from sgg_eval.video.ag_audit import VideoVariant, match
from sgg_eval.video.ag_beyond import wimr_at
from sgg_eval.video.ag_evaluate import open_split
from sgg_eval.video.ag_example import predictions_for, write_release
from sgg_eval.video.ag_store import read_ag_store


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("ag")
    return root, release_with_splits(root, 30, seed=3)


def _objects(root) -> dict:
    with open(root / "AG" / "annotations" / "object_bbox_and_relationship.pkl", "rb") as fh:
        return pickle.load(fh)  # our own generated file


def test_the_loader_keeps_frames_and_videos_as_sttran_does(release):
    root, _ = release
    annotations = str(root / "AG" / "annotations")
    with open(os.path.join(annotations, "person_bbox.pkl"), "rb") as fh:
        persons = pickle.load(fh)  # our own generated file
    objects = _objects(root)
    stored, vocab, object_file = read_ag_store(root / "splits" / "test.h5")
    assert object_file == "object_bbox_and_relationship.pkl" and vocab.objects[8] == "closet/cabinet"
    split, _, videos_stored = open_split(str(root / "splits" / "test.h5"), "predcls", "sttran")
    # written from the rules, key by key
    videos: dict[str, list[str]] = {}
    for key in persons:
        entries = objects[key]
        if entries[0]["metadata"]["set"] == "test" and any(e["visible"] for e in entries):
            videos.setdefault(key.split("/")[0], []).append(key)
    with_person = {v: [k for k in keys if len(persons[k]["bbox"])] for v, keys in videos.items()}
    with_person = {v: keys for v, keys in with_person.items() if keys}
    assert stored.videos == videos_stored == list(with_person)  # the store: every video with a frame
    assert stored.frame_keys == [k for keys in with_person.values() for k in keys]
    kept = {v: keys for v, keys in with_person.items() if len(keys) > 2}
    assert split.videos == list(kept) and split.frame_keys == [k for keys in kept.values() for k in keys]
    assert (split.counts["videos"], split.counts["frames"]) == (len(kept), len(split.frame_keys))
    assert split.counts["one_frame_videos"] == sum(
        len([k for k in keys if len(persons[k]["bbox"])]) == 1 for keys in videos.values()
    )
    f = 0
    key = split.frame_keys[f]
    visible = [e for e in objects[key] if e["visible"]]
    b0, b1 = split.box_offsets[f], split.box_offsets[f + 1]
    assert b1 - b0 == 1 + len(visible)
    assert split.boxes[b0].tolist() == persons[key]["bbox"][0].astype(np.float64).tolist()
    x, y, w, h = visible[0]["bbox"]
    assert split.boxes[b0 + 1].tolist() == [x, y, x + w, y + h]
    rels = split.rels[split.rel_offsets[f] : split.rel_offsets[f + 1]].tolist()
    want = []
    for m, e in enumerate(visible, start=1):
        want.append([0, m, vocab.predicates.index(e["attention_relationship"][0]) + 1])
        want += [[m, 0, vocab.predicates.index(s) + 1] for s in e["spatial_relationship"]]
        want += [[0, m, vocab.predicates.index(c) + 1] for c in e["contacting_relationship"]]
    assert rels == want


def test_oed_takes_the_frames_and_gt_its_loader_makes(release):
    """OED's rules, written key by key: every video with a frame, boxes clamped to the frame (bbox_size) and an
    object left empty dropped with its relations, each object's relations a set; and the fixture has each case."""
    root, _ = release
    with open(root / "AG" / "annotations" / "person_bbox.pkl", "rb") as fh:
        persons = pickle.load(fh)  # our own generated file
    objects = _objects(root)
    split, vocab, _ = open_split(str(root / "splits" / "test.h5"), "sgdet", "oed")
    videos: dict[str, list] = {}
    seen = dict.fromkeys(("clamped", "dropped", "repeated"), 0)
    for key in persons:
        entries = objects[key]
        if not (entries[0]["metadata"]["set"] == "test" and any(e["visible"] for e in entries)):
            continue
        frames = videos.setdefault(key.split("/")[0], [])
        if not len(persons[key]["bbox"]):
            continue
        w, h = persons[key]["bbox_size"]
        boxes, rels = [[float(v) for v in persons[key]["bbox"][0]]], set()
        for e in (e for e in entries if e["visible"]):
            x, y, bw, bh = e["bbox"]
            box = [min(max(x, 0), w), min(max(y, 0), h), min(max(x + bw, 0), w), min(max(y + bh, 0), h)]
            seen["clamped"] += box != [x, y, x + bw, y + bh]
            if not (box[2] > box[0] and box[3] > box[1]):
                seen["dropped"] += 1
                continue
            boxes.append(box)
            m = len(boxes) - 1
            names = [(m, 0, s) for s in e["spatial_relationship"]] + [(0, m, c) for c in e["contacting_relationship"]]
            seen["repeated"] += len(set(names)) < len(names)
            rels |= {(a, b, vocab.predicates.index(p) + 1) for a, b, p in names}
            rels.add((0, m, vocab.predicates.index(e["attention_relationship"][0]) + 1))
        if rels:
            frames.append((key, boxes, sorted(rels)))
    want = [frame for frames in videos.values() for frame in frames]
    assert split.frame_keys == [key for key, _, _ in want]
    assert split.videos == [v for v, frames in videos.items() if frames]
    assert min(np.bincount(split.frame_video)) < 3 and all(seen.values()), seen
    for f, (_, boxes, rels) in enumerate(want):
        assert split.boxes[split.box_offsets[f] : split.box_offsets[f + 1]].tolist() == boxes
        assert sorted(map(tuple, split.rels[split.rel_offsets[f] : split.rel_offsets[f + 1]].tolist())) == rels


def test_the_small_box_store_has_fewer_relations(release):
    root, _ = release
    full, _, _ = read_ag_store(root / "splits" / "test.h5")
    small, _, object_file = read_ag_store(root / "splits" / "test_filtersmall.h5")
    assert object_file == "object_bbox_and_relationship_filtersmall.pkl"
    assert len(small.rels) < len(full.rels)


def test_every_prediction_form_gives_the_same_numbers(release, tmp_path):
    """The same predictions as .npz files, as .pt files (tensors, read without torch) and as one torch file."""
    root, _ = release
    split, _, _ = read_ag_store(root / "splits" / "test.h5")
    preds = predictions_for(split, "predcls", seed=1)
    got = {}
    for form in ("npz", "pt", "one torch file"):
        out = tmp_path / form
        out.mkdir()
        for video, arrays in preds.items():
            if form == "npz":
                np.savez(out / f"{video}.npz", **arrays)
            elif form == "pt":
                save_zip(arrays, out / f"{video.removesuffix('.mp4')}.pt")  # arrays are written as tensors
        if form == "one torch file":
            out = tmp_path / "preds.pt"
            save_zip(preds, out)
        doc = tmp_path / f"{form}.json"
        assert main(["evaluate", str(out), "--ag", str(root / "splits" / "test.h5"), "--task", "predcls",
                     "--constraint", "semi", "-o", str(doc)]) == 0  # fmt: skip
        got[form] = json.loads(doc.read_text())["results"]["semi"]["metrics"]
    assert got["npz"] == got["pt"] == got["one torch file"] and got["npz"]["R@20"] > 0


def test_all_three_constraints_at_once_equal_each_alone(release, tmp_path):
    root, _ = release
    split, _, _ = read_ag_store(root / "splits" / "test_filtersmall.h5")
    for video, arrays in predictions_for(split, "sgcls", seed=4).items():
        np.savez(tmp_path / f"{video}.npz", **arrays)
    store = str(root / "splits" / "test_filtersmall.h5")
    args = [str(tmp_path), "--ag", store, "--task", "sgcls"]
    assert main(["evaluate", *args, "--constraint", "all", "-o", str(tmp_path / "all.json")]) == 0
    every = json.loads((tmp_path / "all.json").read_text())["results"]
    for c in ("with", "semi", "no"):
        assert main(["evaluate", *args, "--constraint", c, "-o", str(tmp_path / f"{c}.json")]) == 0
        assert json.loads((tmp_path / f"{c}.json").read_text())["results"][c] == every[c]


def _bad_release(tmp_path, edit) -> str:
    root = tmp_path / "AG"
    write_release(str(root), 12, seed=5)
    path = root / "annotations" / "object_bbox_and_relationship.pkl"
    with open(path, "rb") as fh:
        objects = pickle.load(fh)  # our own generated file
    edit(objects)
    with open(path, "wb") as fh:
        pickle.dump(objects, fh)
    return str(root)


def _first_visible(objects) -> dict:
    return next(e for entries in objects.values() for e in entries if e["visible"] and e["metadata"]["set"] == "test")


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/sgg_eval_ag_pwned",))


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda o: _first_visible(o).update(attention_relationship=[]), "exactly one expected"),
        (lambda o: _first_visible(o).update(spatial_relationship=["on_top_of"]), "not one of Action Genome's spatial"),
        (lambda o: _first_visible(o).update(bbox=None), "a visible object without a box"),
        (lambda o: _first_visible(o).update(bbox=(1.0, 2.0, float("nan"), 4.0)), "finite"),
        (lambda o: _first_visible(o).update(**{"class": "unicorn"}), "not one of Action Genome's 36"),
        (lambda o: _first_visible(o).update(metadata=_Evil()), "not plain data"),
        # names that do not hash (the fuzzer's cases: exit 1 where a dict lookup met them)
        (lambda o: _first_visible(o).update(spatial_relationship=[[1, 2]]), "not one of Action Genome's spatial"),
        (lambda o: _first_visible(o).update(attention_relationship=[{}]), "not one of Action Genome's attention"),
        (lambda o: _first_visible(o).update(**{"class": ["person"]}), "not one of Action Genome's 36"),
    ],
)
def test_bad_ag_files_get_one_line_and_exit_2(tmp_path, capsys, edit, says):
    root = _bad_release(tmp_path, edit)
    out = tmp_path / "splits"
    assert main(["split", "--ag-dir", root, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1 and "object_bbox_and_relationship.pkl" in err
    assert not os.path.exists("/tmp/sgg_eval_ag_pwned")
    assert not out.exists() or not os.listdir(out)


def test_a_pickle_of_arrays_of_objects_is_refused(tmp_path):
    path = tmp_path / "p.pkl"
    with open(path, "wb") as fh:
        pickle.dump({"a": np.array([object(), 1], dtype=object)}, fh)
    with pytest.raises(InputError, match="not plain"):
        load_plain(path)
    with open(path, "wb") as fh:
        pickle.dump({"a": np.arange(6, dtype=np.float32).reshape(2, 3)}, fh)
    assert load_plain(path)["a"].array.tolist() == [[0, 1, 2], [3, 4, 5]]
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(InputError, match="not a readable pickle"):
        load_plain(path)
    # numpy.ndarray called by the pickle itself (an uninitialised array of any size): refused, nothing allocated
    path.write_bytes(b"\x80\x02cnumpy\nndarray\nq\x00J\x00\xe4\x0bT\x85q\x01\x85q\x02Rq\x03.")
    with pytest.raises(InputError, match="not a readable pickle"):
        load_plain(path)


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("im_idx", lambda a: a + 0.5, "not an integer"),
        ("pair_idx", lambda a: a + 10_000, "indices into the"),
        ("spatial_distribution", lambda a: a * 3, "outside [0, 1]"),
        ("attention_distribution", lambda a: a[:, :2], "finite floats expected"),
        ("boxes", lambda a: np.where(a > 50, np.inf, a).astype(np.float32), "not finite"),
        # 0-d arrays (the fuzzer's cases: len() of an unsized object was exit 1)
        ("boxes", lambda a: np.array(a.ravel()[0]), "[N, 5] numbers expected"),
        ("pair_idx", lambda a: np.array(a.ravel()[0]), "[P, 2] integer indices"),
    ],
)
def test_bad_predictions_get_one_line_and_exit_2(release, tmp_path, capsys, key, value, says):
    root, _ = release
    split, _, _ = read_ag_store(root / "splits" / "test.h5")
    preds = predictions_for(split, "predcls", seed=1)
    first = split.videos[0]
    preds[first][key] = value(preds[first][key])
    for video, arrays in preds.items():
        np.savez(tmp_path / f"{video}.npz", **arrays)
    out = tmp_path / "m.json"
    assert main(["evaluate", str(tmp_path), "--ag", str(root / "splits" / "test.h5"), "--task", "predcls",
                 "-o", str(out)]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert says in err and f"video {first}" in err and key in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_the_training_split_gives_sgg_evals_own_family(release, tmp_path, capsys):
    """--ag-train: zR, wIMR and head/body/tail in beyond_protocol, from the train split STTran's loader keeps; IMR
    needs no training split; a test store given as the training split is refused."""
    root, _ = release
    split, _, _ = open_split(str(root / "splits" / "test.h5"), "predcls", "sttran")
    for video, arrays in predictions_for(split, "predcls", seed=6).items():
        np.savez(tmp_path / f"{video}.npz", **arrays)
    args = ["evaluate", str(tmp_path), "--ag", str(root / "splits" / "test.h5"), "--task", "predcls"]
    assert main([*args, "--constraint", "no", "-o", str(tmp_path / "plain.json")]) == 0
    plain = json.loads((tmp_path / "plain.json").read_text())["results"]["no"]["beyond_protocol"]
    assert set(plain["metrics"]) == {f"IMR@{k}" for k in (10, 20, 50, 100)} and "--ag-train" in plain["notes"][0]
    train = str(root / "splits" / "train.h5")
    assert main([*args, "--constraint", "no", "--ag-train", train, "-o", str(tmp_path / "own.json")]) == 0
    out = capsys.readouterr().out
    own = json.loads((tmp_path / "own.json").read_text())["results"]["no"]["beyond_protocol"]
    assert "sgg-eval's own (beyond_protocol in the JSON): zR@20" in out
    assert own["metrics"]["IMR@50"] == plain["metrics"]["IMR@50"] and own["zero_shot_relations"] > 0
    assert all(own["metrics"][f"{n}@50"] is not None for n in ("zR", "wIMR", "mR_per_frame_tail", "mR_pooled_head"))
    assert [len(own["longtail"][g]) for g in ("head", "body", "tail")] == [2, 6, 18]
    assert wimr_at(own, 50, 0.5) == own["metrics"]["wIMR@50"] and wimr_at(own, 20, 0.0) == own["metrics"]["IMR@20"]
    assert wimr_at(plain, 50, 0.5) is None
    assert main([*args, "--ag-train", str(root / "splits" / "test.h5")]) == 2
    assert "--ag-train takes the train.h5" in capsys.readouterr().err


def test_the_audit_says_which_variant_a_published_number_is(release, tmp_path, capsys):
    """A value printed from one variant (oed, no constraint, DSG-DETR's mR@50 to two decimals) is found, and only
    it; a value two variants round to is called ambiguous; one none rounds to names the closest."""
    root, _ = release
    split, _, _ = open_split(str(root / "splits" / "test.h5"), "predcls", "oed")
    for video, arrays in predictions_for(split, "predcls", seed=7, attention="probabilities").items():
        np.savez(tmp_path / f"{video}.npz", **arrays)
    assert main(["evaluate", str(tmp_path), "--ag", str(root / "splits" / "test.h5"), "--task", "predcls",
                 "--protocol", "oed", "--constraint", "no", "-o", str(tmp_path / "no.json")]) == 0  # fmt: skip
    value = json.loads((tmp_path / "no.json").read_text())["results"]["no"]["metrics"]["mR_per_frame@50"]
    capsys.readouterr()
    published = f"mR@50={100 * value:.2f}"
    assert main(["audit", str(tmp_path), "--ag", str(root / "splits"), "--task", "predcls", "--attention",
                 "probabilities", "--published", published, "-o", str(tmp_path / "audit.json")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"- `{published}`: mR@50 per frame (DSG-DETR), oed no\n" in out
    assert "| R | oed | with |" in out and "| R | sttran | semi |" in out
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert {v["protocol"] for v in doc["variants"]} == {"sttran", "oed"} and not doc["notes"]
    assert main(["audit", str(tmp_path), "--task", "predcls", "--attention", "logits"]) == 2
    assert "--attention is Action Genome's" in capsys.readouterr().err

    rows = [VideoVariant("R", "", 20, "sttran", "with", 0.3312), VideoVariant("R", "", 20, "oed", "with", 0.3308),
            VideoVariant("R", "", 20, "sttran", "no", 0.41)]  # fmt: skip
    assert match("R@20=33.1", rows)["verdict"].startswith("AMBIGUOUS, 2 variants")
    assert match("R@20=33.12", rows)["matches"] == ["R@20, sttran with"]
    assert match("R@20=39", rows)["verdict"] == "no variant within rounding (closest: R@20, sttran no = 41.0)"
