"""Keep every DVC stage's code dependencies equal to the static import closure of its script.

    python scripts/dvc_deps.py          # rewrite the code deps (stages/*.py, src/sgg_eval/**.py) in dvc.yaml
    python scripts/dvc_deps.py --check  # exit 1 listing what is missing or extra (tests/test_dvc_deps.py)

The closure follows every ``import sgg_eval...`` in a file, including imports inside functions (a lazy import
still runs), plus each imported module's parent packages. Over-approximating is the safe side: a stage may
rerun when it did not need to, never keep a stale number.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "sgg_eval"
_CODE = re.compile(r"^(stages/\w+\.py|src/sgg_eval/[\w/.-]+)$")
# package data a module reads: resources.files("sgg_eval.data").joinpath("resources/...")
_RESOURCE = re.compile(r'resources\.files\("sgg_eval\.(\w+)"\)\.joinpath\("([^"]+)"\)')


def _module_file(module: str) -> Path | None:
    base = ROOT / "src" / Path(*module.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.exists():
            return candidate
    return None


def _imported_modules(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}  # `from pkg import module`
    return {m for m in out if m.split(".")[0] == PACKAGE}


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
        for package, name in _RESOURCE.findall(path.read_text(encoding="utf-8")):
            files.add(f"src/sgg_eval/{package}/{name}")
    return sorted(files)


def _stage_scripts(text: str) -> dict[str, str]:
    import yaml

    return {name: re.search(r"stages/\w+\.py", stage["cmd"]).group(0)
            for name, stage in yaml.safe_load(text)["stages"].items()}


def differences(text: str) -> dict[str, tuple[list[str], list[str]]]:
    """Per stage: (code it runs but does not depend on, code deps it does not run)."""
    import yaml

    stages = yaml.safe_load(text)["stages"]
    out = {}
    for name, script in _stage_scripts(text).items():
        want = set(closure(script))
        have = {d for d in stages[name].get("deps", []) if isinstance(d, str) and _CODE.match(d)}
        if want != have:
            out[name] = (sorted(want - have), sorted(have - want))
    return out


def rewrite(text: str) -> str:
    """``text`` with each stage's code deps replaced by its closure (other deps and order kept)."""
    scripts = _stage_scripts(text)
    lines, out, stage, in_deps, written = text.splitlines(keepends=True), [], None, False, False
    for line in lines:
        m = re.match(r"^  (\w+):\s*$", line)
        if m:
            stage, in_deps, written = m.group(1), False, False
        if re.match(r"^    deps:\s*$", line):
            in_deps, written = True, False
            out.append(line)
            continue
        if in_deps and line.startswith("      - "):
            dep = line.strip()[2:]
            if _CODE.match(dep):
                if not written:
                    out.extend(f"      - {p}\n" for p in closure(scripts[stage]))
                    written = True
                continue
        elif in_deps:
            in_deps = False
        out.append(line)
    return "".join(out)


def main(argv: list[str]) -> int:
    path = ROOT / "dvc.yaml"
    text = path.read_text(encoding="utf-8")
    if "--check" in argv:
        diff = differences(text)
        for name, (missing, extra) in diff.items():
            print(f"{name}: missing {missing}; not run {extra}")
        return 1 if diff else 0
    path.write_text(rewrite(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
