"""``sgg_eval.PsgEvaluator``: the predictions of an SGBench submission added image by image, in any order and
batching, give ``sgg-eval evaluate --psg``'s numbers on the submission itself, to the last bit, under every
protocol and in both modes (masks, boxes); ``merge`` is exact; bad input raises naming the image and field."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
import tifffile
from test_api import _bits
from test_psg_simulation import CONF

from sgg_eval import InputError, PsgEvaluator, evaluate_file
from sgg_eval.simulate.psg_models import PsgDetector, PsgMethod, write_psg_models
from sgg_eval.simulate.psg_world import PsgWorld, write_psg_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The tiny simulated PSG world and two simulated submissions (one-stage HiLo-like, two-stage IMP-like)."""
    folder = tmp_path_factory.mktemp("psg_api")
    w = PsgWorld(seed=0, scale="tiny", **CONF["world"])
    write_psg_world(w, folder)
    methods = {name: PsgMethod(**CONF["methods"][name]) for name in ("hilo", "imp")}
    zips = {name: folder / f"{name}.zip" for name in methods}
    write_psg_models(w, {k: PsgDetector(**v) for k, v in CONF["detectors"].items()}, methods, zips)
    return folder, zips


def _images(path) -> list[tuple[str, dict]]:
    """(image id, prediction dict) per image of a submission, masks decoded from its TIFFs."""
    with zipfile.ZipFile(path) as zf:
        doc = json.loads(zf.read("triplets.json"))
        out = []
        for e in doc["images"]:
            masks = tifffile.imread(io.BytesIO(zf.read(e["seg_filename"])))
            labels = np.array([a["category"] for a in e["annotation"]], dtype=np.int64)
            masks = masks.reshape(len(labels), *masks.shape[-2:])
            pred = {
                "labels": labels,
                "masks": masks.astype(bool),
                "boxes": np.array([a["bbox"] for a in e["annotation"]], dtype=np.float64).reshape(-1, 4),
                "triplets": np.array(e["triplets"], dtype=np.int64).reshape(-1, 3),
                "ng_triplets": np.array(e["ng_triplets"], dtype=np.int64).reshape(-1, 3),
            }
            out.append((e["id"], pred))
        return out


@pytest.mark.parametrize("protocol", ["sgbench", "sgbench-paper", "openpsg"])
@pytest.mark.parametrize("boxes", [False, True])
def test_any_order_and_batching_gives_the_commands_numbers(world, protocol, boxes):
    folder, zips = world
    psg, root = folder / "psg.json", folder / "coco"
    for name, path in zips.items():
        command = evaluate_file(path, psg=psg, psg_root=root, protocol=protocol, boxes=boxes)
        items = _images(path)
        if boxes:
            items = [(i, {k: v for k, v in p.items() if k != "masks"}) for i, p in items]
        else:
            items = [(i, {k: v for k, v in p.items() if k != "boxes"}) for i, p in items]
        shuffled = [items[k] for k in np.random.default_rng(3).permutation(len(items))]
        for order, batch in ((items, 1), (shuffled, 7)):
            ev = PsgEvaluator(psg, root, protocol=protocol, boxes=boxes)
            for lo in range(0, len(order), batch):
                chunk = order[lo : lo + batch]
                if batch == 1:
                    ev.add(*chunk[0])
                else:
                    ev.add([i for i, _ in chunk], [p for _, p in chunk])
            doc = ev.document()
            assert _bits(doc["metrics"]) == _bits(command["metrics"]), (name, batch)
            assert doc["counts"] == command["counts"] and doc["notes"] == command["notes"]
            assert doc["per_predicate"] == command["per_predicate"]


def test_merge_is_exact_and_missing_images_count_as_the_command_counts_them(world):
    folder, zips = world
    psg, root = folder / "psg.json", folder / "coco"
    items = [(i, {k: v for k, v in p.items() if k != "boxes"}) for i, p in _images(zips["hilo"])]
    one = PsgEvaluator(psg, root)
    one.add([i for i, _ in items], [p for _, p in items])
    a, b = PsgEvaluator(psg, root), PsgEvaluator(psg, root)
    a.add([i for i, _ in items[1::2]], [p for _, p in items[1::2]])
    b.add([i for i, _ in items[::2]], [p for _, p in items[::2]])
    a.merge(b)
    assert _bits(a.compute()) == _bits(one.compute())
    with pytest.raises(InputError, match="added to both"):
        a.merge(b)
    part = PsgEvaluator(psg, root)  # only some images: the rest are absent, as from a partial submission
    part.add([i for i, _ in items[:20]], [p for _, p in items[:20]])
    doc = part.document()
    assert doc["counts"]["images_absent"] == len(one.gt.images) - 20 and doc["notes"][0].startswith("WARNING")


def test_bad_input_names_the_image_and_field_and_adds_nothing(world):
    folder, zips = world
    psg, root = folder / "psg.json", folder / "coco"
    items = [(i, {k: v for k, v in p.items() if k != "boxes"}) for i, p in _images(zips["imp"])]
    ev = PsgEvaluator(psg, root)
    image_id, pred = items[0]
    cases = {
        "field 'masks': shape": dict(pred, masks=pred["masks"][:, :5]),
        "field 'triplets': instance index outside": dict(pred, triplets=np.array([[0, 999, 1]])),
        "field 'labels': category outside": dict(pred, labels=pred["labels"] + 1000),
        "field 'ng_triplets': predicate outside": dict(pred, ng_triplets=np.array([[0, 1, 56]])),
        "unknown key 'mask'": {"mask": pred["masks"], **{k: v for k, v in pred.items() if k != "masks"}},
    }
    for says, bad in cases.items():
        with pytest.raises(InputError) as err:
            ev.add([items[1][0], image_id], [items[1][1], bad])
        assert says in str(err.value) and f"image {image_id} (#1)" in str(err.value), str(err.value)
        assert ev.images == 0
    with pytest.raises(InputError, match="is a int, but psg.json's ids are strs"):
        ev.add(int(image_id), pred)
    ev.add(image_id, pred)
    with pytest.raises(InputError, match="added twice"):
        ev.add(image_id, pred)
    with pytest.raises(InputError, match="not one of"):
        PsgEvaluator(psg, root, protocol="reference")
