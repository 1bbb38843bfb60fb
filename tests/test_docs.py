"""The docs point at something: every relative link of README.md and docs/ names a file of the repository, and
no text cites a document that is not in it (a spec, an old architecture file, a folder outside the repo)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sgg_eval.pipeline.paths import PIPELINE_FILES

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")  # [text](target)


def _relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks hold commands, not links
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_names_a_file(page):
    missing = [t for t in _relative_links(page) if not (page.parent / t.split("#")[0]).exists()]
    assert not missing, f"{page.name}: {missing}"


def test_the_link_check_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[here](nowhere.md) and [ok](page.md) and [web](https://example.org)\n")
    assert [t for t in _relative_links(page) if not (page.parent / t).exists()] == ["nowhere.md"]


def test_no_citation_of_documents_outside_the_repository():
    cited = re.compile(r"SPEC §|ARCHITECTURE\.md|shared/|seed 00\d")
    hits = [
        f"{p.relative_to(ROOT)}:{i}"
        for folder in ("src", "docs", "conf")
        for p in sorted((ROOT / folder).rglob("*"))
        if p.is_file() and p.suffix in (".py", ".md", ".yaml") and "egg-info" not in str(p)
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if cited.search(line)
    ]
    hits += [
        f"README.md:{i}"
        for i, line in enumerate((ROOT / "README.md").read_text().splitlines(), 1)
        if cited.search(line)
    ]
    assert not hits, hits


PKG = ROOT / "src" / "sgg_eval"


def _architecture_paths(text: str) -> set[str]:
    """The package-relative paths docs/architecture.md names in backticks: `formats/torch/`, `metrics/ranks.py`."""
    return set(re.findall(r"`((?:[a-z_0-9]+/)+(?:[a-z_0-9]+\.py)?)", text))


def test_architecture_names_every_package_and_only_modules_that_exist():
    text = (ROOT / "docs" / "architecture.md").read_text()
    # paths from the repository's root: its folders, and those of the pipeline's other dvc.yaml files
    pipelines = tuple(f.rpartition("/")[0] + "/" for f in PIPELINE_FILES if "/" in f)
    repo = ("src/", "tests/", "docs/", "conf/", "stages/", *pipelines)
    named = {p for p in _architecture_paths(text) if not p.startswith(repo)}
    missing = sorted(p for p in named if not (PKG / p).exists() and not p.startswith("data/"))
    missing += sorted(p for p in _architecture_paths(text) if p.startswith(repo) and not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"
    packages = sorted(str(d.relative_to(PKG)) + "/" for d in PKG.rglob("*") if (d / "__init__.py").exists())
    unnamed = [p for p in packages if p not in named and p not in ("data/",)]
    assert not unnamed, f"docs/architecture.md does not name these packages: {unnamed}"
    assert "`data/`" in text  # `data/` is both a package and the pipeline's output folder: named as such
    modules = {p.stem for p in PKG.glob("*.py") if p.stem != "__init__"}
    assert not [m for m in modules if f"`{m}`" not in text], "top-level modules missing from the layer table"


def test_the_architecture_check_can_fail():
    assert _architecture_paths("`formats/torch/` and `metrics/ranks.py` and `arrays/`") == {
        "formats/torch/",
        "metrics/ranks.py",
        "arrays/",
    }


OTHER_PROJECTS = ("torch.", "numpy.", "zipfile.")  # other projects' names (``torch.save``), not modules of ours


def _docstring_names(package: Path) -> list[str]:
    """The ``dotted`` names a package's docstring gives in double backticks that look like module paths."""
    import ast

    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    names = re.findall(r"``([a-z_0-9]+(?:\.[a-z_0-9]+)*)``", doc)
    return [
        n for n in names if not n.endswith((".yaml", ".json", ".pytorch", ".py")) and not n.startswith(OTHER_PROJECTS)
    ]


def _resolves(name: str, package: str) -> bool:
    """``name`` is a module or package of sgg_eval, relative to ``package`` or to the root, or an attribute of
    one (``reader.load``). A module's file is found before anything is imported: the service's modules import
    Django's configured settings."""
    import importlib

    for base in (package, "sgg_eval"):
        path = PKG.joinpath(*f"{base}.{name}".split(".")[1:])
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return True
    for base in (package, "sgg_eval"):
        parts = f"{base}.{name}".split(".")
        for cut in (len(parts), len(parts) - 1):
            try:
                module = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            if cut == len(parts) or hasattr(module, parts[-1]):
                return True
    return False


def test_package_docstrings_name_only_modules_that_exist():
    wrong = []
    for init in sorted(PKG.rglob("__init__.py")):
        package = "sgg_eval" + "".join(f".{p}" for p in init.parent.relative_to(PKG).parts)
        wrong += [f"{package}: {n}" for n in _docstring_names(init.parent) if not _resolves(n, package)]
    assert not wrong, wrong


def test_the_docstring_check_can_fail():
    assert _resolves("ranking.families", "sgg_eval.metrics") and _resolves("reader.load", "sgg_eval.formats.torch")
    assert not _resolves("stages", "sgg_eval.pipeline") and not _resolves("isolated", "sgg_eval.io")
