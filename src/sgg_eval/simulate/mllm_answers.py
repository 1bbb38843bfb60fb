"""SIMULATED answers of a multimodal LLM that writes scene graphs as text (issue 48): sgg-eval's JSONL of answers
(``text.graphs``) for the images of a GT split, made from their GT so that the pipeline can show a text
model beside ranked ones on the simulated benchmark. Not a model of any real MLLM: what each knob does is all there is.

Per image, with a generator seeded by ``seed`` and the image's position (the same answers for any number of images
before it being dropped or kept):

- ``answered``: the share of images answered at all; ``failures``: the share of answers that are unreadable
  (``objects`` is not a list);
- each GT relation is answered with probability ``recall`` (its two objects written as GT, boxes moved by up to
  ``jitter`` of their size, names in plural with probability ``plural``), and ``wrong`` times as many relations
  with a random predicate on random pairs of its objects are added; ``duplicates``: the share of answered
  relations written twice.
"""

from __future__ import annotations

import json

import numpy as np

from sgg_eval.data.types import GTImage, Vocabulary
from sgg_eval.text.names import name_table, table_for


def simulated_answers(images: list[GTImage], vocab: Vocabulary, knobs: dict) -> str:
    """The JSONL text of the answers to ``images`` (module docstring)."""
    plural = {cls: word for word, cls in name_table()["objects"].get(table_for(vocab), {}).items()}
    lines = []
    for position, img in enumerate(images):
        rng = np.random.default_rng([int(knobs["seed"]), position])
        if rng.random() >= knobs["answered"]:
            continue
        if rng.random() < knobs["failures"]:
            lines.append(json.dumps({"image_id": img.image_id, "objects": "I see a scene.", "relations": []}))
            continue
        lines.append(json.dumps(_answer(rng, img, vocab, knobs, plural)))
    return "".join(line + "\n" for line in lines)


def _answer(rng, img: GTImage, vocab: Vocabulary, knobs: dict, plural: dict) -> dict:
    keep = rng.random(len(img.rels)) < knobs["recall"]
    rows = [tuple(r) for r in img.rels[keep].tolist()]
    n_wrong = int(rng.poisson(knobs["wrong"] * max(len(rows), 1))) if len(img.labels) else 0
    for _ in range(n_wrong):
        s, o = rng.integers(len(img.labels), size=2).tolist()
        rows.append((s, o, int(rng.integers(1, vocab.num_predicates + 1))))
    used = sorted({i for s, o, _ in rows for i in (s, o)})
    position = {obj: k for k, obj in enumerate(used)}
    objects = []
    for obj in used:
        name = vocab.object_classes[int(img.labels[obj]) - 1]
        if rng.random() < knobs["plural"]:
            name = plural.get(name, name)
        x1, y1, x2, y2 = img.boxes[obj].tolist()
        shift = rng.uniform(-1, 1, 4) * knobs["jitter"] * np.array([x2 - x1, y2 - y1, x2 - x1, y2 - y1])
        box = [round(v, 1) for v in (np.array([x1, y1, x2, y2]) + shift).tolist()]
        box = [box[0], box[1], max(box[0], box[2]), max(box[1], box[3])]
        objects.append({"name": name, "box": box})
    relations = []
    for s, o, p in rows:
        relation = [position[s], vocab.predicate_classes[p - 1], position[o]]
        relations += [relation] * (2 if rng.random() < knobs["duplicates"] else 1)
    return {"image_id": img.image_id, "objects": objects, "relations": relations}
