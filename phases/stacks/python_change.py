"""Python's code check on a change to an existing project: what the change touched, and
what the project's own configuration packages.

A user's project may hold files that were never meant to compile: Django ships test
fixtures with syntax errors on purpose (``tests/test_runner_apps/tagged/
tests_syntax_error.py``), so compiling every ``.py`` in the tree fails a build that
changed nothing there. A change is held to what it is responsible for:

* **what it touched** (:attr:`PhaseContext.changed`, read from git: files added or
  changed since the build's start, renames as their new name, untracked files; see
  :func:`orchestrator.loop.source.touched`): each ``.py`` among them compiles, and each
  of its imports of the project's own modules resolves (the static check of
  :func:`phases.stacks.python.imports_resolve`, reported for these files only: the
  user's own code is taken as it is). Files in test folders (:data:`TEST_FOLDERS`) are
  the suite's to judge, not this check's: a change may add a fixture that must not
  compile, as Django's do, and a test that imports a broken file fails when the suite
  runs. A touched link (a file or a folder) is compiled through, in the sandbox, so a
  module cannot hide behind a link: the host never follows it;
* **what the project's configuration packages** (:func:`configured_packages`): the
  folders its ``pyproject.toml`` names for its distribution (setuptools' ``packages`` or
  ``packages.find``, hatch's wheel ``packages``, poetry's ``packages``), else the folder
  named like the project (``[project] name``, or ``setup.cfg``'s), at the root or under
  ``src/``. These are compiled whole
  (``compileall``, in the sandbox, test folders left out): a module that a changed
  ignore rule or a link keeps out of git's sight is still in the package users import.

The configuration is read on the host with ``tomllib``, never through a link, and a
configuration that cannot be read packages nothing (the touched files are still
checked). A new project has no ``changed``: every module is the change, and
:class:`~phases.stacks.python.PythonStack` checks all of them.
"""

from __future__ import annotations

import configparser
import fnmatch
import re
import shlex
import tomllib
from pathlib import Path

from orchestrator.sandbox.files import UnsafeFile, read_regular, what_is
from phases.base import CheckResult, PhaseContext, python_compiles, run_step

TEST_FOLDERS = r"(^|/)(tests?|testing)/"
"""Folders inside a package that hold its tests (and their fixtures): not compiled whole."""
MAX_CONFIG_BYTES = 1_000_000


def check_change(ctx: PhaseContext, imports_resolve) -> CheckResult | None:
    """The check of the module docstring; a failing CheckResult or None."""
    assert ctx.changed is not None
    root = ctx.workspace.root
    touched = sorted(set(ctx.changed()))
    kinds = {path: what_is(root / path) for path in touched}
    tests = re.compile(TEST_FOLDERS)
    modules = [p for p in touched if p.endswith(".py") and kinds[p] is None and not tests.search(p)]
    links = [p for p in touched if kinds[p] == "a symbolic link"]
    failed = python_compiles(ctx, modules)
    if failed is None and links:
        failed = run_step(ctx, "compiling through links", _compileall(links), 600)
    packages = [p for p in configured_packages(root) if _folder(root, p)]
    if failed is None and packages:
        failed = run_step(ctx, "compiling the project's packages", _compileall(packages), 600)
    if failed is not None or not modules:
        return failed
    return imports_resolve(root, ctx.workspace.files(), only=set(modules))


def _compileall(paths: list[str]) -> str:
    """``compileall`` of ``paths`` in the sandbox (``./``: a name may begin with ``-``)."""
    quoted = " ".join(shlex.quote(p if p.startswith("./") else "./" + p) for p in paths)
    return f"python -m compileall -q -f -x {shlex.quote(TEST_FOLDERS)} {quoted}"


def configured_packages(root: Path) -> list[str]:
    """The folders (relative to ``root``) the project's configuration distributes."""
    config = _pyproject(root)
    tool = config.get("tool", {}) if isinstance(config.get("tool"), dict) else {}
    found = _setuptools(root, tool.get("setuptools")) + _hatch(tool) + _poetry(tool)
    if not found:
        project = config.get("project")
        name = project.get("name") if isinstance(project, dict) else None
        name = name if isinstance(name, str) else _setup_cfg_name(root)
        found = _named(root, name) if name else []
    safe = [f for f in found if _inside(f)]
    return sorted(set(safe))


def _pyproject(root: Path) -> dict:
    try:
        return tomllib.loads(read_regular(root / "pyproject.toml", MAX_CONFIG_BYTES).decode())
    except (OSError, UnsafeFile, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError):
        return {}


def _setup_cfg_name(root: Path) -> str | None:
    """``[metadata] name`` of ``setup.cfg`` (a setuptools project without ``[project]``)."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(read_regular(root / "setup.cfg", MAX_CONFIG_BYTES).decode())
    except (OSError, UnsafeFile, UnicodeDecodeError, configparser.Error, ValueError):
        return None
    return parser.get("metadata", "name", fallback=None)


def _inside(path: str) -> bool:
    return bool(path) and not Path(path).is_absolute() and ".." not in Path(path).parts


def _folder(root: Path, path: str) -> bool:
    """``path`` is a folder inside ``root``, reached through no link (the configuration
    is the model's to edit: the host must not list a folder a link points to)."""
    parts = Path(path).parts
    return all(
        what_is(root.joinpath(*parts[: n + 1])) == "a folder"
        for n in range(len(parts))
        if parts[n] != "."
    )


def _strings(value) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _setuptools(root: Path, config) -> list[str]:
    if not isinstance(config, dict):
        return []
    dirs = config.get("package-dir") if isinstance(config.get("package-dir"), dict) else {}
    base = dirs.get("", "") if isinstance(dirs.get("", ""), str) else ""
    packages = config.get("packages")
    if isinstance(packages, list):
        tops = {p.split(".")[0] for p in _strings(packages)}
        mapped = [dirs.get(top, top) for top in sorted(tops)]
        return [str(Path(base or ".") / m) for m in mapped if isinstance(m, str)]
    find = packages.get("find") if isinstance(packages, dict) else None
    if not isinstance(find, dict):
        return []
    include = _strings(find.get("include")) or ["*"]
    exclude = _strings(find.get("exclude"))
    found = []
    for where in _strings(find.get("where")) or [base or "."]:
        if not _inside(where) or not _folder(root, where):
            continue
        for entry in sorted((root / where).iterdir()):
            name = entry.name
            if (
                what_is(entry) == "a folder"
                and name.isidentifier()
                and any(fnmatch.fnmatchcase(name, pattern) for pattern in include)
                and not any(fnmatch.fnmatchcase(name, pattern) for pattern in exclude)
                and what_is(entry / "__init__.py") is None
            ):
                found.append(str(Path(where) / name))
    return found


def _hatch(tool: dict) -> list[str]:
    hatch = tool.get("hatch")
    for key in ("build", "targets", "wheel"):
        hatch = hatch.get(key) if isinstance(hatch, dict) else None
    return _strings(hatch.get("packages")) if isinstance(hatch, dict) else []


def _poetry(tool: dict) -> list[str]:
    poetry = tool.get("poetry")
    packages = poetry.get("packages") if isinstance(poetry, dict) else None
    found = []
    for entry in packages if isinstance(packages, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("include"), str):
            base = entry.get("from") if isinstance(entry.get("from"), str) else "."
            found.append(str(Path(base) / entry["include"]))
    return found


def _named(root: Path, name: str) -> list[str]:
    """The package named like the project (``python-slugify`` -> ``slugify`` too)."""
    wanted = re.sub(r"[-_.]+", "_", name).lower()
    candidates = {wanted, wanted.removeprefix("python_")}
    return [
        str(Path(base) / c)
        for base in (".", "src")
        for c in sorted(candidates)
        if c and what_is(root / base / c / "__init__.py") is None
    ]
