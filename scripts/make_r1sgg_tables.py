"""Writes ``src/sgg_eval/data/resources/r1sgg_tables.json``: the name tables R1-SGG's ``sgg_gather_preds.py`` reads
answers through (issue 48, ``--protocol r1sgg``), copied as data from its ``src/vg_synonyms.py``:

    python scripts/make_r1sgg_tables.py VG_SYNONYMS_PY [OUT]

``VG_SYNONYMS_PY`` is that file at commit ``COMMIT`` (``git show e4de64d:src/vg_synonyms.py`` in a clone of
gpt4vision/R1-SGG). The lists are read as literals (never executed) and stored as the dicts R1-SGG builds of them
(``{e['source']: e['target'] for e in ...}``: a repeated source keeps its last target, as there):

- ``objects.vg150`` (``obj2vg_list``, 118 pairs) and ``objects.psg`` (``obj2psg_list``, 44 pairs);
- ``predicates.vg150`` (``rel2vg_list``, 248 pairs; R1-SGG has no predicate table for PSG);
- ``passive`` (``pass2act_list``, 36 entries): source -> ``[target, swap]``, ``swap`` 1 when subject and object
  change places (``held by`` -> ``holding``).
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "sgg_eval" / "data" / "resources" / "r1sgg_tables.json"
COMMIT = "e4de64d4c4c97edec648021d012198b21a9b1864"
LISTS = ("obj2vg_list", "obj2psg_list", "rel2vg_list", "pass2act_list")


def read_lists(path: Path) -> dict:
    """The module-level list literals ``LISTS`` of ``path``."""
    found = {}
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and getattr(node.targets[0], "id", "") in LISTS:
            found[node.targets[0].id] = ast.literal_eval(node.value)
    missing = set(LISTS) - set(found)
    if missing:
        sys.exit(f"{path}: no {', '.join(sorted(missing))}")
    return found


def tables(lists: dict) -> dict:
    def as_map(entries):
        return {e["source"]: e["target"] for e in entries}

    return {
        "source": {
            "repository": "gpt4vision/R1-SGG",
            "commit": COMMIT,
            "file": "src/vg_synonyms.py",
            "symbols": list(LISTS),
            "made_by": "scripts/make_r1sgg_tables.py",
        },
        "objects": {"vg150": as_map(lists["obj2vg_list"]), "psg": as_map(lists["obj2psg_list"])},
        "predicates": {"vg150": as_map(lists["rel2vg_list"]), "psg": {}},
        "passive": {e["source"]: [e["target"], int(e["passive"])] for e in lists["pass2act_list"]},
    }


def main(argv: list[str]) -> None:
    if not argv or len(argv) > 2:
        sys.exit(__doc__)
    out = Path(argv[1]) if len(argv) == 2 else OUT
    out.write_text(json.dumps(tables(read_lists(Path(argv[0]))), indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
