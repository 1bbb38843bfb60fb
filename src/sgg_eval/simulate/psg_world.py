"""A SIMULATED PSG-like benchmark: ``psg.json`` and COCO panoptic PNGs, the files a PSG researcher has.

SIMULATED DATA. Nothing here comes from real images. What is real: the 133 COCO panoptic class names (80
things, 53 stuff) and PSG's 56 predicates in index order (``data/resources/psg_facts.json``, from OpenPSG).
What is assumed, to give the metrics PSG's shape: PSG's test split has ~11.4 segments and ~6.3 relations per
image (24,910 objects and 13,705 relations over 2,186 images); class and predicate frequencies are Zipf laws
(classes in index order, person first; predicates in ``FREQUENT_FIRST`` order, the spatial ones most
frequent, as in PSG); a pair has a second predicate now and then, and a few test images have no relation.

Each test image is an id map of ``height × width`` pixels: a stuff background, a stuff band, then thing
rectangles painted in turn (later ones cover earlier ones), so segments never overlap and every pixel has a
segment, as in COCO panoptic. Training entries have segments, boxes and relations but no PNG: no evaluator
reads one. The scale knob goes from ``tiny`` to ``psg`` (PSG's 46,563 training and 2,186 test images).
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass

import numpy as np

from sgg_eval.data.psg_facts import psg_facts

SCALES = {"tiny": (300, 60), "default": (3000, 400), "psg": (46563, 2186)}
# The predicates PSG annotates most, most frequent first (its spatial relations); the rest follow in index order.
FREQUENT_FIRST = (
    "on",
    "beside",
    "over",
    "in front of",
    "in",
    "standing on",
    "attached to",
    "looking at",
    "holding",
    "sitting on",
    "parked on",
    "walking on",
)
FIRST_ID = 100000  # PSG's ids are strings of digits


@dataclass(frozen=True)
class PsgWorld:
    """The simulated dataset's shape (``conf/simulation/psg.yaml``, ``world``) with its seed and scale."""

    seed: int = 0
    scale: str = "default"
    height: int = 96
    width: int = 128
    mean_segments: float = 11.4
    mean_relations: float = 6.3
    class_zipf: float = 1.0
    predicate_zipf: float = 1.3
    multi_predicate_rate: float = 0.05
    no_relation_rate: float = 0.02


def predicate_frequencies(predicates: tuple[str, ...], zipf: float) -> np.ndarray:
    """The simulated frequency of each predicate (index order), summing to 1."""
    order = [predicates.index(p) for p in FREQUENT_FIRST] + [
        i for i, p in enumerate(predicates) if p not in FREQUENT_FIRST
    ]
    freq = np.empty(len(predicates))
    freq[order] = (np.arange(len(predicates)) + 1.0) ** -zipf
    return freq / freq.sum()


def _zipf(n: int, a: float) -> np.ndarray:
    p = (np.arange(n) + 1.0) ** -a
    return p / p.sum()


class WorldDraws:
    """The world's distributions, drawn from one image at a time."""

    def __init__(self, world: PsgWorld):
        facts = psg_facts()
        self.world = world
        self.things = facts["num_thing_classes"]
        self.n_classes = len(facts["object_classes"])
        self.thing_p = _zipf(self.things, world.class_zipf)
        self.stuff_p = _zipf(self.n_classes - self.things, world.class_zipf)
        self.pred_p = predicate_frequencies(tuple(facts["predicate_classes"]), world.predicate_zipf)

    def classes(self, rng, n: int) -> np.ndarray:
        """Two stuff classes (background, band), then ``n - 2`` things."""
        stuff = self.things + rng.choice(len(self.stuff_p), size=2, p=self.stuff_p)
        return np.concatenate([stuff, rng.choice(self.things, size=n - 2, p=self.thing_p)]).astype(np.int64)

    def relations(self, rng, classes: np.ndarray) -> list[list[int]]:
        """Subjects are things, objects any other segment; a pair sometimes gets a second predicate."""
        w = self.world
        things = np.flatnonzero(classes < self.things)
        if rng.random() < w.no_relation_rate or not len(things) or len(classes) < 2:
            return []
        rows = []
        for _ in range(max(1, int(rng.poisson(w.mean_relations)))):
            s = int(rng.choice(things))
            o = int(rng.choice([k for k in range(len(classes)) if k != s]))
            rows.append([s, o, int(rng.choice(len(self.pred_p), p=self.pred_p))])
            if rng.random() < w.multi_predicate_rate:
                rows.append([s, o, int(rng.choice(len(self.pred_p), p=self.pred_p))])
        return rows


def id_map(rng, h: int, w: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An ``[h, w]`` map of segment ids covered by ``n`` segments (the stuff background, a stuff band, things
    painted in turn), the ids in segment order, and which of the ``n`` kept at least 16 visible pixels (the
    others are dropped: a segment nearly covered by later ones is not annotated)."""
    ids = np.zeros((h, w), dtype=np.int64)
    seg_ids = rng.integers(1, 1 << 24, size=n)
    while len(np.unique(seg_ids)) < n:  # distinct ids (a clash is rare: n draws among 2^24)
        seg_ids = rng.integers(1, 1 << 24, size=n)
    ids[:] = seg_ids[0]
    band = int(rng.integers(h // 4, h // 2))
    ids[h - band :] = seg_ids[1]
    for seg in seg_ids[2:]:
        y, x = int(rng.integers(0, h - 12)), int(rng.integers(0, w - 12))
        ids[y : y + int(rng.integers(10, h // 2)), x : x + int(rng.integers(10, w // 2))] = seg
    keep = np.array([(ids == s).sum() >= 16 for s in seg_ids])
    ids[~np.isin(ids, seg_ids[keep])] = 0  # void: COCO panoptic's unlabelled pixels
    return ids, seg_ids[keep], keep


def mask_box(mask: np.ndarray) -> list[float]:
    """The xyxy box of a non-empty mask, as psg.json's ``annotations`` and SGBench's ``bbox`` hold it."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    return [float(cols[0]), float(rows[0]), float(cols[-1] + 1), float(rows[-1] + 1)]


def png_bytes(ids: np.ndarray) -> bytes:
    """COCO panoptic's encoding: id = R + 256·G + 256²·B."""
    from PIL import Image

    rgb = np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(out, "PNG")
    return out.getvalue()


def test_image(world: PsgWorld, draw: WorldDraws, index: int) -> tuple[dict, np.ndarray]:
    """Test image ``index``: its psg.json entry and its id map (one random stream per image, so the models
    simulator can regenerate any image alone)."""
    rng = np.random.default_rng([world.seed, 1, index])
    n = int(np.clip(rng.poisson(world.mean_segments), 4, 24))
    ids, seg_ids, keep = id_map(rng, world.height, world.width, n)
    classes = draw.classes(rng, n)[keep]
    image_id = str(FIRST_ID + index)
    entry = {
        "image_id": image_id,
        "file_name": f"{image_id}.jpg",
        "height": world.height,
        "width": world.width,
        "pan_seg_file_name": f"panoptic/{image_id}.png",
        "segments_info": [{"id": int(s), "category_id": int(c), "iscrowd": 0} for s, c in zip(seg_ids, classes)],
        "annotations": [{"bbox": mask_box(ids == s), "category_id": int(c)} for s, c in zip(seg_ids, classes)],
        "relations": draw.relations(rng, classes),
    }
    return entry, ids


def _train_image(world: PsgWorld, draw: WorldDraws, index: int, rng) -> dict:
    n = int(np.clip(rng.poisson(world.mean_segments), 4, 24))
    classes = draw.classes(rng, n)
    x1 = rng.uniform(0, world.width - 10, n)
    y1 = rng.uniform(0, world.height - 10, n)
    x2 = np.minimum(world.width, x1 + rng.uniform(10, world.width / 2, n))
    y2 = np.minimum(world.height, y1 + rng.uniform(10, world.height / 2, n))
    image_id = str(FIRST_ID + SCALES["psg"][1] + index)
    return {
        "image_id": image_id,
        "file_name": f"{image_id}.jpg",
        "height": world.height,
        "width": world.width,
        "pan_seg_file_name": f"panoptic/{image_id}.png",
        "segments_info": [{"id": k + 1, "category_id": int(c), "iscrowd": 0} for k, c in enumerate(classes)],
        "annotations": [
            {"bbox": [round(float(v), 2) for v in box], "category_id": int(c)}
            for box, c in zip(np.stack([x1, y1, x2, y2], axis=1), classes)
        ],
        "relations": draw.relations(rng, classes),
    }


def write_psg_world(world: PsgWorld, out_dir: str | os.PathLike) -> dict:
    """Write ``out_dir/psg.json`` and ``out_dir/coco/panoptic/<id>.png`` (test images only); returns a summary
    (images, segments and relations per split). ``psg.json`` says ``simulated`` and where its facts come from."""
    facts = psg_facts()
    draw = WorldDraws(world)
    n_train, n_test = SCALES[world.scale]
    png_dir = os.path.join(out_dir, "coco", "panoptic")
    os.makedirs(png_dir, exist_ok=True)
    test = []
    for i in range(n_test):
        entry, ids = test_image(world, draw, i)
        with open(os.path.join(png_dir, f"{entry['image_id']}.png"), "wb") as f:
            f.write(png_bytes(ids))
        test.append(entry)
    rng = np.random.default_rng([world.seed, 0])
    train = [_train_image(world, draw, i, rng) for i in range(n_train)]
    things = facts["num_thing_classes"]
    doc = {
        "simulated": True,
        "source": (
            "SIMULATED by sgg-eval (sgg_eval.simulate.psg_world): class and predicate names from "
            f"{facts['source']}; every image, segment and relation is simulated"
        ),
        "data": train + test,
        "test_image_ids": [e["image_id"] for e in test],
        "thing_classes": facts["object_classes"][:things],
        "stuff_classes": facts["object_classes"][things:],
        "predicate_classes": facts["predicate_classes"],
    }
    with open(os.path.join(out_dir, "psg.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
    return {
        split: {
            "images": len(entries),
            "segments": sum(len(e["segments_info"]) for e in entries),
            "relations": sum(len(e["relations"]) for e in entries),
        }
        for split, entries in (("train", train), ("test", test))
    }
