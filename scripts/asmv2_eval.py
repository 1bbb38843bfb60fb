"""ASMv2's own PSG scorer, run in a Python that has torch (never this project's environment), for checking ``--protocol
asmv2`` against it (docs/text_graphs.md):

    PY scripts/asmv2_eval.py ASM_DIR psg_eval.jsonl ANSWERS.jsonl OUT.json

ASM_DIR is a checkout of OpenGVLab/all-seeing (tested at 5cb8cea). ``all-seeing-v2/llava/eval/eval_psg.py`` runs
unmodified: its ``eval_psg`` on the questions and the answers (lines that are not JSON, or whose ``text`` is not
text, dropped first: it stops on them), with its synonym file. Two stand-ins, because neither installs here:
spaCy (``nlp(text)`` gives each lowercase word as its own lemma: sgg-eval's rule without ``--spacy``) and
torchvision's ``box_iou`` (written from its documented formula in torch float32). OUT.json gets the recall, the
mean recall and the two means it prints, unrounded: the lists it sums are kept by a wrapper of its ``sum``.
"""

import builtins
import json
import os
import re
import runpy
import sys
import types

import torch

ASM, QUESTIONS, ANSWERS, OUT = sys.argv[1:5]


class _Token:
    def __init__(self, text):
        self.lemma_ = text


def _nlp(text):
    return [_Token(w) for w in re.findall(r"\w+|[^\w\s]", text.lower())]


def _box_iou(a, b):
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(a[:, None, :2], b[:, :2])
    rb = torch.min(a[:, None, 2:], b[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area_a[:, None] + area_b - inter)


sys.modules["spacy"] = types.SimpleNamespace(load=lambda name: _nlp)
ops = types.ModuleType("torchvision.ops")
ops.boxes = types.SimpleNamespace(box_iou=_box_iou)
sys.modules.update({"torchvision": types.ModuleType("torchvision"), "torchvision.ops": ops,
                    "torchvision.ops.boxes": ops.boxes})  # fmt: skip
root = os.path.join(ASM, "all-seeing-v2")
module = runpy.run_path(os.path.join(root, "llava", "eval", "eval_psg.py"), run_name="asmv2_eval_psg")

synonyms = {}
with open(os.path.join(root, "llava", "eval", "synonyms.txt")) as fh:
    for line in fh.readlines():
        phrases = line.split(",")
        for p in phrases:
            synonyms[p.strip()] = phrases[0].strip()
questions = {q["question_id"]: q for q in map(json.loads, open(QUESTIONS))}
answers = []
for line in open(ANSWERS):
    try:
        a = json.loads(line)
    except ValueError:
        continue
    if isinstance(a, dict) and isinstance(a.get("text"), str):
        answers.append(a)

calls = []


def _sum(values, *rest):  # its numbers are printed with 2 decimals: keep what it sums, in order
    calls.append(list(values))
    return builtins.sum(values, *rest)


module["eval_psg"].__globals__["sum"] = _sum
module["eval_psg"].__globals__["print"] = lambda *a, **k: None
module["eval_psg"](questions=questions, answers=answers, synonyms=synonyms, square_pad_postprocess=True,
                   bbox_scale=999)  # fmt: skip
recall, mean_recalls, formats, tuples = calls[-4:]  # its last four sums, in the order it prints them
values = {
    "ngR_asmv2": sum(recall) / len(recall),
    "ng-mR_asmv2": sum(mean_recalls) / len(mean_recalls),
    "correct_format_ratio": sum(formats) / len(formats),
    "num_pred_tuples": sum(tuples) / len(tuples),
}
with open(OUT, "w") as fh:
    json.dump(values, fh, indent=1)
