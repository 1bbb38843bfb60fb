"""Action Genome's class lists as STTran's loader builds them (``yrcong/STTran`` @ 6b559e1,
``dataloader/action_genome.py``, ``AG.__init__``).

The release's ``object_classes.txt`` and ``relationship_classes.txt`` spell some names without the separators the
annotation pickles use (``closetcabinet`` for ``closet/cabinet``, ``infrontof`` for ``in_front_of``); STTran reads
the files line by line, strips the newline only, and overwrites those lines by position so that they equal the
pickles' names. The predicates fall in three groups by position: attention 0-2, spatial 3-8, contacting 9-25.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sgg_eval.core.errors import InputError

OBJECT_FILE, PREDICATE_FILE = "object_classes.txt", "relationship_classes.txt"
# STTran's overwrites: object lines by 1-based position (after "__background__"), predicate lines by 0-based one.
OBJECT_FIXES = {9: "closet/cabinet", 11: "cup/glass/bottle", 23: "paper/notebook", 24: "phone/camera",
                31: "sofa/couch"}  # fmt: skip
PREDICATE_FIXES = {0: "looking_at", 1: "not_looking_at", 5: "in_front_of", 7: "on_the_side_of", 10: "covered_by",
                   11: "drinking_from", 13: "have_it_on_the_back", 15: "leaning_on", 16: "lying_on",
                   17: "not_contacting", 18: "other_relationship", 19: "sitting_on", 20: "standing_on",
                   25: "writing_on"}  # fmt: skip
NUM_OBJECTS, NUM_PREDICATES = 36, 26
ATTENTION, SPATIAL, CONTACTING = "attention", "spatial", "contacting"
# The predicate groups: name, first position, end position (the columns of a prediction's three distributions).
GROUPS = ((ATTENTION, 0, 3), (SPATIAL, 3, 9), (CONTACTING, 9, 26))
PERSON = 1  # the person's label (object_classes[0] after the background)


@dataclass(frozen=True)
class AGVocabulary:
    """The 36 object names (label ``i`` is ``objects[i - 1]``; the person is 1) and the 26 predicate names
    (predicate ``p`` of a relation row is ``predicates[p - 1]``), as STTran names them."""

    objects: tuple[str, ...]
    predicates: tuple[str, ...]

    def group(self, name: str) -> tuple[str, ...]:
        """The predicate names of group ``name`` (``ATTENTION``, ``SPATIAL``, ``CONTACTING``), in order."""
        start, end = next((s, e) for g, s, e in GROUPS if g == name)
        return self.predicates[start:end]


def read_vocabulary(annotations: str) -> AGVocabulary:
    """The class lists from ``annotations/`` (STTran's reading and overwrites); exactly 36 objects and 26
    predicates, each distinct, or an :class:`InputError` naming the file."""
    objects = _lines(os.path.join(annotations, OBJECT_FILE))
    predicates = _lines(os.path.join(annotations, PREDICATE_FILE))
    lists = ((objects, OBJECT_FIXES, NUM_OBJECTS, OBJECT_FILE, 1),
             (predicates, PREDICATE_FIXES, NUM_PREDICATES, PREDICATE_FILE, 0))  # fmt: skip
    for names, fixes, count, file, offset in lists:
        path = os.path.join(annotations, file)
        if len(names) != count:
            raise InputError(f"{len(names)} names, Action Genome has {count}", path=path)
        for position, name in fixes.items():
            names[position - offset] = name
        if len(set(names)) != count:
            raise InputError("a name appears twice (after STTran's renaming)", path=path)
    return AGVocabulary(tuple(objects), tuple(predicates))


def _lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(1 << 20)
    except FileNotFoundError:
        raise InputError("file not found (Action Genome's annotations/ folder has it)", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"unreadable ({exc})", path=path) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    return lines
