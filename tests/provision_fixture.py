"""GENERATED ProVision inputs (issue 48): ``python tests/provision_fixture.py OUT [SEED]`` writes
``OUT/e2e.jsonl`` (end-to-end answers with their GT, as ``eval_psg_sg_detection_e2e.py`` writes them),
``OUT/gpt.jsonl`` (GPT scene graphs, ``updated_sg``) and ``OUT/gt.json`` (the PSG-style GT they are scored on),
what ``scripts/provision_eval.py`` hands ProVision's own code and ``sgg-eval evaluate … --protocol provision``
reads. No real data.

:func:`embed` stands in for SBERT on both sides (sgg-eval's ``encode``, ProVision's ``SentenceTransformer``): the
character trigrams of a text hashed into 48 counts, so a name is nearest to the class it spells and near to one it
nearly spells. Cases: exact, attribute (``floor-wood``) and misspelt names, other predicates; ``region0`` and a
region without a number (both -1, the last object), a region past the objects; a mode-2 line with one target and no
predicate (dropped), a comma list with an unreadable item (skipped); ``Relations:`` twice (dropped), none (empty),
``s:`` in the relations; more relations than ``top_k``; boxes at IoU exactly 0.5 and integer boxes whose float32
IoU rounds up to 0.5; float boxes; an answer without ``Objects:`` and a line that is not JSON (left out); a GPT
graph with no relation at all (dropped), one whose id is not a number (stops ProVision: left out).
"""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from sgg_eval.data.psg_facts import psg_facts  # noqa: E402

FACTS = psg_facts()
OBJECTS, PREDICATES = FACTS["object_classes"], FACTS["predicate_classes"]
USED_OBJECTS = (0, 2, 16, 56, 60, 85, 108, 118, 131)  # person, car, dog, chair, dining table, floor-wood, ...
USED_PREDICATES = (0, 1, 2, 3, 4, 20, 21, 25)
MISSPELT = {"person": "persn", "car": "cars", "dog": "doggy", "chair": "a chair"}


def embed(texts) -> np.ndarray:
    """SBERT's stand-in: 48 hashed character-trigram counts per text, float32."""
    out = np.zeros((len(texts), 48), dtype=np.float32)
    for i, text in enumerate(texts):
        padded = f"  {text}  "
        for j in range(len(padded) - 2):
            out[i, zlib.crc32(padded[j : j + 3].encode("utf-8")) % 48] += 1
    return out


class StandInSentenceTransformer:
    """``sentence_transformers.SentenceTransformer`` for tests and the fuzzer, on :func:`embed`."""

    def __init__(self, name, device=None):
        self.name = name

    def encode(self, texts, convert_to_numpy=True):
        return embed(texts)


def _image(rng, width=640, height=480):
    objs = []
    for _ in range(int(rng.integers(2, 7))):
        x1, y1 = int(rng.integers(0, width - 80)), int(rng.integers(0, height - 80))
        box = [x1, y1, x1 + int(rng.integers(20, width - x1)), y1 + int(rng.integers(20, height - y1))]
        objs.append((int(rng.choice(USED_OBJECTS)), box))
    rels = []
    for _ in range(int(rng.integers(0, 6))):
        s, o = rng.choice(len(objs), 2, replace=False)
        rels.append([int(s), int(o), int(rng.choice(USED_PREDICATES))])
    return objs, rels


def _answer_objects(rng, objs):
    """The answer's regions: most GT objects (name perhaps misspelt, box moved), some extra; and the region of each
    GT object (None: not answered)."""
    regions, where = [], []
    for cls, (x1, y1, x2, y2) in objs:
        if rng.random() < 0.15:
            where.append(None)
            continue
        name = OBJECTS[cls]
        if rng.random() < 0.3:
            name = MISSPELT.get(name, name + "-wood")
        kind = rng.random()
        if kind < 0.15:  # IoU exactly 0.5: twice the width
            box = [x1, y1, x1 + 2 * (x2 - x1), y2]
        elif kind < 0.25 and isinstance(x1, int):
            box = [x1 + 0.5, y1, x2 + 0.5, y2]
        else:
            d = rng.integers(-6, 7, 4)
            box = [int(x1 + d[0]), int(y1 + d[1]), int(x2 + d[2]), int(y2 + d[3])]
        where.append(len(regions))
        regions.append((name, box))
    for _ in range(int(rng.integers(0, 3))):
        regions.append((OBJECTS[int(rng.choice(USED_OBJECTS))], [10, 10, 60, 90]))
    return regions, where


def _mode2_text(rng, regions, where, rels, top_k_heavy=False):
    lines = {}
    for s, o, p in rels:
        if where[s] is None or where[o] is None:
            continue
        predicate = PREDICATES[p] if rng.random() < 0.8 else rng.choice(["next to", "sitting at", "near"])
        lines.setdefault(where[s], []).append(f"region{where[o] + 1} {predicate}")
    if top_k_heavy and regions:
        lines.setdefault(0, []).extend(f"region{1 + i % len(regions)} beside" for i in range(12))
    out = [f"region{s + 1}: " + ", ".join(items) for s, items in sorted(lines.items())]
    if rng.random() < 0.3 and regions:
        out.append(f"region0: region{len(regions)} beside")  # -1: the last object
    if rng.random() < 0.2:
        out.append("region2: regionX on, region1 over, region99 on, oops")
    objects = "\n".join(f"region{i + 1}: {name}" for i, (name, _) in enumerate(regions))
    return f"Objects:\n{objects}\nRelations:\n" + "\n".join(out)


def write_fixture(out: Path, seed: int = 0, n: int = 30) -> None:
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    e2e, gt_images, gpt = [], [], []
    for i in range(n):
        objs, rels = _image(rng)
        regions, where = _answer_objects(rng, objs)
        text = _mode2_text(rng, regions, where, rels, top_k_heavy=i % 7 == 3)
        if i % 11 == 5:
            text = text.replace("Relations:", "Relationships:")  # no Relations: an empty answer, scored
        elif i % 13 == 6:
            text += "\nRelations:\nregion1: region2 on"  # twice: dropped
        elif i % 17 == 8:
            text += "\nregion1: region2"  # one target, no predicate: dropped
        elif i % 19 == 9:
            text = text.replace("Relations:\n", "Relations:\nobjects: region2 on\n")  # 's:' replaced
        e2e.append({"image_id": str(1000 + i), "question_id": i, "width": 640, "height": 480,
                    "gt_labels": rels, "gt_boxes": [b for _, b in objs], "gt_object_labels": [c for c, _ in objs],
                    "pred_boxes": [b for _, b in regions], "pred_raw": text})  # fmt: skip
        gt_images.append({"index": i, "file_name": f"{i}.jpg", "relations": rels,
                          "segments_info": [{"id": k + 1, "category_id": c} for k, (c, _) in enumerate(objs)],
                          "annotations": [{"bbox": b, "category_id": c} for c, b in objs]})  # fmt: skip
        graph = {}
        for k, (name, box) in enumerate(regions):
            graph[str(k)] = {"name": name, "bbox": box, "rel": {}}
        if i % 9 != 4:  # else no relation at all: dropped
            for s, o, p in rels:
                if where[s] is not None and where[o] is not None:
                    graph[str(where[s])]["rel"].setdefault(PREDICATES[p], []).append(where[o])
        gpt.append({"id": i, "updated_sg": graph})
    # the large-integer case: exact IoU 0.49999997, float32 0.5
    e2e.append({"image_id": "big", "question_id": n, "width": 1, "height": 1, "gt_labels": [[0, 1, 3]],
                "gt_boxes": [[0, 0, 16777217, 1], [0, 0, 5, 5]], "gt_object_labels": [0, 2],
                "pred_boxes": [[0, 0, 8388609, 1], [0, 0, 5, 5]],
                "pred_raw": "Objects:\nregion1: person\nregion2: car\nRelations:\nregion1: region2 on"})  # fmt: skip
    e2e.append({**e2e[0], "pred_raw": "region1: person\nRelations:\nregion1: region2 on"})  # no Objects: stops it
    gpt.append({"id": 0, "updated_sg": {"x": {"name": "person", "bbox": [0, 0, 1, 1], "rel": {}}}})  # stops it
    lines = [json.dumps(r) for r in e2e]
    lines.insert(3, "{not json")
    (out / "e2e.jsonl").write_text("\n".join(lines) + "\n")
    (out / "gpt.jsonl").write_text("\n".join(json.dumps(r) for r in gpt) + "\n")
    (out / "gt.json").write_text(json.dumps({"data": gt_images}))


if __name__ == "__main__":
    write_fixture(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
