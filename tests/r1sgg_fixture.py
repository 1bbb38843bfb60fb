"""GENERATED R1-SGG inputs (issue 48): GT rows and a folder of per-image answer files; no real data.
``python tests/r1sgg_fixture.py OUT [vg150|psg] [SEED]`` writes ``OUT/rows.jsonl`` and ``OUT/answers/*.json``, what
``scripts/r1sgg_eval.py`` hands R1-SGG's own scripts and ``sgg-eval evaluate OUT/answers --text-graphs --gt
OUT/rows.jsonl --protocol r1sgg`` reads.

Every case R1-SGG's rules decide on: names that are classes, table synonyms (``catering truck``, PSG ``man``),
WordNet-only synonyms (``bicycle``), unknown names, ``_``/``-``/upper case; passive predicates (``held by``, swapped)
and predicate synonyms; duplicated and self-loop relations; relations naming unknown ids; boxes at continuous IoU
exactly 0.5 (a match for the loop, +1 pixel: 0.524) and at +1-pixel IoU exactly 0.5 (continuous: 0.47); answers
in code fences, in ``<answer>`` tags (closed or not), malformed JSON, missing keys, bad boxes, int ids, empty and
all-unknown answers; pixel boxes (``box_scale`` = the image size) and Qwen2-VL's 1000 grid; unanswered images and
GT images without relations.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sgg_eval.data.psg_facts import psg_facts  # noqa: E402
from sgg_eval.data.vg150_facts import vg150_facts  # noqa: E402

SYNONYMS = {"vg150": {"truck": "catering truck", "bottle": "wine bottle", "bike": "bicycle", "car": "automobile"},
            "psg": {"person": "man", "car": "vehicle", "airplane": "plane", "wall-other-merged": "wall"}}  # fmt: skip
PREDICATE_SYNONYMS = {"vg150": {"near": "next to", "on": "on top of", "under": "below"}, "psg": {"beside": "next to"}}
PASSIVE = {"holding": "held by", "wearing": "worn by", "riding": "being ridden by", "carrying": "carried by"}
UNKNOWN = ("gizmo", "sky", "thingamajig")
BROKEN = {
    5: '{"objects": [{"id": "man.1", "bbox": [1, 2, 3',
    6: json.dumps({"objects": []}),
    7: json.dumps({"objects": [], "relationships": []}),
    8: json.dumps({"objects": [{"id": 3, "bbox": [0, 0, 5, 5]}], "relationships": []}),
    9: json.dumps({"objects": [{"id": "gizmo.1", "bbox": [0, 0, 9, 9]}], "relationships": []}),
}


def vocab(dataset: str) -> tuple[list[str], list[str]]:
    facts = vg150_facts() if dataset == "vg150" else psg_facts()
    return list(facts["object_classes"]), list(facts["predicate_classes"])


def write_fixture(out: Path, dataset: str = "vg150", seed: int = 0, n_images: int = 60) -> None:
    rng = np.random.default_rng(seed)
    classes, predicates = vocab(dataset)
    pool_c = [c for c in classes[:40]] + list(SYNONYMS[dataset])
    pool_p = list(predicates[:12]) + [p for p in PASSIVE if p in predicates] + list(PREDICATE_SYNONYMS[dataset])
    (out / "answers").mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n_images):
        image_id = str(1000 + 7 * i)
        w, h = int(rng.integers(200, 900)), int(rng.integers(200, 900))
        objs = []
        for j in range(int(rng.integers(1, 8))):
            x1, y1 = int(rng.integers(0, w // 2)), int(rng.integers(0, h // 2))
            x2, y2 = x1 + int(rng.integers(10, w // 2)), y1 + int(rng.integers(10, h // 2))
            objs.append({"id": f"{pool_c[int(rng.integers(len(pool_c)))]}.{j + 1}", "bbox": [x1, y1, x2, y2]})
        rels = []
        if i % 9 != 4:
            for _ in range(int(rng.integers(1, 7))):
                s, o = rng.choice(len(objs), 2) if len(objs) > 1 else (0, 0)
                pred = pool_p[int(rng.integers(len(pool_p)))]
                rels.append({"subject": objs[s]["id"], "predicate": pred, "object": objs[o]["id"]})
            if rng.random() < 0.2:
                rels.append(dict(rels[0]))  # a repeated GT row counts twice
        rows.append({"image_id": image_id, "width": w, "height": h, "objects": json.dumps(objs),
                     "relationships": json.dumps(rels)})  # fmt: skip
        if i % 11 == 3:
            continue  # unanswered
        item = {"image_id": image_id, "gt_objects": json.dumps(objs), "gt_relationships": json.dumps(rels)}
        response, scale = _response(rng, i, objs, rels, dataset, (w, h))
        item["response"] = response
        if scale is not None:
            item["box_scale"] = scale
        (out / "answers" / f"{image_id}.json").write_text(json.dumps(item))
    with open(out / "rows.jsonl", "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)


def _response(rng, i: int, objs: list, rels: list, dataset: str, size: tuple[int, int]):
    """The answer text of image ``i`` and its ``box_scale`` (None: the 1000 grid)."""
    kind = i % 13
    if kind in BROKEN:
        return BROKEN[kind], None  # malformed JSON, no relationships key, valid but empty, an int id, all unknown
    grid = kind == 10
    names, answer_objs = {}, []
    for k, obj in enumerate(objs):
        cls, _ = obj["id"].split(".")
        r = rng.random()
        name = SYNONYMS[dataset].get(cls, cls) if r < 0.3 else UNKNOWN[k % 3] if r < 0.4 else cls
        if rng.random() < 0.15:
            name = name.upper().replace(" ", "_")
        new_id = f"{name}.{k + 1}"
        names[obj["id"]] = new_id
        box = _box(rng, obj["bbox"], size)
        if grid:
            box = [round(v * 1000 / s) for v, s in zip(box, size * 2)]
        answer_objs.append({"id": new_id, "bbox": box})
        if rng.random() < 0.1:
            answer_objs.append({"id": new_id, "bbox": box})  # a repeated id: the first wins
    answer_rels = []
    for rel in rels:
        if rng.random() < 0.15:
            continue
        s, p, o = names[rel["subject"]], rel["predicate"], names[rel["object"]]
        r = rng.random()
        if r < 0.2 and p in PASSIVE:
            s, p, o = o, PASSIVE[p], s
        elif r < 0.35:
            p = PREDICATE_SYNONYMS[dataset].get(p, p)
        elif r < 0.4:
            p = "zorbing"
        answer_rels.append({"subject": s, "predicate": p, "object": o})
        if rng.random() < 0.15:
            answer_rels.append(dict(answer_rels[-1]))  # duplicate
    if answer_objs and rng.random() < 0.3:
        answer_rels.append({"subject": answer_objs[0]["id"], "predicate": "on", "object": answer_objs[0]["id"]})
        answer_rels.append({"subject": "ghost.9", "predicate": "on", "object": answer_objs[0]["id"]})
    text = json.dumps({"objects": answer_objs, "relationships": answer_rels})
    wrap = i % 4
    text = (f"```json\n{text}\n```" if wrap == 1 else f"<think>boxes</think><answer>{text}</answer>" if wrap == 2
            else f"<answer>{text}" if wrap == 3 else text)  # fmt: skip
    return text, None if grid else list(size)


def _box(rng, box: list, size: tuple[int, int]) -> list:
    """The GT box as answered: exact, jittered, or at IoU exactly 0.5 (continuous, or +1 pixel)."""
    x1, y1, x2, y2 = box
    r = rng.random()
    if r < 0.15:  # continuous IoU (x2-x1)(y2-y1) / 2(...) = 0.5: twice as tall, same top
        return [x1, y1, x2, y1 + 2 * (y2 - y1)]
    if r < 0.3:  # +1-pixel IoU 0.5: twice as tall counting the pixel row
        return [x1, y1, x2, y1 + 2 * (y2 - y1 + 1) - 1]
    if r < 0.6:
        return [int(v + rng.integers(-6, 7)) for v in box]
    return list(box)


if __name__ == "__main__":
    write_fixture(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "vg150",
                  int(sys.argv[3]) if len(sys.argv) > 3 else 0)  # fmt: skip
