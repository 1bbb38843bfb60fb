"""The lock file pins the whole environment: every package sgg-eval[dev] needs, transitively, at the version
installed here, and each within pyproject.toml's range. `make lock` regenerates it."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
# the installer's own tools: every virtualenv brings them and `pip freeze` omits them by convention
INSTALLER = {"pip", "setuptools", "wheel"}


def _lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _closure(extras=("dev",)) -> set[str]:
    """Canonical names of every distribution sgg-eval (with ``extras``) needs here, transitively."""
    seen, todo = set(), [(Requirement(f"sgg-eval[{','.join(extras)}]"), ())]
    while todo:
        req, parent_extras = todo.pop()
        name = canonicalize_name(req.name)
        if req.marker and not any(
            req.marker.evaluate({**default_environment(), "extra": e}) for e in (parent_extras or ("",))
        ):
            continue
        first_visit = name not in seen
        seen.add(name)
        if not first_visit and not req.extras:
            continue
        for sub in metadata.requires(req.name) or []:
            todo.append((Requirement(sub), tuple(req.extras)))
    return seen - {"sgg-eval"} - INSTALLER


def test_lock_pins_every_needed_package_at_the_installed_version():
    pins = _lock()
    for name in sorted(_closure()):
        assert name in pins, f"{name} is needed but not in requirements.lock: run `make lock`"
        assert metadata.version(name) == pins[name], (name, metadata.version(name), pins[name])


def test_pyproject_ranges_admit_the_locked_versions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _lock()
    for spec in project["dependencies"] + project["optional-dependencies"]["dev"]:
        req = Requirement(spec)
        assert req.specifier.contains(pins[canonicalize_name(req.name)], prereleases=True), spec


def test_ruff_is_one_version_in_pyproject_the_lock_and_pre_commit():
    """CI (`make lint`), the pre-commit hook and every contributor's venv format the same way."""
    import re

    pinned = re.search(r'"ruff==([\d.]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    hook = re.search(r"ruff-pre-commit\s+rev: v([\d.]+)", (ROOT / ".pre-commit-config.yaml").read_text()).group(1)
    assert pinned == hook == _lock()["ruff"]


def test_lint_holds_functions_to_a_complexity_limit():
    """`make lint` (CI) runs ruff's McCabe rule at the limit pyproject.toml states, on every folder it lints."""
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "C90" in lint["select"] and lint["mccabe"]["max-complexity"] == 15
    assert "ruff check src tests stages scripts" in (ROOT / "Makefile").read_text()
    assert "make lint" in (ROOT / ".ci" / "run").read_text()
