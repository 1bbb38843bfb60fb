"""The layers of sgg_eval (docs/architecture.md): a module imports only its own layer or lower ones, so the
library never depends on the pipeline (params.yaml, Hydra, DVC, MLflow) and readers never on the simulator."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
_spec = importlib.util.spec_from_file_location("dvc_deps", ROOT / "scripts" / "dvc_deps.py")
dvc_deps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dvc_deps)
# lowest first; a module's layer is that of its longest matching prefix
LAYERS = (
    ("foundation", ("sgg_eval.core", "sgg_eval.io", "sgg_eval.arrays")),
    ("readers and metric core", ("sgg_eval.data", "sgg_eval.formats", "sgg_eval.metrics")),
    (
        "products",
        (
            "sgg_eval.boxes",
            "sgg_eval.panoptic",
            "sgg_eval.text",
            "sgg_eval.video",
            "sgg_eval.retrieval",
            "sgg_eval.simulate",
            "sgg_eval.report",
        ),
    ),
    ("public API", ("sgg_eval.api",)),
    ("pipeline, CLI and service", ("sgg_eval.pipeline", "sgg_eval.cli", "sgg_eval.service")),
)


def _layer(module: str) -> int:
    best = (-1, -1)
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                best = max(best, (len(prefix), rank))
    return best[1]


def _modules():
    for path in sorted((SRC / "sgg_eval").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def _imports(path: Path) -> set[str]:
    """Every sgg_eval module imported anywhere in the file, including imports inside functions (the same
    scan that derives the DVC stages' code dependencies)."""
    return dvc_deps._imported_modules(path)


def test_every_module_has_a_layer():
    unplaced = [name for name, _ in _modules() if name != "sgg_eval" and _layer(name) < 0]
    assert not unplaced, f"add these modules to a layer in LAYERS and docs/architecture.md: {unplaced}"


def test_no_module_imports_a_higher_layer():
    upward = []
    for name, path in _modules():
        if name == "sgg_eval":
            continue
        for imported in _imports(path):
            if _layer(imported) > _layer(name):
                upward.append(f"{name} ({LAYERS[_layer(name)][0]}) imports {imported} ({LAYERS[_layer(imported)][0]})")
    assert not upward, "\n".join(upward)


def test_the_check_itself_catches_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from sgg_eval.pipeline.config import load_params\n")
    assert any(_layer(m) > _layer("sgg_eval.metrics.engine") for m in _imports(bad))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing itself): each is an
    import loop. Tarjan's algorithm, iterative."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return found


def test_the_import_graph_has_no_loop():
    """Every import counts: at module level, inside functions and under ``TYPE_CHECKING``."""
    graph = {name: set(_imports(path)) for name, path in _modules()}
    loops = _cycles(graph)
    assert not loops, "import loops: " + "; ".join(" <-> ".join(c) for c in loops)


def test_the_loop_check_itself_finds_a_loop():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"a"}}) == [["a"]] and _cycles({"a": {"b"}, "b": set()}) == []
