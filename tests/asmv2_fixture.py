"""GENERATED ASMv2 inputs (issue 48): ``python tests/asmv2_fixture.py OUT [SEED]`` writes ``OUT/psg_eval.jsonl`` (its
question file) and ``OUT/answers.jsonl`` (``model_vqa_loader.py``'s answers), what ``scripts/asmv2_eval.py`` hands
ASMv2's ``eval_psg.py`` and ``sgg-eval evaluate OUT/answers.jsonl --text-graphs --gt OUT/psg_eval.jsonl --protocol
asmv2`` reads. No real data.

Cases: names through the synonym table (``man`` -> person, ``table`` -> dining table), several words (``the
man``), case; a ref with several boxes; a relation with one subject box for several objects; an odd number of box
lists and sides that differ (incorrect format); boxes that name no ref (``Unknown``); a box list that is not JSON;
unknown tags; an answer over several lines; landscape, portrait and square images (the padding undone); a
question answered twice; a ``text`` that is not text; a line that is not JSON; predicates in other case.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

GT_NAMES = ("person", "horse", "car", "wall-other-merged", "dining table", "tree-merged", "dog", "bicycle")
ANSWER_NAMES = {"person": ("man", "person", "the man", "People"), "dining table": ("table", "dining table"),
                "wall-other-merged": ("wall",), "bicycle": ("bike", "bicycle")}  # fmt: skip
PREDICATES = ("on", "beside", "riding", "in front of", "holding")


def grid(box, width: int, height: int) -> list[int]:
    """A pixel box on ASMv2's 0-999 grid of the square-padded image."""
    side = max(width, height)
    dx, dy = ((height - width) // 2 if height > width else 0), ((width - height) // 2 if width > height else 0)
    x1, y1, x2, y2 = box
    return [round((x1 + dx) / side * 999), round((y1 + dy) / side * 999), round((x2 + dx) / side * 999),
            round((y2 + dy) / side * 999)]  # fmt: skip


def write_fixture(out: Path, seed: int = 0, n: int = 40) -> None:
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    questions, answers = [], []
    for q in range(n):
        width, height = [(640, 480), (480, 640), (500, 500)][q % 3]
        objs = []
        for _ in range(int(rng.integers(2, 6))):
            x1, y1 = int(rng.integers(0, width - 60)), int(rng.integers(0, height - 60))
            name = GT_NAMES[int(rng.integers(len(GT_NAMES)))]
            x2 = x1 + int(rng.integers(30, width - x1))
            objs.append((name, [x1, y1, x2, y1 + int(rng.integers(30, height - y1))]))
        tuples = []
        for _ in range(int(rng.integers(1, 6))):
            s, o = rng.choice(len(objs), 2, replace=False)
            predicate = PREDICATES[int(rng.integers(len(PREDICATES)))]
            tuples.append([objs[s][0], objs[s][1], objs[o][0], objs[o][1], predicate])
        questions.append({"question_id": q, "image": f"{q}.jpg", "text": "scene graph?", "width": width,
                          "height": height, "relation_tuples": tuples})  # fmt: skip
        if q % 10 == 7:
            continue  # unanswered
        answers.append({"question_id": q, "text": _answer(rng, q, objs, tuples, width, height), "answer_id": str(q)})
        if q % 10 == 3:
            answers.append({"question_id": q, "text": _answer(rng, q + 100, objs, tuples, width, height)})
    answers.append({"question_id": 1, "text": None})
    (out / "psg_eval.jsonl").write_text("".join(json.dumps(x) + "\n" for x in questions))
    (out / "answers.jsonl").write_text("".join(json.dumps(x) + "\n" for x in answers) + "{not json\n")


def _answer(rng, q: int, objs, tuples, width: int, height: int) -> str:
    refs, boxes = [], {}
    for k, (name, box) in enumerate(objs):
        if rng.random() < 0.15:
            continue  # a box no ref names: Unknown
        shown = ANSWER_NAMES.get(name, (name.split("-")[0],))[int(rng.integers(len(ANSWER_NAMES.get(name, (0,)))))]
        b = [int(v + rng.integers(-8, 9)) for v in box] if rng.random() < 0.5 else box
        boxes[k] = grid(b, width, height)
        refs.append(f"<ref>{shown}</ref><box>[{json.dumps(boxes[k])}]</box>")
    rels = []
    for s_name, s_box, o_name, o_box, pred in tuples:
        s = next(k for k, (n, b) in enumerate(objs) if b is s_box)
        o = next(k for k, (n, b) in enumerate(objs) if b is o_box)
        sg, og = boxes.get(s, grid(s_box, width, height)), boxes.get(o, grid(o_box, width, height))
        shown = pred.title() if rng.random() < 0.1 else pred
        rels.append(f"<pred>{shown}</pred><box>[{json.dumps(sg)}]</box><box>[{json.dumps(og)}]</box>")
    kind = q % 6
    if kind == 1 and len(objs) > 2:  # one subject, two objects
        first, second = json.dumps(boxes.get(1, [1, 1, 9, 9])), json.dumps(boxes.get(2, [2, 2, 9, 9]))
        subject = json.dumps(boxes.get(0, [1, 1, 50, 50]))
        rels.append(f"<pred>on</pred><box>[{subject}]</box><box>[{first}, {second}]</box>")
    if kind == 2:
        rels.append("<pred>on</pred><box>[[1, 2, 3, 4]]</box>")  # an odd number of lists
    if kind == 3:
        rels.append("<pred>near</pred><box>[[1, 2, 3, 4], [5, 6, 7, 8]]</box><box>[[1, 1, 2, 2], [3, 3, 4, 4], "
                    "[5, 5, 6, 6]]</box>")  # sides that differ  # fmt: skip
    if kind == 4:
        rels.append("<pred>on</pred><box>[[1, 2, 3</box><box>[[1, 2, 3, 4]]</box><foo>x</foo>")
    text = " ".join(refs) + (" and " if kind != 5 else "\n") + "\n".join(rels) if rels else " ".join(refs)
    return text


if __name__ == "__main__":
    write_fixture(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
