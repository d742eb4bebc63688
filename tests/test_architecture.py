"""The layout's rules, checked on the source: which layer may import which, and no import circles.

Every ``import`` and ``from ... import`` in ``orchestrator/``, ``phases/`` and ``memory/``
counts, at module level or inside a function (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("orchestrator", "phases", "memory")
CORE = "orchestrator"  # orchestrator/__init__.py, errors.py, home.py: what every layer may use

ALLOWED: dict[str, set[str]] = {
    "memory": set(),
    CORE: set(),
    "orchestrator.sandbox": {CORE},
    "phases": {"orchestrator.sandbox"},
    "orchestrator.llm": {CORE},
    "orchestrator.tools": {CORE, "orchestrator.sandbox"},
    "orchestrator.index": {CORE, "memory", "orchestrator.sandbox"},
    "orchestrator.hooks": {CORE},
    "orchestrator.loop": {
        CORE,
        "memory",
        "phases",
        "orchestrator.hooks",
        "orchestrator.index",
        "orchestrator.llm",
        "orchestrator.sandbox",
        "orchestrator.tools",
    },
    "orchestrator.bench": {
        CORE,
        "phases",
        "orchestrator.loop",
        "orchestrator.hooks",
        "orchestrator.sandbox",
    },
    "orchestrator.improve": {
        CORE,
        "memory",
        "phases",
        "orchestrator.bench",
        "orchestrator.loop",
        "orchestrator.hooks",
        "orchestrator.llm",
        "orchestrator.sandbox",
    },
    "orchestrator.nightly": {
        CORE,
        "memory",
        "phases",
        "orchestrator.bench",
        "orchestrator.hooks",
        "orchestrator.improve",
        "orchestrator.llm",
    },
    "orchestrator.serve": {
        CORE,
        "memory",
        "phases",
        "orchestrator.bench",
        "orchestrator.improve",
        "orchestrator.loop",
        "orchestrator.nightly",
        "orchestrator.sandbox",
    },
    "orchestrator.cli": {
        CORE,
        "memory",
        "phases",
        "orchestrator.bench",
        "orchestrator.loop",
        "orchestrator.hooks",
        "orchestrator.index",
        "orchestrator.improve",
        "orchestrator.llm",
        "orchestrator.nightly",
        "orchestrator.sandbox",
        "orchestrator.serve",
    },
}
"""Layer -> the other layers it may import. The order of the table is the direction."""

LEAVES = {"orchestrator.sandbox.files"}
"""Modules every layer may use although their layer sits lower: cadillac's one atomic,
no-follow write (and append, and reads), which imports nothing of cadillac's itself."""


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _layer(module: str) -> str:
    if module == "orchestrator.__main__":
        return "orchestrator.cli"
    parts = module.split(".")
    if parts[0] != "orchestrator":
        return parts[0]
    sub = ".".join(parts[:2])
    return sub if sub in ALLOWED else CORE


def _imports(module: str) -> set[str]:
    """The cadillac modules ``module`` imports (a name imported from a package counts as the
    submodule when there is one of that name)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                for a in node.names
            ]
        else:
            continue
        out |= {n for n in names if n.split(".")[0] in PACKAGES and n in MODULES}
    return out - {module}


GRAPH = {module: _imports(module) for module in MODULES}


def wrong_directions(graph: dict[str, set[str]], module: str) -> list[str]:
    mine = _layer(module)
    return sorted(
        f"{dep} ({_layer(dep)})"
        for dep in graph[module]
        if _layer(dep) != mine and _layer(dep) not in ALLOWED[mine] and dep not in LEAVES
    )


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of the graph, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for dep in sorted(graph[module]):
            if state.get(dep) == 1:
                return path[path.index(dep) :] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_every_module_belongs_to_a_layer_of_the_table():
    assert {_layer(m) for m in MODULES} <= set(ALLOWED)
    for sub in (ROOT / "orchestrator").iterdir():
        if sub.is_dir() and (sub / "__init__.py").exists():
            assert f"orchestrator.{sub.name}" in ALLOWED, f"{sub} is missing from the table"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_follow_the_direction_of_the_layers(module):
    wrong = wrong_directions(GRAPH, module)
    assert not wrong, f"{module} ({_layer(module)}) may not import {', '.join(wrong)}"


def test_no_import_circles():
    circle = find_circle(GRAPH)
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_the_checks_find_a_planted_upward_import_and_a_planted_circle():
    planted = {**GRAPH, "memory.store": GRAPH["memory.store"] | {"phases"}}
    assert wrong_directions(planted, "memory.store") == ["phases (phases)"]
    assert "orchestrator.nightly.records" in GRAPH["orchestrator.nightly.report"]
    planted["orchestrator.nightly.records"] = {"orchestrator.nightly.report"}
    circle = find_circle(planted)
    assert circle is not None and circle[0] == circle[-1]
    assert set(circle) == {"orchestrator.nightly.records", "orchestrator.nightly.report"}


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_a_leaf_module_imports_nothing_of_cadillacs(leaf):
    assert GRAPH[leaf] == set(), f"{leaf} imports {', '.join(sorted(GRAPH[leaf]))}"


def test_a_leaf_allows_that_module_and_no_other_of_its_layer():
    planted = {**GRAPH, "memory.store": GRAPH["memory.store"] | {"orchestrator.sandbox.policy"}}
    assert wrong_directions(planted, "memory.store") == [
        "orchestrator.sandbox.policy (orchestrator.sandbox)"
    ]
    assert "orchestrator.sandbox.files" in GRAPH["memory.jsonl"]
    assert wrong_directions(GRAPH, "memory.jsonl") == []


IGNORED_NAMES = {"build", "dist", "target", "out", "env", "venv", "lib", "tmp", "cache"}
"""Folder names that Python's usual ignore templates and code-mapping tools skip at any depth."""


def test_no_package_folder_has_a_name_that_ignore_files_skip():
    """A contributor whose global ignore file lists ``build/`` would not see a new module in
    ``orchestrator/build/`` (the build loop lives in ``orchestrator/loop/``)."""
    folders = [
        path.relative_to(ROOT)
        for package in PACKAGES
        for path in (ROOT / package).rglob("*")
        if path.is_dir() and "__pycache__" not in path.parts
    ]
    assert folders, "the packages were not found"
    assert [f for f in folders if f.name in IGNORED_NAMES] == []
