"""ASMv2's open-ended PSG scoring (issue 48, ``--protocol asmv2``; OpenGVLab/all-seeing at 5cb8cea,
``all-seeing-v2/llava/eval/eval_psg.py`` with its defaults: ``--bbox-scale 999``, square-pad undo on):

- **names**: each name of a box is split into words and every word's lemma is a candidate, replaced by the head of
  its line in ASMv2's synonym table (``resources/asmv2_synonyms.json``); a box without a name is ``Unknown``. A
  tuple counts once per subject candidate x object candidate. ASMv2 lemmatises with spaCy's ``en_core_web_sm``;
  with it installed (``--spacy``) sgg-eval does too, else each word is taken lowercase as its own lemma, and the
  document says so. A GT name is its text before the first ``-`` (``wall-other-merged`` -> ``wall``);
- **boxes**: an answer box ``b`` becomes ``b / 999 x max(W, H)`` in float32, then ``(W - H) // 2`` is taken off y
  (landscape) or ``(H - W) // 2`` off x (portrait): the square padding undone; a box that is not 4 numbers is
  skipped (ASMv2 skips what torch cannot read, and stops on more than 4);
- **match**: a GT tuple is hit when **any** answered tuple has both names, the predicate as written (case and
  spaces count), and IoU >= 0.5 on both boxes (torchvision's ``box_iou``, ``metrics.iou.torchvision_iou``: continuous,
  float32);
- ``ngR_asmv2`` = hits / GT tuples pooled over the **answered** questions (a question answered twice counts
  twice); ``ng-mR_asmv2`` = the mean over the predicates present in that GT of their pooled recall;
  ``correct_format_ratio`` and ``num_pred_tuples``: means over the answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib import resources

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.metrics.iou import torchvision_iou
from sgg_eval.text.asmv2.answers import RawTuple

BBOX_SCALE = 999
Lemmas = Callable[[str], list[str]]


def asmv2_synonyms() -> dict:
    text = resources.files("sgg_eval.data").joinpath("resources/asmv2_synonyms.json").read_text("utf-8")
    return json.loads(text)["synonyms"]


def word_lemmas(text: str) -> list[str]:
    """Without spaCy: the words and punctuation marks of ``text``, lowercase, each its own lemma."""
    return re.findall(r"\w+|[^\w\s]", text.lower())


def spacy_lemmas() -> Lemmas:
    """spaCy's ``en_core_web_sm`` lemmas, as ASMv2 takes them; an :class:`InputError` naming what to install."""
    try:
        import spacy

        nlp = spacy.load("en_core_web_sm")
    except (ImportError, OSError):
        raise InputError(
            "--spacy needs spaCy and its en_core_web_sm model (pip install spacy, then the model's wheel from "
            "github.com/explosion/spacy-models)",
            field="spacy",
        ) from None
    return lambda text: [token.lemma_ for token in nlp(text)]


def candidates(names: list, lemmas: Lemmas, synonyms: dict) -> list[str]:
    """ASMv2's ``postprocess_text``: every word's lemma of every name, through the table; none: ``Unknown``."""
    out = [synonyms.get(lemma, lemma) for name in names for lemma in lemmas(name)]
    return out or ["Unknown"]


def answer_box(value, width: int, height: int) -> np.ndarray | None:
    """A box of the answer in the image's pixels (module docstring), float32 ``[4]``; None when it is not 4 numbers
    (nested as torch would read them: ``[[x1, y1, x2, y2]]`` too)."""
    flat = _numbers(value)
    if flat is None or len(flat) != 4:
        return None
    box = np.array(flat, dtype=np.float32) / BBOX_SCALE
    box *= max(width, height)
    if height < width:
        box[[1, 3]] -= (width - height) // 2
    elif width < height:
        box[[0, 2]] -= (height - width) // 2
    return box


def _numbers(value) -> list | None:
    """The numbers of a JSON value torch reads as a tensor (a number, or rectangular nested lists of numbers; an
    integer beyond int64 overflows there), flat; None for anything else."""
    if isinstance(value, (bool, float)) or (isinstance(value, int) and -(2**63) <= value < 2**63):
        return [float(value)]
    if not isinstance(value, list) or not value or len({_shape(v) for v in value}) != 1:
        return None
    parts = [_numbers(v) for v in value]
    return None if any(p is None for p in parts) else [x for p in parts for x in p]


def _shape(value) -> tuple:
    if not isinstance(value, list):
        return ()
    return (len(value), *_shape(value[0])) if value else (0,)


def expand(tuples: list[RawTuple], width: int, height: int, lemmas: Lemmas, synonyms: dict) -> tuple:
    """The answer's scored tuples as arrays: subject and object names, boxes ``[P, 4]`` float32, predicates."""
    rows = []
    for t in tuples:
        s_box, o_box = answer_box(t.subject_box, width, height), answer_box(t.object_box, width, height)
        if s_box is None or o_box is None:
            continue
        for s in candidates(t.subject_names, lemmas, synonyms):
            for o in candidates(t.object_names, lemmas, synonyms):
                rows.append((s, s_box, o, o_box, t.predicate))
    if not rows:
        return [], np.zeros((0, 4), np.float32), [], np.zeros((0, 4), np.float32), []
    s, sb, o, ob, p = zip(*rows)
    return list(s), np.stack(sb), list(o), np.stack(ob), list(p)


def hits(question, scored: tuple) -> np.ndarray:
    """Which GT tuples of ``question`` any scored tuple hits."""
    subjects, s_boxes, objects, o_boxes, predicates = scored
    if not subjects or not len(question.predicates):
        return np.zeros(len(question.predicates), dtype=bool)
    same = np.array([[gs == s and go == o and gp == p for s, o, p in zip(subjects, objects, predicates)]
                     for gs, go, gp in zip(question.subjects, question.objects, question.predicates)])  # fmt: skip
    half = np.float32(0.5)
    near = (torchvision_iou(question.subject_boxes, s_boxes) >= half) & (
        torchvision_iou(question.object_boxes, o_boxes) >= half
    )
    return (same & near).any(axis=1)
