"""How R1-SGG reads an answer's names as classes and predicates (issue 48, ``--protocol r1sgg``; its
``sgg_gather_preds.py`` at commit e4de64d), on answers parsed by ``text.r1sgg.answers``:

- **object**: the class is the id's text before the first ``.``. A name that is not a target is looked up in
  R1-SGG's table (``resources/r1sgg_tables.json``); a name the table lacks is tried in WordNet (below). The
  object is kept when the name (mapped or not) is a class: VG150's names, PSG's refined (``door stuff``). R1-SGG's
  PSG quirk is kept: its targets for the WordNet step are PSG's *predicates*, so a PSG name only survives as a
  class name or through the 44-entry table (``wall``, ``sky``, ``automobile`` are dropped);
- an answer with no kept object is a **placeholder** (scored, never matching; not counted as a failure);
- **relation**: a predicate that is no target but is a passive form in the table is replaced by its active form,
  subject and object swapped when the table says so (``held by`` -> ``holding``). Kept when both ids are ids of
  kept objects (a repeated id names its first object) and the predicate is a target, after the table (VG150
  only) and WordNet. Duplicates and self-loops stay;
- **WordNet** (``find_synonym_map``): the first lemma of the name's synsets that is a target; else, for a phrase,
  the first word that is a target or has such a lemma (``on top of`` -> ``on``). It needs nltk and the WordNet
  data (``pip install 'sgg-eval[wordnet]'``); without them only the words are tried, and every distinct name this
  step left unmapped is counted (``names_wordnet_not_tried``), so a reader knows the numbers may be lower than
  R1-SGG's.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import Vocabulary
from sgg_eval.text.r1sgg.answers import MappedAnswer, ParsedAnswer
from sgg_eval.text.r1sgg.rows import refine_id

Synsets = Callable[[str], list[list[str]]]  # a word's synsets, each as its lemma names, in WordNet's order


def r1sgg_tables() -> dict:
    return json.loads(resources.files("sgg_eval.data").joinpath("resources/r1sgg_tables.json").read_text("utf-8"))


def find_synonym(item: str, targets: list[str], synsets: Synsets | None) -> str | None:
    """R1-SGG's ``find_synonym_map`` for one name (module docstring); ``None`` when nothing is found."""
    if item in targets:
        return item
    for word in [item] + (item.split() if len(item.split()) > 1 else []):
        if word != item and word in targets:
            return word
        for lemmas in synsets(word) if synsets is not None else ():
            for name in lemmas:
                if name in targets:
                    return name
    return None


@dataclass
class R1Names:
    """R1-SGG's name rules for one dataset (``vg150`` or ``psg``), with the WordNet lookup ``synsets`` or none."""

    dataset: str
    vocab: Vocabulary
    synsets: Synsets | None = None
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        tables, psg = r1sgg_tables(), self.dataset == "psg"
        self.classes = {(refine_id(c) if psg else c): i for i, c in enumerate(self.vocab.object_classes, 1)}
        self.predicate_ids = {p: i for i, p in enumerate(self.vocab.predicate_classes, 1)}
        self.object_targets = set(self.vocab.predicate_classes if psg else self.vocab.object_classes)
        self.object_table = dict(tables["objects"][self.dataset])
        self.predicate_table = dict(tables["predicates"][self.dataset])
        self.passive = tables["passive"]
        self._looked_up: dict[tuple[str, str], str | None] = {}

    def _synonym(self, kind: str, name: str, targets) -> str | None:
        if (kind, name) not in self._looked_up:
            self._looked_up[(kind, name)] = find_synonym(name, targets, self.synsets)
            if self.synsets is None and self._looked_up[(kind, name)] is None:
                self.counts["names_wordnet_not_tried"] += 1
        return self._looked_up[(kind, name)]

    def object_class(self, name: str) -> int:
        """The class id of an object's refined id ``name`` (``man.1``), 0 when R1-SGG drops it."""
        cat = name.split(".")[0]
        if cat not in self.object_targets and cat not in self.object_table:
            found = self._synonym("objects", cat, self.object_targets)
            if found is not None:
                self.object_table[cat] = found
        return self.classes.get(self.object_table.get(cat, cat) if cat not in self.object_targets else cat, 0)

    def predicate(self, name: str) -> int:
        """The predicate id of a refined predicate (after the passive rule), 0 when R1-SGG drops it."""
        if name not in self.predicate_ids and name not in self.predicate_table:
            found = self._synonym("predicates", name, self.predicate_ids)
            if found is not None:
                self.predicate_table[name] = found
        if name not in self.predicate_ids:
            name = self.predicate_table.get(name, name)
        return self.predicate_ids.get(name, 0)

    def map(self, answer: ParsedAnswer) -> MappedAnswer:
        """The answer's kept objects and relations (module docstring); counts what was dropped."""
        labels = [self.object_class(i) for i in answer.ids]
        kept = [k for k, c in enumerate(labels) if c]
        self.counts["objects_dropped"] += len(labels) - len(kept)
        names = [answer.ids[k] for k in kept]
        first = {}
        for position, name in enumerate(names):
            first.setdefault(name, position)
        rows = []
        for subject, predicate, obj in answer.relations if kept else ():
            if predicate not in self.predicate_ids and predicate in self.passive:
                predicate, swap = self.passive[predicate]
                subject, obj = (obj, subject) if swap else (subject, obj)
            p = self.predicate(predicate) if subject in first and obj in first else 0
            if p:
                rows.append((first[subject], first[obj], p))
        self.counts["relations_dropped"] += len(answer.relations) - len(rows)
        arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
        boxes = np.array([answer.boxes[k] for k in kept], dtype=np.float64).reshape(-1, 4)
        return MappedAnswer(np.array([labels[k] for k in kept], np.int64), boxes, arr[:, 0], arr[:, 1], arr[:, 2])


def nltk_synsets() -> Synsets:
    """WordNet through nltk, as R1-SGG calls it (``nltk.corpus.wordnet.synsets``); an :class:`InputError` saying
    what to install when nltk or its WordNet data is missing."""
    try:
        from nltk.corpus import wordnet

        wordnet.ensure_loaded()
    except ImportError:
        raise InputError("--wordnet needs nltk: pip install 'sgg-eval[wordnet]'", field="wordnet") from None
    except LookupError:
        raise InputError(
            "--wordnet needs WordNet 3.0's data where nltk looks (NLTK_DATA or ~/nltk_data: corpora/wordnet)",
            field="wordnet",
        ) from None

    def synsets(word: str) -> list[list[str]]:
        return [[lemma.name() for lemma in s.lemmas()] for s in wordnet.synsets(word)]

    return synsets
