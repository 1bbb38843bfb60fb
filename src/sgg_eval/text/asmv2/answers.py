"""ASMv2's answers (issue 48, ``--protocol asmv2``): the JSONL ``model_vqa_loader.py`` writes (``question_id``,
``text``), each text a scene graph in tags, read by the rules of its ``llava/eval/eval_psg.py`` (OpenGVLab/all-seeing
at 5cb8cea):

    <ref>man</ref><box>[[10, 20, 30, 40]]</box> ... <pred>riding</pred><box>[[10, 20, 300, 400]]</box><box>[[..]]</box>

1. The text is walked tag pair by tag pair (``<...>...<...>`` on one line, left to right): a ``<box>`` pair's
   content is read as JSON (when it is not JSON it is skipped) and belongs to the last ``<ref>`` (its name's boxes)
   or, after any other tag, to the last relation (its box lists, in order).
2. A relation's box lists are taken two at a time: subject boxes, object boxes. A single box on one side is
   repeated to the other's length, then the two are zipped; an odd number of lists, or sides that still differ,
   makes the answer's format incorrect (counted in ``correct_format_ratio``; what can be zipped is still used).
3. The names of a box are every ``<ref>`` whose boxes hold a box that serialises (``json.dumps``) to the same text;
   none: ``Unknown``. The predicate is the ``<pred>`` text as written.

What ASMv2's scorer would stop on (a ``<box>`` after a ``<ref>`` that is a JSON number, box lists that are not
lists) is skipped here, and the answer's format counted incorrect. The file's lines are split on ``\n`` and
``\r`` only, as Python's ``open`` iterates them there (:func:`answer_lines`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from sgg_eval.io.jsonio import read_bytes

BOX_TAG, REF_TAG = "<box>", "<ref>"
MAX_ANSWERS_BYTES = 1 << 32


NO_ID = object()  # an answer line that has no question id ASMv2 could look up (it stops on such a line)


def answer_lines(path: str) -> Iterator[tuple]:
    """``(question_id, text)`` of each non-empty line of the answers file at ``path``; ``(NO_ID, None)`` for a line
    that is not a JSON object with a ``question_id`` that is a JSON scalar (not UTF-8 included: the callers count
    it and go on). ``question_id`` is the JSON value as written (int, float, bool, str or None: ASMv2 looks it up in
    a dict of the question ids, so ``0.0`` and ``true`` find the questions 0 and 1, and ``"0"`` does not find 0);
    ``text`` is the JSON value as written (None when absent)."""
    for line in read_bytes(path, "JSONL file of answers", MAX_ANSWERS_BYTES).splitlines():
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):
            doc = None
        if not isinstance(doc, dict) or "question_id" not in doc or isinstance(doc["question_id"], (list, dict)):
            yield NO_ID, None
            continue
        yield doc["question_id"], doc.get("text")


@dataclass
class RawTuple:
    """One parsed tuple before names are read: the names of each box (as written), the boxes (JSON values as
    written, on the answer's grid) and the predicate."""

    subject_names: list
    subject_box: object
    object_names: list
    object_box: object
    predicate: str


def _sized(value) -> bool:
    """Whether ASMv2's ``len()`` takes a box list read from JSON: a list, a text, or an object (its keys)."""
    return isinstance(value, (list, str, dict))


def _zipped(subjects, objs) -> tuple[list, bool] | None:
    """A relation's (subject box, object box) pairs as ASMv2 zips its two box lists, and whether their sizes agreed;
    None where ASMv2's scorer stops (``len()`` of a number, a dict times a number). A single box on one side is
    repeated to the other's length, subjects first; a dict's keys are its boxes, as ``zip`` walks them."""
    if not _sized(subjects) or not _sized(objs):
        return None
    if len(subjects) == 1:
        if isinstance(subjects, dict):
            return None
        subjects = subjects * len(objs)
    if len(objs) == 1:
        if isinstance(objs, dict):
            return None
        objs = objs * len(subjects)
    return list(zip(subjects, objs)), len(subjects) == len(objs)


def tag_pairs(text: str) -> list[str]:
    """What ``re.findall(r'<.*?>.*?<.*?>', text)`` finds, found in linear time (the pattern's own search is
    quadratic on a line of many ``<``): per line, the first ``<``, the next ``>``, the next ``<``, the next ``>``."""
    pairs = []
    for line in text.split("\n"):
        at = 0
        while True:
            s = line.find("<", at)
            a = line.find(">", s + 1) if s >= 0 else -1
            b = line.find("<", a + 1) if a >= 0 else -1
            c = line.find(">", b + 1) if b >= 0 else -1
            if c < 0:
                break
            pairs.append(line[s : c + 1])
            at = c + 1
    return pairs


def parse_answer(text: str) -> tuple[list[RawTuple], bool]:
    """The tuples of one answer text and whether its format was correct (module docstring)."""
    objects, relations = defaultdict(list), defaultdict(list)
    correct = True
    last_is_ref, last_value = True, "Unknown"
    for item in tag_pairs(text):
        end = item.index(">")
        inner = item[end + 1 : item.index("<", end + 1)]  # what re.sub(r"<.*?>", "", item) leaves
        if not item.startswith(BOX_TAG):
            last_is_ref, last_value = item.startswith(REF_TAG), inner
            continue
        try:
            value = json.loads(inner)
        except (ValueError, RecursionError):
            continue
        if last_is_ref:
            if isinstance(value, (list, str, dict)):
                objects[last_value].extend(value)
            else:
                correct = False  # ASMv2's scorer stops on it
        else:
            relations[last_value].append(value)
    names_of = defaultdict(list)
    for name, boxes in objects.items():
        for box in boxes:
            names_of[json.dumps(box)].append(name)
    tuples = []
    for predicate, lists in relations.items():
        correct &= len(lists) % 2 == 0
        for i in range(0, len(lists) - 1, 2):
            pairs = _zipped(lists[i], lists[i + 1])
            correct &= pairs is not None and pairs[1]
            for s, o in pairs[0] if pairs is not None else ():
                names = names_of.get(json.dumps(s), []), names_of.get(json.dumps(o), [])
                tuples.append(RawTuple(names[0], s, names[1], o, predicate))
    return tuples, correct
