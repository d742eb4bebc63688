"""Python: every module compiles, and every import between the project's own modules resolves.

A project whose ``app/cli.py`` imports a name that ``app/store.py`` does not define
compiles, and passes its tests and its smoke run when neither imports ``app.cli``. So
each module is checked statically, from its syntax tree, on the host. Nothing of the
project runs, and files are read without following links. The check covers:

* ``import a.b``, where ``a`` is the project's: ``a/b.py`` or ``a/b/__init__.py`` exists;
* ``from a.b import x`` (or its relative form): ``a.b`` exists, and ``x`` is one of its
  submodules or a name bound at its top level. A name counts as bound when it is given
  by a ``def``, a ``class``, an assignment, an import, or a ``for``/``with`` target,
  including inside top-level ``if``/``try`` blocks.

A module that binds names in ways a syntax tree does not show (a module-level
``__getattr__``, ``from x import *``, writes to ``globals()``) is taken at its word, as is
one the host will not parse: over 2 MB, or nested too deep for the parser (a model's file
is read on the host, so it must not be able to exhaust the host's memory or stack).
Imports inside ``try`` blocks that handle ``ImportError`` are optional and not checked.
The project's modules are found from the workspace root, and from ``src/`` for a src
layout. Compiling is ``py_compile``, run in the sandbox, as the earlier checks did.

That is a new project's check: all of it is the change. A change to an existing project
is held to what it touched and to what the project packages
(:mod:`phases.stacks.python_change`): a user's deliberately broken test fixture is not
its concern.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from orchestrator.sandbox.files import read_regular
from phases.base import CheckResult, PhaseContext, Plan, python_compiles
from phases.stacks.python_change import check_change

SOURCE_ROOTS = (".", "src")
TYPE_ALIAS = getattr(ast, "TypeAlias", ())
"""``type X = ...`` (Python 3.12); on an older Python nothing is one."""
SHOWN = 8
MAX_MODULE_BYTES = 2_000_000
"""A module larger than this is not parsed on the host (a model could write gigabytes)."""


@dataclass(frozen=True)
class PythonStack:
    root: str = "."
    name: str = "python"

    guide: str = (
        "Python: dependencies in requirements.txt (or pyproject.toml) at the root, installed "
        "into .venv from wheels. The code check compiles every module and checks that every "
        "import between the project's own modules names a module and a name that exist; "
        "tests: `python -m pytest -q` or unittest."
    )

    serves: str = ""
    """Python is run as it is (the plan's run command): nothing to build."""

    def artifact(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        return None

    def artifact_path(self, workspace: Path) -> str:
        return ""

    def check_code(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        if ctx.changed is not None:  # a change to a user's project: what it touched
            return check_change(ctx, imports_resolve)
        files = ctx.workspace.files()
        failed = python_compiles(ctx, files)
        if failed is not None or ctx.baseline is not None:  # a user's project, all of it
            return failed
        return imports_resolve(ctx.workspace.root, files)


def module_map(files: list[str]) -> dict[str, str]:
    """Dotted module name -> its file, for every ``.py`` file under a source root; a
    namespace package (a folder of modules without ``__init__.py``) maps to ""."""
    modules: dict[str, str] = {}
    for path in files:
        if not path.endswith(".py"):
            continue
        for base in SOURCE_ROOTS:
            rel = path if base == "." else path.removeprefix(base + "/")
            if base != "." and rel == path:
                continue
            parts = rel[:-3].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and all(p.isidentifier() for p in parts):
                modules[".".join(parts)] = path
                for n in range(1, len(parts)):
                    modules.setdefault(".".join(parts[:n]), "")
    return modules


def _bound(tree: ast.Module) -> tuple[set[str], bool]:
    """The names a module binds at its top level, and whether it may bind others unseen."""
    names: set[str] = set()
    open_ended = False

    def targets(node: ast.AST) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                names.add(sub.id)

    def visit(body: list[ast.stmt]) -> None:
        nonlocal open_ended
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
                open_ended |= node.name == "__getattr__"
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    targets(target)
            elif isinstance(node, ast.AnnAssign | ast.AugAssign):
                targets(node.target)
            elif isinstance(node, ast.Import):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    open_ended |= alias.name == "*"
                    names.add(alias.asname or alias.name)
            elif isinstance(node, ast.For | ast.AsyncFor):
                targets(node.target)
                visit(node.body + node.orelse)
            elif isinstance(node, ast.With | ast.AsyncWith):
                for item in node.items:
                    if item.optional_vars is not None:
                        targets(item.optional_vars)
                visit(node.body)
            elif isinstance(node, ast.If | ast.While):
                visit(node.body + node.orelse)
            elif isinstance(node, ast.Try | ast.TryStar):
                visit(node.body + node.orelse + node.finalbody)
                for handler in node.handlers:
                    if handler.name:
                        names.add(handler.name)
                    visit(handler.body)
            elif isinstance(node, ast.Expr) and "globals" in _names(node):
                open_ended = True
            elif isinstance(node, TYPE_ALIAS):
                targets(node.name)

    visit(tree.body)
    return names, open_ended


def _names(node: ast.AST) -> set[str]:
    """The names and attribute names in ``node`` (``except (ImportError, x.Error)``)."""
    return {
        n.id if isinstance(n, ast.Name) else n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Name | ast.Attribute)
    }


def _optional(tree: ast.Module) -> set[int]:
    """Line numbers of imports inside a ``try`` that handles ImportError (optional ones)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try | ast.TryStar):
            caught = {n for h in node.handlers if h.type is not None for n in _names(h.type)}
            if (
                not node.handlers
                or caught & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
                or any(h.type is None for h in node.handlers)
            ):
                for sub in node.body:
                    lines.update(n.lineno for n in ast.walk(sub) if isinstance(n, ast.stmt))
    return lines


def imports_resolve(
    root: Path, files: list[str], only: set[str] | None = None
) -> CheckResult | None:
    """A failing CheckResult naming each import of the project's own modules that does
    not resolve; None when all do (files that do not parse are the compile check's).
    ``only``: the files whose imports are checked (all of them when None)."""
    modules = module_map(files)
    tops = {name.split(".")[0] for name in modules}
    trees: dict[str, ast.Module | None] = {}

    def tree_of(module: str) -> ast.Module | None:
        if module not in trees:
            if not modules[module]:  # a namespace package: its names are its submodules
                trees[module] = ast.Module(body=[], type_ignores=[])
                return trees[module]
            try:
                source = read_regular(root / modules[module], limit=MAX_MODULE_BYTES + 1)
                if len(source) > MAX_MODULE_BYTES:
                    raise ValueError("too big to read on the host")
                trees[module] = ast.parse(source)
            except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
                # too big or too deep for the host's parser: taken at its word, and its own
                # imports are left to the compile check, which runs in the sandbox
                trees[module] = None
        return trees[module]

    problems: list[str] = []
    for module, path in sorted(modules.items()):
        tree = tree_of(module) if path and (only is None or path in only) else None
        if tree is None:
            continue
        optional = _optional(tree)
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in optional:
                continue
            where = f"{path} line {getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in tops and alias.name not in modules:
                        problems.append(f"{where}: `import {alias.name}`: no module {alias.name}")
            elif isinstance(node, ast.ImportFrom):
                problems += _from_problems(node, package, modules, tops, tree_of, where)
    if not problems:
        return None
    more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
    return CheckResult(
        passed=False,
        summary=f"an import of the project's own code does not resolve: {problems[0]}",
        details="Each of these imports fails when its module is imported:\n"
        + "\n".join(problems[:SHOWN])
        + more,
    )


def _from_problems(node, package, modules, tops, tree_of, where) -> list[str]:
    if node.level:
        base = package.split(".") if package else []
        if node.level - 1 > len(base):
            return [f"{where}: a relative import goes above the project's packages"]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    if not target or target.split(".")[0] not in tops:
        return []
    shown = "." * node.level + (node.module or "")
    if target not in modules:
        return [f"{where}: `from {shown} import ...`: no module {target}"]
    tree = tree_of(target)
    if tree is None:
        return []
    bound, open_ended = _bound(tree)
    if open_ended:
        return []
    missing = [
        alias.name
        for alias in node.names
        if alias.name != "*" and alias.name not in bound and f"{target}.{alias.name}" not in modules
    ]
    return [
        f"{where}: `from {shown} import {name}`: {modules[target]} defines no {name}"
        for name in missing
    ]
