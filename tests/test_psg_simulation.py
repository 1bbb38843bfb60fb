"""The SIMULATED PSG-like benchmark and its simulated models: files PSG tools read, panoptic ground truth
(every pixel one segment, no overlap), one-stage masks overlapping and two-stage ones not, detectors shared,
deterministic bytes; and, at the default scale, the shape of the SGBench paper's Tables 1-3."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

from sgg_eval.data.psg_facts import psg_facts
from sgg_eval.io.jsonio import load_yaml
from sgg_eval.metrics.document import every_metric
from sgg_eval.panoptic.psg_json import read_psg
from sgg_eval.panoptic.sgbench_submission import Submission
from sgg_eval.simulate.psg_models import PsgDetector, PsgMethod, write_psg_models
from sgg_eval.simulate.psg_world import SCALES, PsgWorld, write_psg_world

CONF = load_yaml(Path(__file__).resolve().parents[1] / "conf/simulation/psg.yaml")
TWO_STAGE = ("imp", "motifs", "gpsnet", "vctree")
ONE_STAGE = ("psgtr", "psgformer", "pair_net", "hilo")


def _world(scale: str = "tiny", seed: int = 0) -> PsgWorld:
    return PsgWorld(seed=seed, scale=scale, **CONF["world"])


def _models(world: PsgWorld, folder) -> dict:
    out = {name: folder / f"{name}.zip" for name in CONF["methods"]}
    write_psg_models(
        world,
        {k: PsgDetector(**v) for k, v in CONF["detectors"].items()},
        {k: PsgMethod(**v) for k, v in CONF["methods"].items()},
        out,
        seed=CONF["seed"],
    )
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("psg_sim")
    counts = write_psg_world(_world(), folder)
    return folder, counts, _models(_world(), folder)


def test_the_dataset_has_psgs_names_and_says_it_is_simulated(tiny):
    folder, counts, _ = tiny
    doc = json.loads((folder / "psg.json").read_text())
    facts = psg_facts()
    assert doc["thing_classes"] + doc["stuff_classes"] == facts["object_classes"]
    assert len(doc["thing_classes"]) == 80 and len(doc["stuff_classes"]) == 53
    assert doc["predicate_classes"] == facts["predicate_classes"] and len(doc["predicate_classes"]) == 56
    assert doc["simulated"] is True and "SIMULATED" in doc["source"] and "OpenPSG" in doc["source"]
    assert (counts["train"]["images"], counts["test"]["images"]) == SCALES["tiny"]
    assert len(doc["test_image_ids"]) == SCALES["tiny"][1]


def test_the_ground_truth_is_panoptic_and_psg_like(tiny):
    folder, counts, _ = tiny
    gt = read_psg(folder / "psg.json", folder / "coco")
    assert gt.images and gt.without_relations >= 0
    for image in gt.images:
        rgb = np.asarray(Image.open(folder / "coco" / image.png)).astype(np.int64)
        ids = rgb[..., 0] + 256 * rgb[..., 1] + 65536 * rgb[..., 2]
        present = set(np.unique(ids).tolist()) - {0}
        # each pixel holds one id (no overlap by construction of a PNG); every segment is visible, and only those
        assert present == set(image.segment_ids.tolist())
        assert all((ids == s).sum() >= 16 for s in image.segment_ids)
        assert image.labels[image.triplets[:, 0]].max() < 80  # subjects are things
    per_image = counts["test"]["segments"] / counts["test"]["images"]
    rels = counts["test"]["relations"] / counts["test"]["images"]
    assert 8 < per_image < 14 and 4 < rels < 9  # PSG test: 11.4 segments and 6.3 relations per image


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_ones(tiny, tmp_path):
    folder, _, zips = tiny
    write_psg_world(_world(), tmp_path / "a")
    write_psg_world(_world(seed=1), tmp_path / "b")
    again = _models(_world(), tmp_path / "a")
    same = (folder / "psg.json").read_bytes() == (tmp_path / "a" / "psg.json").read_bytes()
    assert same and (folder / "psg.json").read_bytes() != (tmp_path / "b" / "psg.json").read_bytes()
    for name in zips:
        digest = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (zips[name], again[name])]
        assert digest[0] == digest[1], name


def _stacks(path) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(path) as zf:
        doc = json.loads(zf.read("triplets.json"))
        assert doc["simulated"] is True
        return {e["id"]: tifffile.imread(io.BytesIO(zf.read(e["seg_filename"]))) for e in doc["images"]}


def _layers(stack: np.ndarray) -> np.ndarray:
    return stack.reshape(-1, *stack.shape[-2:])


def test_one_stage_masks_overlap_two_stage_ones_do_not_and_two_stage_share_a_detector(tiny):
    _, _, zips = tiny
    two = {name: _stacks(zips[name]) for name in TWO_STAGE}
    for name in TWO_STAGE:
        for stack in two[name].values():
            assert _layers(stack).sum(axis=0).max() <= 1, name  # a pixel in one mask at most
    overlapping = [any(_layers(s).sum(axis=0).max() > 1 for s in _stacks(zips[name]).values()) for name in ONE_STAGE]
    assert all(overlapping)
    for name in TWO_STAGE[1:]:  # the same masks, image by image: InstR and mR@inf tie
        assert all(np.array_equal(two[name][i], two[TWO_STAGE[0]][i]) for i in two[name])


def test_the_submissions_are_read_by_the_sgbench_reader(tiny):
    folder, _, zips = tiny
    gt = read_psg(folder / "psg.json", folder / "coco")
    for path in zips.values():
        sub = Submission(path, len(gt.object_classes), gt.num_predicates)
        assert len(sub.images) == SCALES["tiny"][1] and sub.mode == "masks"


@pytest.mark.integration
def test_the_default_scale_has_the_published_tables_shape(tmp_path):
    """Issue 51's bar on the SGBench paper's Tables 1-3 (15 columns × 8 methods): ≥ 108 of the 120 cells within
    ±20% of the published value and no metric's mean |relative difference| above 20%; the paper's method
    ordering on R@50 and mR@50; HiLo first on mR@50, Pair-Net first on InstR; the two-stage methods tied on
    InstR and mR@inf (one detector). Not kept since the fit: Pair-Net first on PR@50 (the simulated HiLo's PR@50
    is 69 against the paper's 57.6, one of the cells outside the band; docs/decisions.md)."""
    from sgg_eval.panoptic.evaluate import evaluate_protocols
    from sgg_eval.report.agreement import agreement
    from sgg_eval.report.psg_tables import our_name, published_psg

    world = _world("default")
    write_psg_world(world, tmp_path)
    zips = _models(world, tmp_path)
    labels = {"imp": "IMP", "motifs": "Neural-Motifs", "gpsnet": "GPS-Net", "vctree": "VCTree", "psgtr": "PSGTR"}
    labels |= {"psgformer": "PSGFormer", "pair_net": "Pair-Net", "hilo": "HiLo"}
    ours = {
        labels[name]: every_metric(
            evaluate_protocols(path, tmp_path / "psg.json", tmp_path / "coco", ("sgbench",))["sgbench"]
        )
        for name, path in zips.items()
    }
    published = {row["method"]: row for row in published_psg()}
    cells = []
    for method, metrics in ours.items():
        for column, value in published[method].items():
            if column != "method" and value:
                name = our_name(column)
                cells.append((name, float(value), metrics[name] if name == "PRk" else 100 * metrics[name]))
    within, means = agreement(cells)
    assert len(cells) == 120 and within >= 108, (within, means)
    assert max(means.values()) <= 0.2, means

    def order(column: str) -> list[str]:
        return sorted(ours, key=lambda m: -float(published[m][column]))

    for column in ("R@50", "mR@50"):
        assert sorted(ours, key=lambda m: -ours[m][our_name(column)]) == order(column), column
    assert max(ours, key=lambda m: ours[m][our_name("mR@50")]) == "HiLo"
    assert max(ours, key=lambda m: ours[m][our_name("InstR")]) == "Pair-Net"  # the detectors'; PR@50: below
    two_stage = [labels[name] for name in TWO_STAGE]
    for column in ("InstR", "mR@inf"):
        assert len({ours[m][our_name(column)] for m in two_stage}) == 1, column
