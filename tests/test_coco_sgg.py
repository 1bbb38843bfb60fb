"""`sgg-eval split --coco-sgg`: COCO-style scene graphs read as SGG-Benchmark's loader reads them, against a slow
loop written from its rules (docs/sgg_benchmark.md) on random files with every case its loader treats specially,
and its refusals. The loader itself, run outside the repository on these files, gave the same stores (the note of
issue 69)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from coco_sgg_fixture import coco_sgg_document, write_coco_sgg

from sgg_eval.cli import main
from sgg_eval.data.store import SplitStore


def loop_reference(doc: dict, seed: int | None) -> tuple[list, list, list]:
    """The loader's rules, one entry at a time: (classes, predicates, images as (id, W, H, boxes, labels, rels)).
    ``seed``: the evaluation GT's one-predicate-per-pair draw with NumPy's generator seeded so; None keeps all."""
    id_to_class = {c["id"]: c["name"] for c in doc["categories"]}
    id_to_class[0] = "__background__"
    classes = [id_to_class[i] for i in sorted(id_to_class)]
    id_to_pred = {p["id"]: p["name"] for p in doc["rel_categories"]}
    id_to_pred[0] = "__background__"
    predicates = [id_to_pred[i] for i in sorted(id_to_pred)]
    draw = np.random.RandomState(seed) if seed is not None else None
    out = []
    for image in doc["images"]:
        if not any(r["image_id"] == image["id"] for r in doc["rel_annotations"]):
            continue
        boxes, labels, index = [], [], {}
        for ann in doc["annotations"]:
            if ann["image_id"] == image["id"]:
                x, y, w, h = ann["bbox"]
                index[ann["id"]] = len(boxes)
                boxes.append([x, y, x + w, y + h])
                labels.append(classes.index(id_to_class[ann["category_id"]]))
        rels = []
        for r in doc["rel_annotations"]:
            if r["image_id"] != image["id"] or r["predicate_id"] not in id_to_pred:
                continue
            if r["subject_id"] in index and r["object_id"] in index:
                rels.append(
                    [index[r["subject_id"]], index[r["object_id"]], predicates.index(id_to_pred[r["predicate_id"]])]
                )
        if draw is not None and rels:
            groups = {}
            for s, o, p in rels:
                groups.setdefault((s, o), []).append(p)
            rels = [[s, o, int(draw.choice(v))] for (s, o), v in groups.items()]
        b = np.array(boxes, dtype=np.float32).reshape(-1, 4)
        b = np.stack([np.clip(b[:, 0], 0, image["width"]), np.clip(b[:, 1], 0, image["height"]),
                      np.clip(b[:, 2], 0, image["width"]), np.clip(b[:, 3], 0, image["height"])], axis=1)  # fmt: skip
        out.append((image["id"], image["width"], image["height"], b, labels, rels))
    return classes, predicates, out


def read(path: Path):
    with SplitStore(path) as store:
        return store.meta, list(store)


@pytest.mark.parametrize("seed", range(4))
def test_every_split_equals_the_rules_written_as_loops(tmp_path, seed, capsys):
    root = write_coco_sgg(tmp_path / "coco", seed)
    assert main(["split", "--coco-sgg", str(root), "--draw-seed", str(seed), "--splits", "train,test",
                 "-o", str(tmp_path / "out")]) == 0  # fmt: skip
    for split, drawn in (("train", None), ("test", seed)):  # train keeps every relation: its statistics count them
        doc = json.loads((root / split / "_annotations.coco.json").read_text())
        classes, predicates, expected = loop_reference(doc, drawn)
        meta, images = read(tmp_path / "out" / f"{split}.h5")
        assert list(meta.vocab.object_classes) == classes[1:] and list(meta.vocab.predicate_classes) == predicates[1:]
        assert len(images) == len(expected)
        for got, (image_id, width, height, boxes, labels, rels) in zip(images, expected):
            assert (got.image_id, got.width, got.height) == (image_id, width, height)
            assert got.boxes.dtype == np.float32 and np.array_equal(got.boxes, boxes)
            assert got.labels.tolist() == labels and got.rels.tolist() == rels
    out = capsys.readouterr().out
    assert "relations beside the one predicate drawn for their (subject, object) pair" in out
    assert "relations to an annotation that is not one of the image's" in out or seed  # most seeds have one


def test_the_counts_say_what_the_loader_left_out(tmp_path):
    doc = coco_sgg_document(np.random.default_rng(3))
    root = tmp_path / "coco"
    (root / "test").mkdir(parents=True)
    (root / "test/_annotations.coco.json").write_text(json.dumps(doc))
    assert main(["split", "--coco-sgg", str(root), "--splits", "test", "-o", str(tmp_path / "out")]) == 0
    meta, images = read(tmp_path / "out/test.h5")
    listed = {i["id"] for i in doc["images"]}
    pred_ids = {p["id"] for p in doc["rel_categories"]}
    dropped = meta.extra["dropped"]
    assert dropped["rel_annotations_of_unlisted_images"] == sum(
        r["image_id"] not in listed for r in doc["rel_annotations"]
    )
    assert dropped["annotations_of_unlisted_images"] == 1
    assert dropped["relations_of_unknown_predicates"] == sum(
        r["predicate_id"] not in pred_ids for r in doc["rel_annotations"] if r["image_id"] in listed
    )
    kept = sum(len(g.rels) for g in images)
    read_ones = sum(r["image_id"] in listed for r in doc["rel_annotations"])
    assert kept + sum(v for k, v in dropped.items() if k.startswith("relations_")) == read_ones
    assert meta.extra["relations"] == "one predicate per pair, drawn with seed 0"


def test_keep_all_relations_draws_nothing_and_seeds_change_only_the_draw(tmp_path):
    root = write_coco_sgg(tmp_path / "coco", 5, splits=("test",))
    stores = {}
    for name, flags in (("all", ["--keep-all-relations"]), ("s0", []), ("s0b", ["--draw-seed", "0"]),
                        ("s7", ["--draw-seed", "7"])):  # fmt: skip
        assert main(["split", "--coco-sgg", str(root), "--splits", "test", "-o", str(tmp_path / name), *flags]) == 0
        stores[name] = tmp_path / name / "test.h5"
    doc = json.loads((root / "test/_annotations.coco.json").read_text())
    _, _, every = loop_reference(doc, None)
    assert [g.rels.tolist() for g in read(stores["all"])[1]] == [r for *_, r in every]
    assert stores["s0"].read_bytes() == stores["s0b"].read_bytes()  # the default seed is 0; the same bytes
    pairs = lambda path: [sorted(map(tuple, g.rels[:, :2].tolist())) for g in read(path)[1]]  # noqa: E731
    assert pairs(stores["s0"]) == pairs(stores["s7"])  # the same pairs, perhaps other predicates
    assert read(stores["all"])[0].extra["dropped"]["relations_left_by_the_pair_draw"] == 0


def _refused(tmp_path, capsys, change, *flags) -> str:
    doc = coco_sgg_document(np.random.default_rng(1))
    change(doc)
    root = tmp_path / "coco"
    (root / "test").mkdir(parents=True, exist_ok=True)
    (root / "test/_annotations.coco.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["split", "--coco-sgg", str(root), "--splits", "test", "-o", str(tmp_path / "out"), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and not (tmp_path / "out" / "test.h5").exists()
    return err


def _set(path: str, value):
    def change(doc):
        *keys, last = path.split(".")
        target = doc
        for key in keys:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value

    return change


@pytest.mark.parametrize(
    "change, says",
    [
        (_set("categories.0.id", 0), "overwrites id 0 with its background"),
        (_set("rel_categories.0.id", 0), "overwrites id 0 with its background"),
        (_set("categories.1.name", "chair"), "is empty, repeated or the background's"),
        (_set("categories.1.id", None), 'expected {"id": integer, "name": string}'),
        (lambda d: d["categories"].append(dict(d["categories"][0], name="x")), "given twice"),
        (lambda d: d["images"].append(dict(d["images"][0])), "given twice"),
        (_set("images.1.id", "b"), "image ids mix integers and text"),
        (lambda d: [a.update(category_id=12345) for a in d["annotations"]], "is not in categories"),
        (lambda d: [a.update(bbox=[0, 0, float("nan"), 1]) for a in d["annotations"]], "NaN is not a JSON number"),
        (lambda d: [a.update(bbox=[0, 0, "3", 1]) for a in d["annotations"]], "expected numbers"),
        (lambda d: [a.update(bbox=[0, 0, -3, 1]) for a in d["annotations"]], "w < 0 or h < 0"),
        (lambda d: [a.update(bbox=[0, 0, 3]) for a in d["annotations"]], "shape"),
        (lambda d: [i.update(width=0) for i in d["images"]], "not a width and height in whole pixels"),
        (lambda d: d.pop("annotations"), "missing, or not a list"),
        (lambda d: d.pop("rel_categories"), "no entry: nothing could be labelled or evaluated"),
        (lambda d: d["annotations"].append(dict(d["annotations"][0])), "given twice"),
    ],
)
def test_bad_files_get_one_line_naming_the_file_and_field(tmp_path, capsys, change, says):
    err = _refused(tmp_path, capsys, change)
    assert says in err and "_annotations.coco.json" in err, err


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--simulated", "--draw-seed", "3"], "--draw-seed is for COCO-style files"),
        (["--simulated", "--keep-all-relations"], "--keep-all-relations is for COCO-style files"),
        (["--coco-sgg", "X", "--keep-all-relations", "--draw-seed", "1"], "draws nothing"),
        (["--coco-sgg", "X", "--num-val-im", "3"], "their own val split"),
        (["--coco-sgg", "X", "--simulated"], "give one source"),
    ],
)
def test_options_of_the_coco_files_only_with_them(tmp_path, capsys, flags, says):
    assert main(["split", *flags, "-o", str(tmp_path / "out")]) == 2
    assert says in capsys.readouterr().err


def test_a_missing_split_file_is_named(tmp_path, capsys):
    assert main(["split", "--coco-sgg", str(tmp_path), "--splits", "test", "-o", str(tmp_path / "out")]) == 2
    assert f"{tmp_path}/test/_annotations.coco.json" in capsys.readouterr().err


def _leaves(value, at=()):
    """Every key path of a JSON document."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield (*at, key)
        yield from _leaves(child, (*at, key))


def test_mutated_files_are_read_or_refused_in_one_line(tmp_path, capsys):
    """300 files with one to three values replaced by another JSON type, an out-of-range number, or removed: each
    is read (exit 0) or refused with one line (exit 2) and no store; never our own error (exit 1)."""
    rng = np.random.default_rng(11)
    base = coco_sgg_document(np.random.default_rng(4))
    paths = list(_leaves(base))
    swaps = [None, -1, 0, "x", "", [], {}, 1e300, -1e300, True, 2**40, 1.5, [1, 2], {"id": 1}]
    root = tmp_path / "coco"
    (root / "test").mkdir(parents=True)
    outcomes = []
    for n in range(300):
        doc = json.loads(json.dumps(base))
        for _ in range(int(rng.integers(1, 4))):
            *parents, last = paths[int(rng.integers(len(paths)))]
            target = doc
            try:
                for key in parents:
                    target = target[key]
                if rng.random() < 0.2:
                    del target[last]
                else:
                    target[last] = swaps[int(rng.integers(len(swaps)))]
            except (KeyError, IndexError, TypeError):
                pass  # an earlier change removed or replaced the path
        (root / "test/_annotations.coco.json").write_text(json.dumps(doc))
        out = tmp_path / f"out{n}"
        code = main(["split", "--coco-sgg", str(root), "--splits", "test", "-o", str(out)])
        err = capsys.readouterr().err.strip()
        assert code in (0, 2) and "\n" not in err, (n, code, err)
        assert (code == 0) == (out / "test.h5").exists() and (code == 0) == (err == ""), (n, err)
        outcomes.append(code)
    assert 0 < outcomes.count(2) < len(outcomes)  # both read and refused files among them


def _same_store(a: Path, b: Path) -> None:
    (meta_a, images_a), (meta_b, images_b) = read(a), read(b)
    assert meta_a.vocab == meta_b.vocab and meta_a.split == meta_b.split
    kept = [g for g in images_a if len(g.rels)]  # the format's loader drops an image without a relation
    assert len(images_b) == len(kept) > 0
    for x, y in zip(kept, images_b):
        assert (x.image_id, x.width, x.height) == (y.image_id, y.width, y.height)
        assert x.boxes.dtype == y.boxes.dtype and np.array_equal(x.boxes, y.boxes)
        assert np.array_equal(x.labels, y.labels) and np.array_equal(x.rels, y.rels)


@pytest.mark.parametrize("dataset", ["vg150", "gqa", "coco"])
def test_export_then_split_gives_the_same_store_back(tmp_path, capsys, dataset):
    """VG150's and GQA's fixtures and a COCO-style file (every relation kept) written out and read back with every
    relation and the boxes as written (GQA's go past the border): the same images, boxes to the bit, labels,
    relations and names, except the images without a relation the format's loader drops."""
    from gqa_fixture import write_gqa
    from vg150_fixture import write_vg150_fixture

    raw = tmp_path / "raw"
    source = {"vg150": lambda: ["--vg150-dir", str(write_vg150_fixture(raw)), "--num-val-im", "0"],
              "gqa": lambda: ["--gqa-dir", str(write_gqa(raw)), "--num-val-im", "20"],
              "coco": lambda: ["--coco-sgg", str(write_coco_sgg(raw, 9)), "--keep-all-relations"]}  # fmt: skip
    assert main(["split", *source[dataset](), "--splits", "train,test", "-o", str(tmp_path / "a")]) == 0
    stores = [str(tmp_path / "a" / f"{s}.h5") for s in ("train", "test")]
    capsys.readouterr()
    assert main(["export", *stores, "--coco-sgg", str(tmp_path / "coco_out")]) == 0
    printed = capsys.readouterr().out
    assert f"{tmp_path}/coco_out/test/_annotations.coco.json: " in printed
    assert main(["split", "--coco-sgg", str(tmp_path / "coco_out"), "--keep-all-relations", "--no-clip", "--splits",
                 "train,test", "-o", str(tmp_path / "b")]) == 0  # fmt: skip
    for split in ("train", "test"):
        _same_store(tmp_path / "a" / f"{split}.h5", tmp_path / "b" / f"{split}.h5")
    again = tmp_path / "coco_again"
    assert main(["export", *stores, "--coco-sgg", str(again)]) == 0  # the same bytes every time
    for split in ("train", "test"):
        name = f"{split}/_annotations.coco.json"
        assert (again / name).read_bytes() == (tmp_path / "coco_out" / name).read_bytes()


def test_export_refuses_two_stores_of_one_split_and_writes_nothing(tmp_path, capsys):
    root = write_coco_sgg(tmp_path / "raw", 2, splits=("test",))
    assert main(["split", "--coco-sgg", str(root), "--splits", "test", "-o", str(tmp_path / "a")]) == 0
    assert main(["split", "--coco-sgg", str(root), "--splits", "test", "-o", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    code = main(["export", str(tmp_path / "a/test.h5"), str(tmp_path / "b/test.h5"), "--coco-sgg", str(tmp_path / "o")])
    assert code == 2 and "two stores of the split 'test'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


DELETE = object()


@pytest.mark.parametrize(
    ("key", "field", "value"),
    [
        ("rel_annotations", "subject_id", []),  # the loader: TypeError (unhashable)
        ("rel_annotations", "subject_id", None),  # the loader: never matches, dropped without a word
        ("rel_annotations", "object_id", "7"),  # text where the annotation ids are integers
        ("rel_annotations", "predicate_id", 0.5),
        ("rel_annotations", "predicate_id", DELETE),  # the loader: KeyError
        ("rel_annotations", "image_id", 1.0),
        ("annotations", "image_id", DELETE),
        ("annotations", "id", "1"),  # text among integer ids
    ],
)
def test_an_id_of_the_wrong_type_is_refused_not_dropped(tmp_path, capsys, key, field, value):
    """An id reference that is missing or not of the type of the ids it names is a broken file: one line naming the
    file and the entry's field, exit 2, no store (it used to be dropped and counted as a reference to nothing)."""
    doc = coco_sgg_document(np.random.default_rng(4))
    if value is DELETE:
        del doc[key][0][field]
    else:
        doc[key][0][field] = value
    path = tmp_path / "coco" / "test" / "_annotations.coco.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    code = main(["split", "--coco-sgg", str(tmp_path / "coco"), "--splits", "test", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and str(path) in err and f"{key}" in err, err
    assert field in err or "ids must be" in err, err
    assert not (tmp_path / "out").exists()


def test_a_well_typed_id_that_names_nothing_is_dropped_and_counted(tmp_path, capsys):
    """The loader's silent drops stay drops: an integer subject_id of no annotation, a predicate_id of no category,
    each on a relation the file as written keeps."""
    doc = coco_sgg_document(np.random.default_rng(4))
    images = {im["id"] for im in doc["images"]}
    image_of = {a["id"]: a["image_id"] for a in doc["annotations"]}
    predicates = {c["id"] for c in doc["rel_categories"]}
    kept = [i for i, r in enumerate(doc["rel_annotations"])
            if r["image_id"] in images and r["predicate_id"] in predicates
            and image_of.get(r["subject_id"]) == image_of.get(r["object_id"]) == r["image_id"]]  # fmt: skip
    out = {}
    for name, edits in (("as written", {}), ("edited", {kept[0]: "subject_id", kept[1]: "predicate_id"})):
        copy = json.loads(json.dumps(doc))
        for i, field in edits.items():
            copy["rel_annotations"][i][field] = 987654
        path = tmp_path / name / "test" / "_annotations.coco.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(copy))
        store = tmp_path / f"{name}.out"
        assert main(["split", "--coco-sgg", str(path.parents[1]), "--keep-all-relations", "--splits", "test",
                     "-o", str(store)]) == 0  # fmt: skip
        with SplitStore(store / "test.h5") as s:
            out[name] = (s.meta.extra["dropped"], sum(len(g.rels) for g in s))
    capsys.readouterr()
    (before, rels_before), (after, rels_after) = out["as written"], out["edited"]
    assert after["relations_of_unknown_predicates"] == before["relations_of_unknown_predicates"] + 1
    assert after["relations_to_annotations_of_other_images"] == before["relations_to_annotations_of_other_images"] + 1
    assert rels_after == rels_before - 2
