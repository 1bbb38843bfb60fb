"""Writes ``src/sgg_eval/data/resources/text_names.json``, the name table of the ``sets`` protocol for text scene
graphs (issue 48): the entries are data, committed and versioned; this script is how version 1 was made, so that
every entry can be traced to a rule below: ``python scripts/make_text_names.py [OUT]`` (default: the shipped file).

Version 1, for VG150's 150 and PSG's 133 object classes (no predicate entries yet):

- **plural forms**: each class name's plural by English rules (``-s``; ``-es`` after s, x, z, ch, sh; consonant +
  y -> ``-ies``; ``-f``/``-fe`` -> ``-ves`` for the nouns listed in ``VES``) and ``IRREGULAR`` ones;
- **PSG's stuff names without their suffix**: ``sky-other-merged`` is answered as "sky": a name's text before the
  first ``-`` maps to the class when only one class has it, else to the class that ends in ``-other-merged``,
  ``-merged`` or ``-other`` (in that order: PSG's catch-all), e.g. "wall" -> ``wall-other-merged``, "window" ->
  ``window-other``; and the suffixed names written with spaces (``sky other merged``) need no entry (names are
  compared after the same normalisation).

An entry never overrides a class: a name that is itself a class of the dataset maps to that class (VG150's
``men`` stays ``men``, not ``man``).
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "src" / "sgg_eval" / "data" / "resources"
IRREGULAR = {"man": "men", "woman": "women", "person": "people", "child": "children", "foot": "feet",
             "tooth": "teeth", "mouse": "mice", "sheep": "sheep", "skis": "skis", "glasses": "glasses"}  # fmt: skip
VES = {"leaf": "leaves", "shelf": "shelves", "knife": "knives", "wolf": "wolves", "scarf": "scarves"}
CATCH_ALL = ("-other-merged", "-merged", "-other")


def plural(name: str) -> str:
    words = name.split(" ")
    last = words[-1]
    if last in IRREGULAR:
        last = IRREGULAR[last]
    elif last in VES:
        last = VES[last]
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    elif last.endswith("y") and len(last) > 1 and last[-2] not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last += "s"
    return " ".join([*words[:-1], last])


def refine(name: str) -> str:
    return " ".join(name.replace("_", " ").replace("-", " ").lower().split())


def entries(classes: list[str]) -> dict[str, str]:
    out = {}
    bases = {}
    for c in classes:
        bases.setdefault(c.split("-")[0], []).append(c)
    for base, named in sorted(bases.items()):
        if "-" not in named[0] or refine(base) in map(refine, classes):
            continue
        pick = named[0] if len(named) == 1 else next((c for s in CATCH_ALL for c in named if c.endswith(s)), None)
        if pick is not None:
            out[refine(base)] = pick
    for c in classes:
        stem = c.split("-")[0] if "-" in c else c
        out.setdefault(refine(plural(stem)), out.get(refine(stem), c) if "-" in c else c)
    return {k: v for k, v in sorted(out.items()) if k not in set(map(refine, classes))}


def main(out: Path = RESOURCES / "text_names.json") -> None:
    vg = json.loads((RESOURCES / "vg150_facts.json").read_text())["object_classes"]
    psg = json.loads((RESOURCES / "psg_facts.json").read_text())["object_classes"]
    doc = {
        "_about": "Names a text scene graph may use for a class, mapped to the dataset's class name (after "
        "lowercasing, '_' and '-' read as spaces). Made by scripts/make_text_names.py (its docstring states the "
        "rules); a name that is itself a class of the dataset is never remapped.",
        "version": 1,
        "objects": {"vg150": entries(vg), "psg": entries(psg)},
        "predicates": {"vg150": {}, "psg": {}},
    }
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"text_names.json: {len(doc['objects']['vg150'])} VG150 and {len(doc['objects']['psg'])} PSG entries")


if __name__ == "__main__":
    import sys

    main(Path(sys.argv[1]) if len(sys.argv) > 1 else RESOURCES / "text_names.json")
