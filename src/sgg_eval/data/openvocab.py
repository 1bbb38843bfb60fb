"""Base/novel splits of open-vocabulary SGG: which object classes and predicates a model was not trained on.

A split is data: the novel object classes and the novel predicates, by name. sgg-eval ships the splits the
three reference codebases use (``resources/openvocab_splits.json``, each with its source: OvSGTR's 45 novel
objects and 15 novel predicates, VS3's same 45 objects, PGSG's 30 novel predicates), and reads a user's own
split from a small YAML or JSON file (docs/openvocab.md)::

    name: my-split              # optional, shown in the document
    novel_objects: [dog, cat]   # names, or indices (1-based, as VG-SGG-dicts.json numbers them)
    novel_predicates: [on, 12]
    base_objects: [...]         # optional: checked not to overlap the novel lists
    base_predicates: [...]
    index_base: 1               # optional: 0 for 0-based indices (PGSG's configs)

Every name is checked against the dataset's vocabulary when the split is applied (:meth:`OpenVocabSplit.masks`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources

import numpy as np

from sgg_eval.core.errors import InputError
from sgg_eval.data.types import Vocabulary
from sgg_eval.io.jsonio import load_json, load_yaml

SPLIT_KEYS = ("name", "novel_objects", "novel_predicates", "base_objects", "base_predicates", "index_base")
MAX_NAMES = 100_000  # a split names classes of one dataset; more is not a split file


@dataclass(frozen=True)
class OpenVocabSplit:
    """The novel object classes and novel predicates, by name; ``source`` says where the lists come from."""

    name: str
    novel_objects: tuple[str, ...]
    novel_predicates: tuple[str, ...]
    source: str

    def masks(self, vocab: Vocabulary, where: str = "") -> tuple[np.ndarray, np.ndarray]:
        """``(novel_object[C_obj + 1], novel_predicate[C_pred + 1])`` flags by 1-based id (index 0, background,
        False); an InputError when a name is not in ``vocab`` (a VG150 split applied to another dataset)."""
        return (
            _flags(self.novel_objects, vocab.object_classes, where or self.source, "novel_objects"),
            _flags(self.novel_predicates, vocab.predicate_classes, where or self.source, "novel_predicates"),
        )


def _flags(names: tuple[str, ...], classes: tuple[str, ...], where: str, field: str) -> np.ndarray:
    index = {name: i for i, name in enumerate(classes, 1)}
    unknown = [n for n in names if n not in index]
    if unknown:
        raise InputError(
            f"{len(unknown)} name(s) not in the dataset's classes, e.g. {unknown[0]!r}: the split is for another "
            "dataset",
            path=where,
            field=field,
        )
    flags = np.zeros(len(classes) + 1, dtype=bool)
    flags[[index[n] for n in names]] = True
    return flags


def shipped_splits() -> dict[str, dict]:
    """The splits shipped with sgg-eval, by protocol name (``ovsgtr``, ``vs3``, ``pgsg``), as stored."""
    text = resources.files("sgg_eval.data").joinpath("resources/openvocab_splits.json").read_text("utf-8")
    return json.loads(text)["splits"]


def shipped_split(name: str) -> OpenVocabSplit:
    """A shipped split by name, its source named after the codebase and file it was read from."""
    entry = shipped_splits()[name]
    first = next(iter(entry["source"].values()))
    return OpenVocabSplit(
        name,
        tuple(entry["novel_objects"]),
        tuple(entry["novel_predicates"]),
        f"{name}'s split ({first['repo']} {first['path']})",
    )


def read_split_file(path: str | os.PathLike, vocab: Vocabulary) -> OpenVocabSplit:
    """A user's split file (module docstring), checked against ``vocab`` (:func:`split_from_mapping`)."""
    path = os.fspath(path)
    doc = load_json(path) if path.endswith(".json") else load_yaml(path)
    name = os.path.splitext(os.path.basename(path))[0]
    return split_from_mapping(doc, vocab, path, name, f"file {os.path.basename(path)}")


def split_from_mapping(doc, vocab: Vocabulary, where: str, default_name: str, source: str) -> OpenVocabSplit:
    """A split from its mapping (a split file's content, or ``metrics.openvocab.split`` of the pipeline's conf),
    checked against ``vocab``: every name or index must be a class of the dataset, no list may repeat an entry,
    and a base list may not share an entry with its novel list. Errors name ``where``."""
    path = where
    if not isinstance(doc, dict):
        raise InputError("expected a mapping with novel_objects and/or novel_predicates", path=path)
    unknown = sorted(set(map(str, doc)) - set(SPLIT_KEYS))
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r} (keys: {', '.join(SPLIT_KEYS)})", path=path)
    base = doc.get("index_base", 1)
    if type(base) is not int or base not in (0, 1):  # 1.0 == 1 and True == 1 in Python: an integer, not those
        raise InputError(f"{base!r} is not the integer 0 or 1", path=path, field="index_base")
    lists = {}
    for key, classes in (
        ("novel_objects", vocab.object_classes),
        ("base_objects", vocab.object_classes),
        ("novel_predicates", vocab.predicate_classes),
        ("base_predicates", vocab.predicate_classes),
    ):
        lists[key] = _entries(doc.get(key, []), classes, base, path, key)
    for kind in ("objects", "predicates"):
        shared = sorted(set(lists[f"novel_{kind}"]) & set(lists[f"base_{kind}"]))
        if shared:
            raise InputError(
                f"{len(shared)} entr{'y is' if len(shared) == 1 else 'ies are'} both novel and base, e.g. "
                f"{shared[0]!r}",
                path=path,
                field=f"base_{kind}",
            )
    if not lists["novel_objects"] and not lists["novel_predicates"]:
        raise InputError("no novel object class and no novel predicate: nothing to score as novel", path=path)
    name = doc.get("name", default_name)
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise InputError("expected a short text", path=path, field="name")
    return OpenVocabSplit(name.strip(), tuple(lists["novel_objects"]), tuple(lists["novel_predicates"]), source)


def _entries(value, classes: tuple[str, ...], base: int, path: str, field: str) -> list[str]:
    """A list of names or indices as class names, each checked."""
    if not isinstance(value, list) or len(value) > MAX_NAMES:
        raise InputError("expected a list of names or indices", path=path, field=field)
    names = []
    for item in value:
        if isinstance(item, bool):
            raise InputError(
                f"{item!r} where a name was expected: YAML reads an unquoted on, off, yes or no as true/false; "
                "quote the name ('on')",
                path=path,
                field=field,
            )
        if not isinstance(item, (int, str)):
            raise InputError(f"{item!r:.40} is neither a name nor an index", path=path, field=field)
        if isinstance(item, int):
            if not base <= item < len(classes) + base:
                raise InputError(
                    f"index {item} is outside {base}..{len(classes) - 1 + base} ({len(classes)} classes)",
                    path=path,
                    field=field,
                )
            item = classes[item - base]
        elif item not in classes:
            raise InputError(f"{item!r:.60} is not one of the dataset's classes", path=path, field=field)
        names.append(item)
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise InputError(f"{twice!r} is listed twice", path=path, field=field)
    return names
