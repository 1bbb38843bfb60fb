"""Every module path the documentation names exists: the ``dotted.names`` in the package's docstrings (module,
class and function), and the ``folder/module.py`` paths in docs/, the README and CONTRIBUTING that point into this
repository. A rename that leaves a stale name behind fails here. Other tools' paths (``datasets/psg.py`` of
OpenPSG) and the params' keys (``metrics.tau``) are not module paths and are left alone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml
from test_docs import OTHER_PROJECTS, _resolves

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "sgg_eval"
TOPS = {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()} | {p.stem for p in PKG.glob("*.py")}
REPO_FOLDERS = ("src/sgg_eval/", "tests/", "stages/", "scripts/", "conf/", "docs/", ".ci/")
DOTTED = re.compile(r"``([a-z_0-9]+(?:\.[a-z_0-9]+)+)``")
PATH = re.compile(r"`((?:[a-z_0-9.]+/)+[a-z_0-9]+\.py)`")


def _param_keys() -> set[str]:
    """Every key of params.yaml as a dotted path (``metrics.tau``) and each of its prefixes."""
    keys: set[str] = set()

    def walk(node, prefix):
        if isinstance(node, dict):
            for key, value in node.items():
                keys.add(f"{prefix}{key}")
                walk(value, f"{prefix}{key}.")

    walk(yaml.safe_load((ROOT / "params.yaml").read_text()), "")
    return keys


def stale_docstring_names(files=None, root: Path = PKG) -> list[str]:
    """``module: name`` for every dotted name of ours in a docstring that resolves to no module or attribute."""
    params = _param_keys()
    wrong = []
    for path in files or sorted(PKG.rglob("*.py")):
        rel = path.relative_to(root)
        parts = rel.parent.parts if rel.name == "__init__.py" else rel.with_suffix("").parts[:-1]
        package = ".".join(("sgg_eval", *parts))
        tree = ast.parse(path.read_text())
        nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))]
        for name in {n for node in nodes for n in DOTTED.findall(ast.get_docstring(node) or "")}:
            ours = name.split(".")[0] in TOPS or (PKG / rel.parent / name.split(".")[0]).exists()
            if ours and name not in params and not name.startswith(OTHER_PROJECTS) and not _resolves(name, package):
                wrong.append(f"{rel}: {name}")
    return sorted(wrong)


def stale_doc_paths(pages=None) -> list[str]:
    """``page: path`` for every ``folder/module.py`` of ours a page names that does not exist."""
    wrong = []
    for page in pages or [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]:
        for path in sorted(set(PATH.findall(page.read_text()))):
            if path.startswith(REPO_FOLDERS):
                exists = (ROOT / path).exists()
            elif path.split("/")[0] in TOPS:
                exists = (PKG / path).exists()
            else:
                continue  # another tool's file (OpenPSG's datasets/psg.py, ...)
            if not exists:
                wrong.append(f"{page.name}: {path}")
    return wrong


def test_every_module_a_docstring_names_exists():
    assert stale_docstring_names() == []


def test_every_module_path_the_docs_name_exists():
    assert stale_doc_paths() == []


def test_both_checks_can_fail(tmp_path):
    module = tmp_path / "metrics" / "names.py"  # in a module's place, a docstring naming old and new paths
    module.parent.mkdir()
    module.write_text('"""Ranks (``metrics.ranks``), the engine (``metrics.engine``), τ (``metrics.tau``)."""\n')
    assert stale_docstring_names([module], root=tmp_path) == ["metrics/names.py: metrics.ranks"]
    page = tmp_path / "page.md"
    page.write_text("`metrics/ranks.py`, `metrics/engine.py`, `tests/nowhere.py`, `datasets/psg.py` (OpenPSG's)\n")
    assert stale_doc_paths([page]) == ["page.md: metrics/ranks.py", "page.md: tests/nowhere.py"]
