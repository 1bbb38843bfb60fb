"""The names of text scene graphs mapped to a dataset's classes (text/names.py, issue 48): a class's own name
first, then the shipped table's entry for the dataset, never an entry over a class; every table mapping used is
listed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sgg_eval.data.psg_facts import psg_facts
from sgg_eval.data.types import Vocabulary
from sgg_eval.data.vg150_facts import vg150_vocabulary
from sgg_eval.text.names import name_map, name_table, refine

ROOT = Path(__file__).resolve().parents[1]


def _psg() -> Vocabulary:
    facts = psg_facts()
    return Vocabulary(tuple(facts["object_classes"]), tuple(facts["predicate_classes"]))


def test_vg150_names():
    vocab = vg150_vocabulary()
    names = name_map(vocab)
    ids = names.map(["Man", "men", "Jeans", "pants", "leaves", "dragon", "table_", "  Street  "], "objects")
    read = [vocab.object_classes[i - 1] if i > 0 else None for i in ids]
    assert read == ["man", "men", "jean", "pant", "leaf", None, "table", "street"]  # men is a class: not man
    assert names.map(["on", "parked on", "ON", "next to"], "predicates").tolist()[:3] != [-1, -1, -1]
    assert names.map(["next to"], "predicates").tolist() == [-1]  # no predicate entries in version 1
    used = names.used(vocab)
    assert {(u["name"], u["read_as"], u["times"]) for u in used} == {("jeans", "jean", 1), ("pants", "pant", 1),
                                                                    ("leaves", "leaf", 1)}  # fmt: skip


def test_psg_stuff_names_without_suffix():
    vocab = _psg()
    names = name_map(vocab)
    ids = names.map(
        ["wall", "Walls", "sky", "sky-other-merged", "window", "people", "grass", "dining table"], "objects"
    )
    read = [vocab.object_classes[i - 1] if i > 0 else None for i in ids]
    assert read[:7] == ["wall-other-merged", "wall-other-merged", "sky-other-merged", "sky-other-merged",
                        "window-other", "person", "grass-merged"]  # fmt: skip
    assert names.table == "psg" and name_map(Vocabulary(("a",), ("b",))).table == ""


def test_the_shipped_table_is_what_its_script_makes(tmp_path):
    """The table is data made by scripts/make_text_names.py: running it again writes the same file."""
    made = tmp_path / "text_names.json"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts/make_text_names.py"), str(made)], check=True, capture_output=True
    )
    assert made.read_text() == (ROOT / "src/sgg_eval/data/resources/text_names.json").read_text()
    table = name_table()
    for dataset, classes in (("vg150", vg150_vocabulary().object_classes), ("psg", _psg().object_classes)):
        entries = table["objects"][dataset]
        assert set(entries.values()) <= set(classes) and not set(entries) & {refine(c) for c in classes}
