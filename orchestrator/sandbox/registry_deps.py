"""What a dependency file may name: versions from a package registry, and nothing else.

A dependency named as a path, an archive, a URL, a git repository or another registry
would have an install program, with the network on, fetch from a host the model chose,
or read and build a file of the workspace. So every entry of the dependency files
cadillac installs from is checked here before anything runs, and one that is not a
registry version is refused with its file and entry named (the message is for the
model, and lands in the deps check's output and the run's record):

* **Python requirements** (``requirements.txt``, ``pyproject.toml``, the plan's list):
  a PEP 508 ``name[extras] specifier; marker``, parsed with
  :class:`packaging.requirements.Requirement`. Refused: options (``-r``, ``-c``, ``-e``,
  ``--index-url``, ``-f`` ...), direct references (``name @ URL``), and any name pip would
  read as a path or an archive: one with ``/`` or ``\\``, or ending like an archive or a
  wheel (``.tar.gz``, ``.zip``, ``.whl`` ...; pip turns such a name into a file URL even
  when no such file exists).
* **npm** (``package.json``, ``package-lock.json``): every spec of ``dependencies``,
  ``devDependencies``, ``optionalDependencies``, ``peerDependencies`` and ``overrides``
  is a semver range or a dist-tag (or an ``npm:name@range`` alias of one); URLs, git and
  GitHub shorthands (``user/repo``), ``file:``, ``link:`` and paths are refused, and so are
  ``workspaces``. Every ``resolved`` of the lock file is on an allowed registry
  (:func:`npm_registries`), and no entry is a ``link``.
* **Cargo** (``Cargo.toml``, ``Cargo.lock``): no dependency names ``git``, ``path``,
  ``registry`` or ``registry-index``; no ``[patch]`` or ``[replace]``; every ``source`` of
  the lock file is crates.io.
* **Go** (``go.mod``): no ``replace`` points at a folder outside the project.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement

from orchestrator.sandbox.files import read_text, what_is


class InstallError(Exception):
    """A dependency file cadillac will not install from; the message is for the model."""


ARCHIVE_SUFFIXES = (
    ".zip",
    ".whl",
    ".tar",
    ".tar.gz",
    ".tgz",
    ".tar.bz2",
    ".tbz",
    ".tar.xz",
    ".txz",
    ".tlz",
    ".tar.lz",
    ".tar.lzma",
    ".egg",
)
"""What pip takes a requirement name for a file by (its archive extensions, and eggs)."""


def requirement(text: str, where: str) -> str:
    """``text`` as a plain PEP 508 requirement, or an InstallError naming ``where``."""
    line = text.strip()
    if line.startswith("-"):
        raise InstallError(
            f"{where}: {line!r} is an option; cadillac installs plain requirements only "
            "(name, extras, version specifiers), from the index this machine is set up for"
        )
    try:
        req = Requirement(line)
    except InvalidRequirement as exc:
        raise InstallError(f"{where}: {line!r} is not a requirement ({exc})") from None
    if req.url or "@" in line.split(";", 1)[0]:
        raise InstallError(
            f"{where}: {line!r} names a URL or path; only requirements from the package "
            "index are installed"
        )
    name = req.name.lower()
    if "/" in line or "\\" in line or name.endswith(ARCHIVE_SUFFIXES):
        raise InstallError(
            f"{where}: {line!r} reads as a file or an archive; name a package of the "
            "index (name, extras, version specifiers)"
        )
    return str(req)


# ---------------------------------------------------------------------------- npm
NPM_SECTIONS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies")
NPM_RANGE = re.compile(r"[A-Za-z0-9 .*+^~<>=|_-]*")
"""A semver range or a dist-tag: no ``/`` (a path, ``user/repo``), no ``:`` (a URL,
``git+``, ``file:``, ``link:``, ``github:``), no ``#`` or ``@``."""
NPM_NAME = re.compile(r"(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9._~-][a-z0-9._~-]*")
DEFAULT_NPM_REGISTRY = "https://registry.npmjs.org/"


def npm_spec(spec: object, where: str) -> None:
    """Refuse an npm dependency spec that is not a registry version (InstallError)."""
    if not isinstance(spec, str):
        raise InstallError(f"{where}: {spec!r} is not a version string")
    text = spec.strip()
    if text.startswith("npm:"):
        rest = text[4:]
        at = rest.rfind("@")
        name, version = (rest[:at], rest[at + 1 :]) if at > 0 else (rest, "")
        if NPM_NAME.fullmatch(name) and NPM_RANGE.fullmatch(version):
            return
    elif NPM_RANGE.fullmatch(text) and not text.startswith("."):
        return
    raise InstallError(
        f"{where}: {spec!r} is not a registry version; name a version or range from the npm "
        "registry (URLs, git, user/repo, file:, link: and paths are refused)"
    )


def _overrides(value: object, where: str) -> Iterator[tuple[str, object]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(inner, dict):
                yield from _overrides(inner, f"{where}.{key}")
            else:
                yield f"{where}.{key}", inner
    elif value is not None:
        yield where, value


def npm_registries(env: dict[str, str] | None = None, home: Path | None = None) -> list[str]:
    """The registries a lock file's ``resolved`` may point at: npm's default, and the one
    the machine is set up for (``NPM_CONFIG_REGISTRY``, ``registry=`` of the user's or the
    system's ``npmrc``)."""
    env = dict(os.environ if env is None else env)
    found = [DEFAULT_NPM_REGISTRY]
    for name in ("NPM_CONFIG_REGISTRY", "npm_config_registry"):
        if env.get(name):
            found.append(env[name])
    home = home or Path(env.get("HOME") or os.path.expanduser("~"))
    for rc in (home / ".npmrc", Path("/etc/npmrc"), Path("/usr/etc/npmrc")):
        try:
            lines = rc.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            key, sep, value = line.partition("=")
            if sep and key.strip() == "registry" and value.strip():
                found.append(value.strip())
    return [url if url.endswith("/") else url + "/" for url in found]


def check_package_json(root: Path) -> None:
    """Refuse a ``package.json`` (and its ``package-lock.json``) naming anything but
    registry versions (InstallError, naming the entry)."""
    data = _json(root / "package.json")
    for section in NPM_SECTIONS:
        deps = data.get(section) or {}
        if not isinstance(deps, dict):
            raise InstallError(f"package.json: {section} must map names to versions")
        for name, spec in deps.items():
            npm_spec(spec, f"package.json {section} {name!r}")
    for where, spec in _overrides(data.get("overrides"), "package.json overrides"):
        npm_spec(spec, where)
    if data.get("workspaces"):
        raise InstallError(
            "package.json: workspaces are not installed; cadillac installs one package's "
            "registry dependencies"
        )
    if what_is(root / "package-lock.json") is None:
        _check_lock(_json(root / "package-lock.json"), npm_registries())


def _check_lock(lock: dict, registries: list[str]) -> None:
    entries: list[tuple[str, dict]] = []
    packages = lock.get("packages") or {}
    if isinstance(packages, dict):
        entries += [(f"packages {k!r}", v) for k, v in packages.items() if isinstance(v, dict)]

    def walk(deps: object, where: str) -> None:  # lockfileVersion 1's nested dependencies
        if isinstance(deps, dict):
            for name, entry in deps.items():
                if isinstance(entry, dict):
                    entries.append((f"{where} {name!r}", entry))
                    walk(entry.get("dependencies"), f"{where} {name!r} dependencies")

    walk(lock.get("dependencies"), "dependencies")
    for where, entry in entries:
        if entry.get("link"):
            raise InstallError(f"package-lock.json {where}: a link is not a registry version")
        resolved = entry.get("resolved")
        if resolved is not None and not (
            isinstance(resolved, str) and any(_on(resolved, r) for r in registries)
        ):
            raise InstallError(
                f"package-lock.json {where}: resolved {resolved!r} is not on the npm registry "
                f"this machine uses ({', '.join(registries)}); remove the lock file or fix it"
            )
        for section in NPM_SECTIONS:  # the root entry repeats package.json's
            for name, spec in (entry.get(section) or {}).items():
                npm_spec(spec, f"package-lock.json {where} {section} {name!r}")


def _on(url: str, registry: str) -> bool:
    got, want = urlsplit(url), urlsplit(registry)
    return (
        got.scheme == want.scheme
        and got.scheme in ("https", "http")
        and got.netloc == want.netloc
        and got.path.startswith(want.path)
        and ".." not in PurePosixPath(got.path).parts
    )


def _json(path: Path) -> dict:
    try:
        data = json.loads(read_text(path))
    except ValueError as exc:
        raise InstallError(f"{path.name} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path.name} must hold a JSON object")
    return data


# ---------------------------------------------------------------------------- cargo
CARGO_SECTIONS = ("dependencies", "dev-dependencies", "build-dependencies")
CARGO_REFUSED = ("path", "registry", "registry-index", "g" + "it")
"""Dependency keys that name a source other than crates.io (git spelled so the one-runner
check, which looks for the program's name, finds none here)."""
CRATES_IO = (
    "registry+https://github.com/rust-lang/crates.io-index",
    "sparse+https://index.crates.io/",
)


def _cargo_tables(data: dict) -> Iterator[tuple[str, object]]:
    for section in CARGO_SECTIONS:
        yield section, data.get(section)
    for target, table in (data.get("target") or {}).items():
        if isinstance(table, dict):
            for section in CARGO_SECTIONS:
                yield f"target.{target}.{section}", table.get(section)
    workspace = data.get("workspace") or {}
    if isinstance(workspace, dict):
        yield "workspace.dependencies", workspace.get("dependencies")


def check_cargo(root: Path) -> None:
    """Refuse a ``Cargo.toml`` (and its ``Cargo.lock``) with a dependency from anywhere but
    crates.io (InstallError, naming the dependency)."""
    data = _toml(root / "Cargo.toml")
    for section in ("patch", "replace"):
        if data.get(section):
            raise InstallError(
                f"Cargo.toml: [{section}] is refused; dependencies come from crates.io only"
            )
    for section, deps in _cargo_tables(data):
        if deps is None:
            continue
        if not isinstance(deps, dict):
            raise InstallError(f"Cargo.toml: [{section}] must be a table")
        for name, spec in deps.items():
            bad = [k for k in CARGO_REFUSED if isinstance(spec, dict) and k in spec]
            if bad:
                raise InstallError(
                    f"Cargo.toml [{section}] {name}: {bad[0]} = {spec[bad[0]]!r} is refused; "
                    "name a version from crates.io"
                )
    if what_is(root / "Cargo.lock") is None:
        for package in _toml(root / "Cargo.lock").get("package") or []:
            source = package.get("source") if isinstance(package, dict) else None
            if source is not None and source not in CRATES_IO:
                name = package.get("name")
                raise InstallError(
                    f"Cargo.lock package {name!r}: source {source!r} is not crates.io; remove "
                    "the lock file or fix it"
                )


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(f"{path.name} is not valid TOML: {exc}") from None


# ---------------------------------------------------------------------------- go
def check_go_mod(root: Path) -> None:
    """Refuse a ``go.mod`` whose ``replace`` points at a folder outside the project."""
    text = read_text(root / "go.mod")
    block = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//", 1)[0].strip()
        if block and line == ")":
            block = False
            continue
        if line.startswith("replace") and line[7:].strip() == "(":
            block = True
            continue
        if not (block or line.startswith("replace ") or line.startswith("replace\t")):
            continue
        _, arrow, target = line.partition("=>")
        words = target.split()
        if not arrow or not words:
            continue
        where = words[0].strip('"`')
        if not (where.startswith(("/", "./", "../")) or where in (".", "..")):
            continue  # another module, fetched from the module proxy
        inside = Path(os.path.normpath(root / where))  # the words, never a link, decide
        if where.startswith("/") or not inside.is_relative_to(root):
            raise InstallError(
                f"go.mod line {n}: replace => {where!r} points outside the project; replace "
                "with a module version, or a folder inside the project"
            )
