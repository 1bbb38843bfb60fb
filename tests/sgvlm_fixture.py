"""GENERATED SceneGraphVLM samples (issue 48): ``python tests/sgvlm_fixture.py OUT.jsonl [SEED]`` writes its predictions
JSONL (GT TOON in ``content``, the answer in ``predict``, ``conversations`` or ``messages``), what
``scripts/sgvlm_eval.py`` hands its evaluator and ``sgg-eval evaluate OUT.jsonl --text-graphs --protocol sgvlm``
reads. No real data.

Every case its reader and scorer decide on: exact, jittered, renamed (case, ``_``), dropped and repeated objects;
thinking before ``</think>`` (with and without a header in it); ``<answer>`` blocks (several, the last empty) and
code fences; rows without headers; a header carrying its first row; inverted boxes; a quoted name with a comma;
relations before objects; a superscript digit in a relation row (the answer unreadable); relations naming unknown
ids; duplicated relations; IoU exactly 0.5; empty and missing answers; garbage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

NAMES = ("person", "horse", "car", "tree-merged", "dining table", "wall_other", "dog", "pavement")
PREDICATES = ("on", "riding", "beside", "in front of", "holding", "over")
HEAD_OBJ, HEAD_REL = "obj[{n}]{{id,name,x1,y1,x2,y2}}:", "rel[{n}]{{subj,pred,obj}}:"


def toon(objects, relations, headers: bool = True, inline: bool = False) -> str:
    obj_rows = [f"{i},{n},{','.join(str(v) for v in b)}" for i, n, b in objects]
    rel_rows = [f"{s},{p},{o}" for s, p, o in relations]
    if not headers:
        return "\n".join(obj_rows + rel_rows)
    if inline and obj_rows:
        return "\n".join([HEAD_OBJ.format(n=len(obj_rows)) + " " + obj_rows[0], *obj_rows[1:],
                          HEAD_REL.format(n=len(rel_rows)), *rel_rows])  # fmt: skip
    return "\n".join([HEAD_OBJ.format(n=len(obj_rows)), *obj_rows, HEAD_REL.format(n=len(rel_rows)), *rel_rows])


def write_fixture(out: Path, seed: int = 0, n: int = 80) -> None:
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        objects = []
        for k in range(int(rng.integers(1, 7))):
            x1, y1 = int(rng.integers(0, 300)), int(rng.integers(0, 200))
            objects.append((k + 1, NAMES[int(rng.integers(len(NAMES)))],
                            [x1, y1, x1 + int(rng.integers(10, 300)), y1 + int(rng.integers(10, 250))]))  # fmt: skip
        relations = [(int(rng.integers(1, len(objects) + 1)), PREDICATES[int(rng.integers(len(PREDICATES)))],
                      int(rng.integers(1, len(objects) + 1))) for _ in range(int(rng.integers(0, 6)))]  # fmt: skip
        gt = toon(objects, relations)
        lines.append(_sample(rng, i, gt, objects, relations))
    out.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")


def _answer_objects(rng, objects):
    answered = []
    for i, name, (x1, y1, x2, y2) in objects:
        r = rng.random()
        if r < 0.1:
            continue  # dropped
        if r < 0.25:
            box = [x1, y1, x2, y1 + 2 * (y2 - y1)]  # IoU exactly 0.5
        elif r < 0.5:
            box = [int(v + rng.integers(-15, 16)) for v in (x1, y1, x2, y2)]
        elif r < 0.6:
            box = [x2, y2, x1, y1]  # inverted
        else:
            box = [x1, y1, x2, y2]
        shown = name.upper().replace(" ", "_") if rng.random() < 0.2 else "horse" if rng.random() < 0.1 else name
        answered.append((i, shown, box))
        if rng.random() < 0.08:
            answered.append((i, shown, box))  # a repeated id
    return answered


def _sample(rng, i: int, gt: str, objects, relations) -> dict:
    kind = i % 16
    objs = _answer_objects(rng, objects)
    rels = [r for r in relations if rng.random() > 0.15] + ([relations[0]] if relations and rng.random() < 0.3 else [])
    if rng.random() < 0.2:
        rels.append((9, "on", 1))  # an unknown id
    text = toon(objs, rels, headers=kind != 4, inline=kind == 5)
    if kind == 2:
        text = "<think>first the objects, then the relations</think>\n" + text
    elif kind == 3:
        text = f"<answer>```\n{text}\n```</answer><answer> </answer>"
    elif kind == 6:
        text = f"<think>\n{text}\n</think>"  # a header inside the thinking: kept
    elif kind == 7 and objs:
        text = text.replace(f"{objs[0][0]},{objs[0][1]},", f'{objs[0][0]},"{objs[0][1]}, wooden",', 1)
    elif kind == 8:
        text = toon([], rels) + "\n" + toon(objs, [])  # relations first
    elif kind == 9:
        text = text + "\n²,on,1"
    elif kind == 10:
        text = ""
    elif kind == 11:
        text = "I cannot see a scene graph here."
    if kind == 12:
        return {"conversations": [{"from": "human", "value": "?"}, {"from": "gpt", "value": gt},
                                  {"from": "predict", "value": text}]}  # fmt: skip
    if kind == 13:
        return {"content": gt, "messages": [{"role": "user", "content": "?"}, {"role": "assistant", "content": text}]}
    if kind == 14:
        return {"content": gt}
    return {"content": gt, "predict": text}


if __name__ == "__main__":
    write_fixture(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
