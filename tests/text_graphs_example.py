"""Tiny GENERATED inputs of the three text-graph evaluators sgg-eval reproduces, for the README's example:
``python tests/text_graphs_example.py OUT`` writes ``OUT/text_graphs/`` with R1-SGG's answer folder and GT rows
(``r1sgg/``), ASMv2's answers and question file (``asmv2/``) and SceneGraphVLM's samples (``sgvlm.jsonl``). No real
data: made by the fixtures the tests check each evaluator's code on."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from asmv2_fixture import write_fixture as write_asmv2  # noqa: E402
from r1sgg_fixture import write_fixture as write_r1sgg  # noqa: E402
from sgvlm_fixture import write_fixture as write_sgvlm  # noqa: E402

if __name__ == "__main__":
    out = Path(sys.argv[1]) / "text_graphs"
    write_r1sgg(out / "r1sgg", "psg", 0)
    write_asmv2(out / "asmv2", 0)
    write_sgvlm(out / "sgvlm.jsonl", 0)
    print(f"wrote GENERATED text scene graphs (no real data) in {out}: r1sgg/, asmv2/, sgvlm.jsonl")
