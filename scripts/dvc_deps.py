"""Check that every DVC stage depends on all the code it runs: its script's static import closure.

    python scripts/dvc_deps.py   # exit 1 listing, per stage, the code it runs but does not depend on

Stages depend on the folders `src/sgg_eval` and `stages` (one `dvc exp show` column each, not one per
module), so a file is covered when it, or a folder above it, is a dep. The closure follows every
``import sgg_eval...`` in a file, including imports inside functions (a lazy import still runs), plus each
imported module's parent packages and the package data files those modules read. Over-approximating is the
safe side: a stage may rerun when it did not need to, never keep a stale number.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "sgg_eval"
# package data a module reads: resources.files("sgg_eval.data").joinpath("resources/...") or, with an
# f-string, joinpath(f"resources/published/{name}"): every file that the literal prefix can name
_RESOURCE = re.compile(r'resources\.files\("sgg_eval\.(\w+)"\)\.joinpath\(f?"([^"]+)"\)')


def _module_file(module: str) -> Path | None:
    base = ROOT / "src" / Path(*module.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.exists():
            return candidate
    return None


# Each file is parsed once per process (the stages' closures share most of their modules: parsing them again for
# every stage took 9 s of `make deps`); the check reads the files as they are when it runs.
@functools.cache
def _imported_modules(path: Path) -> frozenset[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}  # `from pkg import module`
    return frozenset(m for m in out if m.split(".")[0] == PACKAGE)


@functools.cache
def _resources_read(path: Path) -> tuple[tuple[str, str], ...]:
    """The (package, joinpath argument) pairs of the package data ``path`` reads."""
    return tuple(_RESOURCE.findall(path.read_text(encoding="utf-8")))


def closure(script: str) -> list[str]:
    """Repository-relative paths of ``script``, every project module it can import and the package data
    files those modules read, sorted."""
    seen: set[Path] = set()
    todo = [ROOT / script]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imported_modules(path):
            parts = module.split(".")
            for i in range(1, len(parts) + 1):
                found = _module_file(".".join(parts[:i]))
                if found is not None and found not in seen:
                    todo.append(found)
    files = {str(p.relative_to(ROOT)) for p in seen}
    for path in seen:
        for package, name in _resources_read(path):
            files |= _resource_files(f"src/sgg_eval/{package}/{name}")
    return sorted(files)


def _resource_files(pattern: str) -> set[str]:
    """The package data files a ``joinpath`` argument can name: itself, or with ``{...}`` fields every file
    whose path starts with the literal text before the first field."""
    if "{" not in pattern:
        return {pattern}
    prefix = pattern.split("{", 1)[0]
    folder = ROOT / prefix.rsplit("/", 1)[0]
    return {
        str(p.relative_to(ROOT))
        for p in folder.rglob("*")
        if p.is_file() and str(p.relative_to(ROOT)).startswith(prefix)
    }


def _stage_scripts(text: str) -> dict[str, str]:
    import yaml

    return {
        name: re.search(r"stages/\w+\.py", stage["cmd"]).group(0)
        for name, stage in yaml.safe_load(text)["stages"].items()
    }


def _covered(path: str, deps: set[str]) -> bool:
    parts = path.split("/")
    return any("/".join(parts[:i]) in deps for i in range(1, len(parts) + 1))


def differences(text: str) -> dict[str, list[str]]:
    """Per stage: the code it runs (closure of its script) that no dep of the stage covers."""
    import yaml

    stages = yaml.safe_load(text)["stages"]
    out = {}
    for name, script in _stage_scripts(text).items():
        deps = {d.rstrip("/") for d in stages[name].get("deps", []) if isinstance(d, str)}
        missing = [path for path in closure(script) if not _covered(path, deps)]
        if missing:
            out[name] = missing
    return out


def main(argv: list[str]) -> int:
    from sgg_eval.pipeline.paths import PIPELINE_FILES

    failed = False
    for pipeline in PIPELINE_FILES:
        for name, missing in differences((ROOT / pipeline).read_text(encoding="utf-8")).items():
            print(f"{pipeline}: {name}: runs but does not depend on {missing}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
