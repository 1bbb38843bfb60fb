"""Scene graphs written as TOON rows (issue 48, ``--protocol sgvlm``), read by the rules of SceneGraphVLM's evaluator
(``markus0440/SceneGraphVLM`` at a6197da, ``metrics/qwen-bench/eval/eval_sgg_metrics_with_qwen.py``):

    obj[3]{id,name,x1,y1,x2,y2}:
    1,man,10,20,110,220
    ...
    rel[2]{subj,pred,obj}:
    1,riding,2

1. **Cleaning**: a ``</think>`` ends the thinking before it, unless the text before it already holds an ``obj[N]{id,
   name`` or ``rel[N]{subj,pred,obj}`` header line (then both sides are kept); an ``<answer>`` block is the answer
   (the last one holding ``obj[N]``, else the last non-empty one), else the tags are dropped; code fences go.
2. **Blocks**: the objects start at the first ``obj[N]{...}:`` header (or, failing one, the first row of 6+ fields
   starting with a number); the relations at the first ``rel[N]{...}:`` header (or the first later row whose first
   and third fields are numbers). A header's own line may carry a first row after its ``:``.
3. **Rows** are CSV (spaces after commas skipped). An object row needs 6+ fields: a numeric id, a name, 4 numbers
   (``nan`` and ``inf`` are numbers to Python); other rows are skipped. A relation row needs numeric first and
   third fields; a first or third field that is a digit to ``str.isdigit`` but not to ``int`` (``²``) makes the
   whole answer unreadable. Names and predicates: ``_`` and ``-`` as spaces, stripped, lowercase.
4. An answer with no object row is **invalid**. Coordinates are sorted per axis (an inverted box is repaired).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

OBJ_HEADER = re.compile(r"obj\s*\[\s*(\d+)\s*\]\s*\{.*?\}\s*:\s*", re.IGNORECASE)
REL_HEADER = re.compile(r"rel\s*\[\s*(\d+)\s*\]\s*\{.*?\}\s*:\s*", re.IGNORECASE)
THINK_END = "</think>"
THOUGHT_HEADERS = (
    re.compile(r"^\s*obj\[\d+\]\{id,name", re.MULTILINE),
    re.compile(r"^\s*rel\[\d+\]\{subj,pred,obj\}", re.MULTILINE),
)
ANSWER_BLOCK = re.compile(r"<answer\s*>([\s\S]*?)</answer\s*>", re.IGNORECASE)
ANSWER_TAG = re.compile(r"<\/?answer\s*>", re.IGNORECASE)
OBJ_MENTION = re.compile(r"obj\s*\[\s*\d+\s*\]", re.IGNORECASE)
LEADING_NUMBER = re.compile(r"\s*\d+\s*,")


@dataclass
class ToonScene:
    """Objects as ``(id, name, [x1, y1, x2, y2])`` (sorted coordinates) and relations ``(subject id, predicate,
    object id)``, in text order; empty when the text could not be read."""

    objects: list = field(default_factory=list)
    relations: list = field(default_factory=list)


def read_toon(text) -> ToonScene:
    """The scene of a TOON text (module docstring); an empty scene for anything unreadable."""
    if not isinstance(text, str):
        return ToonScene()
    try:
        objects, relations = _rows(_clean(text))
    except ValueError:
        return ToonScene()
    boxes = [[*sorted(box[0::2]), *sorted(box[1::2])] for _, _, box in objects]
    return ToonScene([(i, n, [b[0], b[2], b[1], b[3]]) for (i, n, _), b in zip(objects, boxes)], relations)


def _clean(text: str) -> str:
    s = text.strip()
    while THINK_END in s:
        at = s.find(THINK_END)
        before, after = s[:at], s[at + len(THINK_END) :].lstrip()
        if any(h.search(before) for h in THOUGHT_HEADERS):
            s = (before + "\n" + after).strip() if after else before.strip()
            break
        if not after:
            s = before.strip()
            break
        s = after
    blocks = [m.group(1).strip() for m in ANSWER_BLOCK.finditer(s)]
    holding = [b for b in blocks if b and OBJ_MENTION.search(b)]
    if holding:
        s = holding[-1]
    elif blocks and blocks[-1]:
        s = blocks[-1]
    elif s:
        s = ANSWER_TAG.sub(" ", s)
    return s.strip()


def _rows(text: str) -> tuple[list, list]:
    if not text:
        raise ValueError("empty")
    lines = [ln.rstrip() for ln in ANSWER_TAG.sub(" ", text.replace("```", " ")).splitlines() if ln.strip()]
    obj_start = next((i for i, ln in enumerate(lines) if OBJ_HEADER.search(ln)), None)
    rel_start = next((i for i, ln in enumerate(lines) if REL_HEADER.search(ln)), None)
    if obj_start is None:
        obj_start = next((i for i, ln in enumerate(lines) if ln.count(",") >= 5 and LEADING_NUMBER.match(ln)), None)
    if obj_start is None:
        raise ValueError("no object block")
    if rel_start is None:
        rel_start = next((i for i in range(obj_start + 1, len(lines)) if _relation_like(lines[i])), None)
    # the object rows end where the relations start (none when they start first)
    obj_lines = _tail(lines[obj_start]) + lines[obj_start + 1 : rel_start if rel_start is not None else None]
    rel_lines = [] if rel_start is None else _tail(lines[rel_start]) + lines[rel_start + 1 :]
    objects = []
    for ln in obj_lines:
        if ln.lower().startswith("rel["):
            break
        row = _csv(ln, 5) if not (OBJ_HEADER.search(ln) and not re.match(r"^\s*\d+\s*,", ln)) else None
        if row is None or len(row) < 6 or not row[0].strip().isdigit():
            continue
        try:
            objects.append((int(row[0].strip()), refine(row[1]), [float(v) for v in row[2:6]]))
        except (ValueError, TypeError):
            continue
    relations = []
    for ln in rel_lines:
        row = _csv(ln, 2)
        if row is None or len(row) < 3 or not (row[0].strip().isdigit() and row[2].strip().isdigit()):
            continue
        relations.append((int(row[0].strip()), refine(row[1]), int(row[2].strip())))  # int may fail: unreadable
    if not objects:
        raise ValueError("no objects")
    return objects, relations


def _relation_like(line: str) -> bool:
    if line.count(",") < 2 or not LEADING_NUMBER.match(line):
        return False
    parts = [p.strip() for p in line.split(",")]
    return len(parts) >= 3 and parts[0].isdigit() and parts[2].isdigit()


def _tail(line: str) -> list[str]:
    """A header line's first row, written after its ``:``."""
    tail = line.split(":", 1)[1].strip() if ":" in line else ""
    return [tail] if tail else []


def _csv(line: str, commas: int) -> list[str] | None:
    if line.count(",") < commas:
        return None
    try:
        return next(csv.reader([line], skipinitialspace=True))
    except (csv.Error, StopIteration):
        return None


def refine(text: str) -> str:
    return text.replace("_", " ").replace("-", " ").strip().lower()
