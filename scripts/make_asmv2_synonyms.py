"""Writes ``src/sgg_eval/data/resources/asmv2_synonyms.json``: the synonym table ASMv2's PSG scorer reads names through
(issue 48, ``--protocol asmv2``), copied as data from its ``llava/eval/synonyms.txt``:

    python scripts/make_asmv2_synonyms.py SYNONYMS_TXT [OUT]

SYNONYMS_TXT is that file at commit ``COMMIT`` (``git show 5cb8cea:all-seeing-v2/llava/eval/synonyms.txt`` in a clone
of OpenGVLab/all-seeing). It is stored as the dict ``eval_psg.py`` builds of it: every comma-separated phrase of a
line, stripped, maps to the line's first phrase; a phrase on several lines keeps the last line's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "sgg_eval" / "data" / "resources" / "asmv2_synonyms.json"
COMMIT = "5cb8cea069286efb0bfba9e4926ad77f353c9214"


def table(text: str) -> dict:
    synonyms = {}
    for line in text.splitlines(keepends=True):
        phrases = line.split(",")
        for p in phrases:
            synonyms[p.strip()] = phrases[0].strip()
    return synonyms


def main(argv: list[str]) -> None:
    if not argv or len(argv) > 2:
        sys.exit(__doc__)
    out = Path(argv[1]) if len(argv) == 2 else OUT
    doc = {
        "source": {"repository": "OpenGVLab/all-seeing", "commit": COMMIT,
                   "file": "all-seeing-v2/llava/eval/synonyms.txt", "made_by": "scripts/make_asmv2_synonyms.py"},
        "synonyms": table(Path(argv[0]).read_text("utf-8")),
    }  # fmt: skip
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
