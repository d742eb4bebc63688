"""cadillac's own dependency installs: the one kind of command that runs with the network on.

Nothing the model wrote runs with the network. A project's dependencies are installed by
commands cadillac builds itself from the dependency files the plan declares, and each
is built so that no code from the project, nor from what it depends on, runs while the
network is on:

* ``requirements.txt``: every line must be a plain requirement (a name, extras, version
  specifiers, an environment marker); options (``-r``, ``-e``, ``--index-url`` ...), URLs
  and paths are refused with the line named. The requirements are installed as wheels
  only (``--only-binary=:all:``): a source distribution would run its build code.
* ``pyproject.toml``: ``[build-system].requires`` and ``[project].dependencies``, checked
  the same way, installed as wheels; then the project itself, installed editable with the
  network off (``--no-index --no-build-isolation``), since that runs its build backend.
* ``setup.py`` without a ``pyproject.toml``: the plan's dependencies as wheels, then the
  project with the network off.
* ``package.json``: ``npm ci`` (with a lock file) or ``npm install``, with
  ``--ignore-scripts`` so no install script runs.
* ``Cargo.toml``: ``cargo fetch`` (downloads crates; build scripts run only at build time,
  offline). ``go.mod``: ``go mod download``, from the module proxy only (``GOVCS=*:off``:
  go runs no version-control program, whatever ``GOPROXY`` says; ``GOTOOLCHAIN=local``:
  no toolchain a ``go.mod`` names is fetched). Their caches live in the project folder.

Nothing of the workspace may choose what these commands run or where they fetch from:

* every command finds its programs on the host's own ``PATH`` (:func:`trusted_path`),
  never in the workspace's ``.venv/bin`` that callers put first, so a planted
  ``.venv/bin/npm``, ``node``, ``git`` or ``cargo`` is not what runs with the network;
  pip is the project's ``.venv/bin/python`` named by its path, in isolated mode
  (``-I``), so a ``pip/`` folder in the project is not imported in place of pip (what
  is inside ``.venv`` is the caller's to make fresh: :mod:`phases.deps`);
* a project's own package-manager configuration (:data:`PROJECT_CONFIG`: ``.npmrc``,
  ``.cargo/config.toml``, ``.venv/pip.conf`` ...) is refused with its name, as options in
  a requirements file are: it could name another index, or a program to run (npm's
  ``git=``, cargo's credential providers).

:func:`install_steps` turns a project folder into these steps; the caller runs each in
the sandbox, with the network and the package managers' configuration only where a step
says so. Dependency files are read without following links (:mod:`orchestrator.sandbox.files`).
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.sandbox.files import read_text, remove_tree, what_is
from orchestrator.sandbox.registry_deps import (
    InstallError,
    check_cargo,
    check_go_mod,
    check_package_json,
    requirement,
)

DEPENDENCY_FILES = (
    "requirements.txt",
    "pyproject.toml",
    "setup.py",
    "package.json",
    "Cargo.toml",
    "go.mod",
)
PIP = ".venv/bin/python -I -m pip install --no-input --disable-pip-version-check"
WHEELS_ONLY = "--only-binary=:all:"
OFFLINE_PROJECT = f"{PIP} --no-deps --no-index --no-build-isolation -e ."
INSTALL_TIMEOUT_S = 900.0
PROJECT_CONFIG = (
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".cargo/config",
    ".cargo/config.toml",
    ".cargo-home/config",
    ".cargo-home/config.toml",
    ".venv/pip.conf",
    "pip.conf",
)
"""Package-manager configuration a project folder may not carry into an install."""
ENV_DIRS = (".venv", "node_modules", ".cargo-home", ".gopath", "target")
"""What installs and builds put in a project folder: re-made by the next install."""


@dataclass(frozen=True)
class InstallStep:
    """One command of an install: what it installs, whether it needs the network, and the
    install program whose settings (an index, a token) it alone gets with it."""

    what: str
    command: str
    network: bool
    tool: str = ""


def _requirements_file(path: Path) -> list[str]:
    out = []
    for n, raw in enumerate(read_text(path).splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            out.append(requirement(line, f"{path.name} line {n}"))
    return out


def _wheels(root: Path, what: str, requirements: Sequence[str]) -> list[InstallStep]:
    """pip, from a new empty folder of the sandbox's own ``/tmp``, installing the project's
    ``.venv`` by its absolute path: pip reads a requirement naming an existing file or
    folder of its working folder as that file (``evil-1.0.tar.gz`` is an archive to build,
    ``x.whl`` a wheel to install), so the workspace is never where it looks."""
    if not requirements:
        return []
    quoted = " ".join(shlex.quote(r) for r in requirements)
    python = shlex.quote(os.path.join(os.path.realpath(root), ".venv/bin/python"))
    pip = PIP.replace(".venv/bin/python", python, 1)
    command = f'cd "$(mktemp -d)" && {pip} {WHEELS_ONLY} {quoted}'
    return [InstallStep(what, command, network=True, tool="pip")]


def _project_step(version: str | None) -> InstallStep:
    """The offline editable install of the project itself; ``version`` (from the
    repository's tags, checked by :func:`pretend_version`) is what a build backend that
    reads its version from git gets instead, since the sandbox shows it no repository."""
    command = OFFLINE_PROJECT
    if version:
        quoted = shlex.quote(pretend_version(version))
        command = f"SETUPTOOLS_SCM_PRETEND_VERSION={quoted} {OFFLINE_PROJECT}"
    return InstallStep("the project itself", command, network=False)


PEP440 = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+[a-z0-9]+(\.[a-z0-9]+)*)?")


def pretend_version(version: str) -> str:
    """``version`` when it is a plain PEP 440 version; InstallError otherwise."""
    if not PEP440.fullmatch(version):
        raise InstallError(f"{version!r} is not a version cadillac gives a build backend")
    return version


def requirement_steps(
    root: Path, what: str, requirements: Sequence[str], where: str
) -> tuple[list[InstallStep], list[str]]:
    """Wheel installs of those ``requirements`` that are plain registry requirements (the
    project's test tools, a build backend's own requirements), and why each other one was
    left out. They are read from files the model may edit, so each is checked as a
    ``requirements.txt`` line is."""
    kept, refused = [], []
    for text in requirements:
        try:
            kept.append(requirement(text, where))
        except InstallError as exc:
            refused.append(str(exc))
    kept = list(dict.fromkeys(kept))
    prefix = f"PATH={shlex.quote(trusted_path(root))} "
    steps = [
        _issue(InstallStep(s.what, prefix + s.command, s.network, s.tool))
        for s in _wheels(root, what, kept)
    ]
    return steps, refused


def _pyproject(path: Path, version: str | None = None) -> list[InstallStep]:
    try:
        data = tomllib.loads(read_text(path))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InstallError(f"pyproject.toml is not valid TOML: {exc}") from None
    build = data.get("build-system", {}).get("requires", ["setuptools>=61", "wheel"])
    deps = data.get("project", {}).get("dependencies", [])
    if not isinstance(build, list) or not isinstance(deps, list):
        raise InstallError("pyproject.toml: requires and dependencies must be lists of strings")
    wanted = [requirement(str(r), "pyproject.toml [build-system] requires") for r in build]
    wanted += [requirement(str(r), "pyproject.toml [project] dependencies") for r in deps]
    steps = _wheels(path.parent, "pyproject.toml dependencies", wanted)
    if "project" in data or what_is(path.parent / "setup.py") is None:
        steps.append(_project_step(version))
    return steps


def project_env(root: Path) -> dict[str, str]:
    """What every command of a project gets: its own virtual environment and package caches."""
    return {
        "VIRTUAL_ENV": str(root / ".venv"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_CACHE_DIR": "1",
        "PIP_ROOT_USER_ACTION": "ignore",
        "CARGO_HOME": str(root / ".cargo-home"),
        "GOPATH": str(root / ".gopath"),
        "GOCACHE": str(root / ".gopath" / "build-cache"),  # kept from one command to the next
        "GOFLAGS": "-mod=mod",
        "GOVCS": "*:off",  # modules come from the module proxy: go never runs git or hg
        "GOTOOLCHAIN": "local",  # the go on the host's PATH, never one go.mod asks to fetch
    }


def remove_envs(root: Path) -> str:
    """Remove the folders of :data:`ENV_DIRS` from ``root``; "" or what was left behind.

    A benchmark build's environment is worth nothing once the build is scored, and at
    some 30 MB a build it is most of what a night of improve trials would keep on disk.
    """
    return "; ".join(filter(None, (remove_tree(root / name) for name in ENV_DIRS)))


def trusted_path(root: Path, path: str | None = None) -> str:
    """``path`` (default: the host's PATH) without a folder of ``root`` or a relative one."""
    real = Path(os.path.realpath(root))
    kept = []
    for entry in (os.environ.get("PATH", os.defpath) if path is None else path).split(":"):
        if not entry.startswith("/"):
            continue
        folder = Path(os.path.realpath(entry))
        if folder == real or folder.is_relative_to(real) or entry in kept:
            continue
        kept.append(entry)
    return ":".join(kept) or os.defpath


SUBFOLDER_FILES = ("package.json", "Cargo.toml", "go.mod")
"""What a sub-folder may declare (a full stack's ``frontend/package.json``); Python's
dependency files belong to the workspace's one ``.venv``, at the root."""


def install_steps(
    root: Path,
    declared: Sequence[str],
    plan_dependencies: Sequence[str] = (),
    folder: str = ".",
    version: str | None = None,
) -> list[InstallStep]:
    """The install commands for the dependency files of ``root`` that ``declared`` names.

    ``folder``: the sub-folder of ``root`` that holds them (``frontend``), each of whose
    parts must be a real folder, never a link the model made; its steps run there (``cd``),
    and it may hold only :data:`SUBFOLDER_FILES`. The package managers' own settings are
    refused in the folder and at the root alike. ``version``: the project's version from
    its repository's tags, given to the install of the project itself."""
    where = subfolder(root, folder)
    if folder != ".":
        python = [n for n in declared if Path(n).name not in SUBFOLDER_FILES]
        if python:
            raise InstallError(
                f"{folder}/{python[0]}: Python's dependency files are read at the workspace "
                "root only (its one .venv); move it there"
            )
    steps = _steps(where, declared, plan_dependencies, version)
    if steps:
        for base, shown in {(root, ""), (where, f"{folder}/" if folder != "." else "")}:
            for name in PROJECT_CONFIG:
                if what_is(base / name) != "nothing":
                    raise InstallError(
                        f"{shown}{name}: cadillac installs with the package managers' settings "
                        "of this machine only; remove the project's own configuration"
                    )
    prefix = f"PATH={shlex.quote(trusted_path(root))} "
    if folder != ".":
        prefix = f"cd {shlex.quote(folder)} && {prefix}"
    return [_issue(InstallStep(s.what, prefix + s.command, s.network, s.tool)) for s in steps]


def subfolder_files(root: Path, files: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The sub-folders ``files`` (a plan's) name that hold dependency files of their own (a
    full stack's ``frontend/package.json``), each with those files, shallowest first."""
    found: dict[str, list[str]] = {}
    for path in sorted(files, key=lambda p: (p.count("/"), p)):
        folder, _, name = path.replace("\\", "/").rpartition("/")
        if folder and name in SUBFOLDER_FILES and what_is(root / path) is None:
            found.setdefault(folder, []).append(name)
    return list(found.items())


def subfolder(root: Path, folder: str) -> Path:
    """``root / folder`` when every part of ``folder`` is a real folder inside ``root``
    (checked without following links); InstallError naming the part otherwise."""
    parts = Path(folder).parts if folder not in ("", ".") else ()
    if Path(folder).is_absolute() or ".." in parts:
        raise InstallError(f"{folder}: a dependency folder must be inside the workspace")
    where = root
    for part in parts:
        where = where / part
        found = what_is(where)
        if found != "a folder":
            shown = where.relative_to(root)
            raise InstallError(f"{shown} is {found or 'a file'}; it must be a real folder")
    return where


_ISSUED: weakref.WeakValueDictionary[int, InstallStep] = weakref.WeakValueDictionary()
"""The steps :func:`install_steps` handed out, by ``id``. Holding the very object (not an
equal one) is the grant: a forged ``InstallStep(...)`` or a ``dataclasses.replace`` of an
issued one is another object, never in here, so the executor refuses it. Weak, so a step
nobody holds any more is forgotten with it (and its id cannot be reused while it lives)."""


def _issue(step: InstallStep) -> InstallStep:
    _ISSUED[id(step)] = step
    return step


def check_issued(step: InstallStep, command: str) -> None:
    """Refuse (InstallError) a step cadillac did not issue, or a command that is not its own."""
    if _ISSUED.get(id(step)) is not step:
        raise InstallError(f"{step.what}: not an install step cadillac issued; refused")
    if command != step.command:
        raise InstallError(f"{step.what}: the command differs from the issued step's; refused")


def _steps(
    root: Path, declared: Sequence[str], plan_dependencies: Sequence[str], version: str | None
) -> list:
    names = {Path(p).as_posix() for p in declared}
    present = [n for n in DEPENDENCY_FILES if n in names and what_is(root / n) is None]
    steps: list[InstallStep] = []
    if "requirements.txt" in present:
        reqs = _requirements_file(root / "requirements.txt")
        steps += _wheels(root, "requirements.txt", reqs)
    if "pyproject.toml" in present:
        steps += _pyproject(root / "pyproject.toml", version)
    elif "setup.py" in present:
        reqs = [requirement(r, "plan.json dependencies") for r in plan_dependencies]
        steps += _wheels(root, "the plan's dependencies", reqs)
        steps.append(_project_step(version))
    if "package.json" in present:
        check_package_json(root)
        verb = "ci" if what_is(root / "package-lock.json") is None else "install"
        command = f"npm {verb} --ignore-scripts --no-audit --no-fund"
        steps.append(InstallStep("package.json", command, network=True, tool="npm"))
    if "Cargo.toml" in present:
        check_cargo(root)
        steps.append(InstallStep("Cargo.toml", "cargo fetch", network=True, tool="cargo"))
    if "go.mod" in present:
        check_go_mod(root)
        steps.append(InstallStep("go.mod", "go mod download", network=True, tool="go"))
    return steps
