"""Issue 65's budget of long functions: at most 7 of 60 lines or more in ``src/``, the ones named here.

The seven are the hot ranking code (``block_ranks``, ``add_many``: one function keeps the arrays in one place) and
entry points that read top to bottom. A new one fails here by name: split it, or add it with its reason.
"""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
LONG = 60
ALLOWED = {
    "sgg_eval/metrics/ranking/block_ranks.py:block_ranks",
    "sgg_eval/metrics/reduce.py:add_many",
    "sgg_eval/boxes/evaluate.py:run_evaluation",
    "sgg_eval/boxes/sources.py:_open_predictions",
    "sgg_eval/report/tables.py:paper_tables",
    "sgg_eval/retrieval/evaluate.py:run_s2g",
    "sgg_eval/pipeline/report_stages.py:run_track",
}


def long_functions(root: Path) -> dict[str, int]:
    """``path:name`` -> lines, for every function (methods and nested ones too) of ``LONG`` lines or more."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines >= LONG:
                    found[f"{path.relative_to(root).as_posix()}:{node.name}"] = lines
    return found


def test_only_the_allowed_functions_are_long():
    found = long_functions(SRC)
    assert set(found) <= ALLOWED, {k: v for k, v in found.items() if k not in ALLOWED}
    assert len(ALLOWED) <= 7


def test_the_count_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LONG))
    (tmp_path / "m.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    assert long_functions(tmp_path) == {"m.py:long": LONG + 1}
