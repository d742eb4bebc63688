"""What a project's manifests and README say: its name, entry points, commands, test tools.

Read once, when the file is indexed, into the file's :class:`Facts`, so the digest is
built from records. Each reader takes what a person would look for:

* ``README*``: the title (first line) and the command lines of its code blocks (shell
  blocks, or untagged ones, whose lines start with a known tool or ``./``);
* ``Makefile``: its targets, as ``make <target>``;
* ``pyproject.toml``: ``[project.scripts]`` (and Poetry's), ``[tool.pytest.ini_options]``;
* ``package.json``: ``scripts`` (as ``npm run ...``), ``bin``, ``main``, the test tool
  among the dependencies;
* ``go.mod``: the module path; ``Cargo.toml``: the crate name and its ``[[bin]]`` targets.

A manifest that does not parse gives no facts, never an error.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable

from orchestrator.index import paths
from orchestrator.index.nodes import one_line
from orchestrator.index.records import Facts

MAX_COMMANDS = 24
SHELL_BLOCKS = frozenset({"", "sh", "bash", "shell", "console", "zsh", "terminal", "shell-session"})
TOOLS = frozenset(
    """
    make python python3 py pip pip3 pipx uv uvx poetry pdm hatch pytest tox nox ruff mypy
    black flake8 npm npx pnpm yarn node bun deno tsc jest vitest go cargo rustc rustup
    docker docker-compose podman kubectl git bash sh just cmake ctest mvn gradle ./gradlew
    java ruby bundle rake gem lua luarocks cadillac pre-commit sphinx-build mkdocs flask
    uvicorn gunicorn django-admin alembic streamlit
    """.split()
)
JS_FRAMEWORKS = ("vitest", "jest", "mocha", "ava", "jasmine", "@playwright/test", "cypress")
_MAKE_TARGET = re.compile(
    r"^([A-Za-z0-9_][A-Za-z0-9_./-]*(?:\s+[A-Za-z0-9_][\w./-]*)*)\s*:(?![=:])"
)
_TRAILING_COMMENT = re.compile(r"\s+#\s")
_FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+-]*)")


def facts_for(path: str, data: bytes) -> Facts | None:
    """The facts of a manifest or README, or None for any other file."""
    name = paths.name(path)
    reader = READERS.get(name) or READERS.get(name.lower())
    if reader is None and name.lower().startswith("readme"):
        reader = _readme
    if reader is None:
        return None
    try:
        facts = reader(data.decode("utf-8", "replace"))
    except (ValueError, TypeError, AttributeError, KeyError):  # tomllib/json errors are ValueErrors
        return None
    facts.commands = list(dict.fromkeys(facts.commands))[:MAX_COMMANDS]
    return facts


def readme_title(text: str) -> str:
    """The README's first line that says something, without markup."""
    for line in text.splitlines():
        cleaned = line.strip().lstrip("#").strip().strip("=").strip()
        if cleaned and not cleaned.startswith(("<", "[![", "![")):
            return one_line(cleaned, 160)
    return ""


def _readme(text: str) -> Facts:
    commands, fence, tag = [], None, ""
    for line in text.splitlines():
        opening = _FENCE.match(line)
        if opening is not None:
            if fence is None:
                fence, tag = opening.group(1), opening.group(2).lower()
            elif opening.group(1) == fence and not opening.group(2):
                fence = None
            continue
        if fence is not None and tag in SHELL_BLOCKS and (command := _command(line)):
            commands.append(command)
    return Facts(commands=commands)


def _command(line: str) -> str:
    """The command on a code line (no prompt, no trailing comment), or ""."""
    stripped = line.strip().removeprefix("$ ").strip()
    comment = _TRAILING_COMMENT.search(stripped)
    if comment is not None and stripped[: comment.start()].count('"') % 2 == 0:
        stripped = stripped[: comment.start()]
    first = stripped.split(" ", 1)[0] if stripped else ""
    if first in TOOLS or first.startswith("./"):
        return one_line(stripped, 120)
    return ""


def _makefile(text: str) -> Facts:
    targets = []
    for line in text.splitlines():
        match = _MAKE_TARGET.match(line)
        if match is None:
            continue
        for target in match.group(1).split():
            if not target.startswith(".") and "%" not in target and "/" not in target:
                targets.append(f"make {target}")
    return Facts(commands=targets)


def _pyproject(text: str) -> Facts:
    data = tomllib.loads(text)
    project = data.get("project", {})
    tool = data.get("tool", {})
    scripts = {**project.get("scripts", {}), **project.get("gui-scripts", {})}
    scripts |= tool.get("poetry", {}).get("scripts", {})
    facts = Facts(
        name=str(project.get("name") or tool.get("poetry", {}).get("name") or ""),
        entries=[f"{k} -> {v}" for k, v in scripts.items()],
        commands=list(scripts),
    )
    deps = json.dumps(
        [
            project.get("dependencies"),
            project.get("optional-dependencies"),
            data.get("dependency-groups"),
        ]
    )
    if "pytest" in tool or "pytest" in deps:
        facts.frameworks.append("pytest")
        options = tool.get("pytest", {}).get("ini_options", {})
        where = options.get("testpaths") if isinstance(options, dict) else None
        facts.commands.append("pytest" + (" " + " ".join(map(str, where)) if where else ""))
    return facts


def _package_json(text: str) -> Facts:
    data = json.loads(text)
    name = str(data.get("name") or "")
    scripts = data.get("scripts") or {}
    commands = [
        f"npm {k}" if k in ("test", "start") else f"npm run {k}"
        for k in scripts
        if isinstance(k, str)
    ]
    bins = data.get("bin") or {}
    if isinstance(bins, str):
        bins = {name or "bin": bins}
    entries = [f"{k} -> {v}" for k, v in bins.items()]
    if isinstance(data.get("main"), str):
        entries.append(f"main -> {data['main']}")
    deps = {**(data.get("dependencies") or {}), **(data.get("devDependencies") or {})}
    frameworks = [f for f in JS_FRAMEWORKS if f in deps]
    return Facts(name=name, entries=entries, commands=commands, frameworks=frameworks)


def _go_mod(text: str) -> Facts:
    match = re.search(r"^\s*module\s+(\S+)", text, re.M)
    return Facts(name=match.group(1).strip('"') if match else "")


def _cargo(text: str) -> Facts:
    data = tomllib.loads(text)
    name = str(data.get("package", {}).get("name") or "")
    bins = data.get("bin") or []
    entries = [f"{b.get('name', name)} -> {b.get('path', 'src/main.rs')}" for b in bins]
    return Facts(name=name, entries=entries, frameworks=["cargo test"] if name else [])


READERS: dict[str, Callable[[str], Facts]] = {
    "Makefile": _makefile,
    "makefile": _makefile,
    "GNUmakefile": _makefile,
    "pyproject.toml": _pyproject,
    "package.json": _package_json,
    "go.mod": _go_mod,
    "Cargo.toml": _cargo,
}
