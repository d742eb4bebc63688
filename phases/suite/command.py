"""Which command runs an existing project's tests, and what that command needs installed.

Both are read from the project's own configuration, on the host, without running any of
it (files are read without following links, each at most :data:`MAX_CONFIG_BYTES`):

* :func:`discover_test_command` finds the command the project's authors run. A project's
  primary stack decides first: a Python project (a ``pyproject.toml``, ``setup.py``,
  ``setup.cfg`` or ``requirements.txt`` at its root) is run by its own runner script
  (Django's ``tests/runtests.py``), else by pytest when anything configures pytest (its
  sections in ``pyproject.toml``, ``pytest.ini``, ``setup.cfg`` or ``tox.ini``, a
  ``conftest.py`` at the root or in a test folder: tomlkit configures pytest only in
  ``tests/conftest.py``, or test files that import pytest), else by ``make test``
  when its Makefile has that target, else by ``unittest discover``. A ``package.json``
  beside a Python project is its tooling (Django's eslint), not its tests. Then Node
  (``npm test``), Go, Rust and a Makefile. A user may give the command instead.
* :func:`needed_by_tests` lists what the tests need that the project's dependencies do not
  bring: the runner its configuration names (pytest, and the plugins its options call
  for: ``--cov`` is pytest-cov, ``-n`` pytest-xdist ...), and what the project declares
  for its tests: the test extras of ``[project.optional-dependencies]`` (``test``,
  ``tests``, ``testing``; ``dev`` when there is none of those), the same groups of
  ``[dependency-groups]`` (with their ``include-group`` entries), ``setup.cfg``'s
  ``extras_require``, ``tox.ini``'s ``deps``, ``noxfile.py``'s ``session.install(...)``
  strings and the usual test requirement files. cadillac installs them into the build's
  environment as its own tooling (:mod:`phases.deps`), never as part of the change;
  each is still checked as a plain registry requirement before it is installed.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.sandbox.files import UnsafeFile, read_regular, what_is
from phases.suite.inventory import SKIP_DIRS, find_test_files

MAX_CONFIG_BYTES = 1_000_000
PYTHON_MANIFESTS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")
RUNNER_SCRIPTS = ("tests/runtests.py", "runtests.py")
"""A project's own test runner, run as ``python <script>`` (Django's is the first)."""
TEST_FOLDERS = ("tests", "test", "testing")
TEST_GROUPS = ("test", "tests", "testing")
DEV_GROUPS = ("dev", "develop", "development")
REQUIREMENT_FILES = (
    "requirements-test.txt",
    "requirements_test.txt",
    "requirements-tests.txt",
    "requirements_tests.txt",
    "test-requirements.txt",
    "test_requirements.txt",
    "requirements-dev.txt",
    "requirements_dev.txt",
    "dev-requirements.txt",
    "requirements/test.txt",
    "requirements/tests.txt",
    "requirements/testing.txt",
    "requirements/dev.txt",
    "tests/requirements.txt",
    "tests/requirements/py3.txt",
)
"""Where projects keep what their tests need, besides their packaging metadata."""
PLUGINS = (
    (re.compile(r"(^|\s)--cov\b"), "pytest-cov"),
    (re.compile(r"(^|\s)(-n\s*\S|--numprocesses\b|--dist\b|-p\s*xdist\b)"), "pytest-xdist"),
    (re.compile(r"(^|\s)--timeout\b"), "pytest-timeout"),
    (re.compile(r"(^|\s)--benchmark"), "pytest-benchmark"),
    (re.compile(r"(^|\s)--reruns\b"), "pytest-rerunfailures"),
    (re.compile(r"(^|\s)(-p\s*randomly\b|--randomly)"), "pytest-randomly"),
    (re.compile(r"(^|\s)--hypothesis"), "hypothesis"),
    (re.compile(r"(^|\s)--html\b"), "pytest-html"),
)
"""A pytest option in ``addopts`` -> the plugin that gives it."""
PLUGIN_KEYS = {
    "timeout": "pytest-timeout",
    "asyncio_mode": "pytest-asyncio",
    "asyncio_default_fixture_loop_scope": "pytest-asyncio",
    "django_settings_module": "pytest-django",
    "env": "pytest-env",
    "mock_use_standalone_module": "pytest-mock",
}
"""A pytest configuration key (lower-cased) -> the plugin that reads it."""


@dataclass
class SuiteNeeds:
    """What the project's tests need installed, besides the project and its dependencies."""

    runner: list[str] = field(default_factory=list)
    """The runner and the plugins its configuration calls for (``pytest``, ``pytest-cov``)."""
    declared: list[str] = field(default_factory=list)
    """What the project declares for its tests, as written."""
    sources: list[str] = field(default_factory=list)
    """Where ``declared`` was read (``pyproject.toml [dependency-groups] test``)."""

    def all(self) -> list[str]:
        return list(dict.fromkeys([*self.runner, *self.declared]))


# ---------------------------------------------------------------------------- reading files
def _text(path: Path) -> str:
    if what_is(path) is not None:
        return ""
    try:
        return read_regular(path, MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except (UnsafeFile, OSError):
        return ""


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(_text(path))
    except (tomllib.TOMLDecodeError, ValueError):
        return {}


def _ini(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(_text(path))
    except (configparser.Error, ValueError):
        return configparser.ConfigParser(interpolation=None)
    return parser


def _strings(value) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _table(value) -> dict:
    return value if isinstance(value, dict) else {}


def _group(name: str) -> str:
    """A PEP 685 / PEP 735 name, normalised."""
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------------------- the command
def is_python(root: Path) -> bool:
    return any(what_is(root / name) is None for name in PYTHON_MANIFESTS)


def pytest_settings(root: Path) -> dict[str, str] | None:
    """The project's pytest configuration (key -> value as text), from the first place that
    holds one as pytest looks (``pytest.ini``, ``pyproject.toml``, ``tox.ini``,
    ``setup.cfg``); None when none does."""
    ini = _ini(root / "pytest.ini")
    if ini.has_section("pytest"):
        return dict(ini.items("pytest"))
    tool = _table(_toml(root / "pyproject.toml").get("tool"))
    pytest = _table(tool.get("pytest"))
    if pytest:
        options = _table(pytest.get("ini_options")) or pytest
        return {
            str(k): " ".join(map(str, v)) if isinstance(v, list) else str(v)
            for k, v in options.items()
            if k != "ini_options"
        }
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        parser = _ini(root / name)
        if parser.has_section(section):
            return dict(parser.items(section))
    return None


def conftests(root: Path) -> list[str]:
    """``conftest.py`` files at the root, in its test folders and a ``src/`` package's."""
    found = []
    for folder in ("", *TEST_FOLDERS, "src"):
        base = root / folder if folder else root
        if folder and what_is(base) != "a folder":
            continue
        if what_is(base / "conftest.py") is None:
            found.append(f"{folder}/conftest.py" if folder else "conftest.py")
    return found


def uses_pytest(root: Path) -> bool:
    """Whether anything of the project says its tests are pytest's."""
    if pytest_settings(root) is not None or conftests(root):
        return True
    for path in [p for p in find_test_files(root) if p.endswith(".py")][:200]:
        if re.search(r"^\s*(import pytest|from pytest\b)", _text(root / path), re.M):
            return True
    return False


def make_target(root: Path, target: str = "test") -> bool:
    text = _text(root / "Makefile") or _text(root / "makefile") or _text(root / "GNUmakefile")
    return re.search(rf"^{re.escape(target)}\s*:(?!=)", text, re.M) is not None


def discover_test_command(root: Path) -> str | None:
    """The command the project's authors run its tests with (see the module docstring);
    None when nothing says (the plan must then name one)."""
    python_tests = [p for p in find_test_files(root) if p.endswith(".py")]
    if is_python(root) or (python_tests and what_is(root / "package.json") is not None):
        command = _python_command(root, python_tests)
        if command:
            return command
    package = _text(root / "package.json")
    if '"test"' in package and '"scripts"' in package:
        return "npm test"
    if what_is(root / "go.mod") is None:
        return "go test ./..."
    if what_is(root / "Cargo.toml") is None:
        return "cargo test"
    if make_target(root):
        return "make test"
    return _python_command(root, python_tests)


def _python_command(root: Path, python_tests: list[str]) -> str | None:
    for script in RUNNER_SCRIPTS:
        if what_is(root / script) is None:
            return f"python {script}"
    if uses_pytest(root):
        return "python -m pytest -q"
    if make_target(root):
        return "make test"
    if python_tests:
        folders = {p.split("/", 1)[0] if "/" in p else "." for p in python_tests}
        start = next((f for f in TEST_FOLDERS if f in folders), ".")
        return f"python -m unittest discover -s {start}"
    return None


# ---------------------------------------------------------------------------- what it needs
def needed_by_tests(root: Path, command: str | None) -> SuiteNeeds:
    """What the project's tests need installed (see the module docstring)."""
    needs = SuiteNeeds()
    if not is_python(root) and not (command or "").startswith("python"):
        return needs
    settings = pytest_settings(root)
    if uses_pytest(root) or "pytest" in (command or ""):
        needs.runner.append("pytest")
        needs.runner += _plugins(settings or {})
    pyproject = _toml(root / "pyproject.toml")
    project = _table(pyproject.get("project"))
    name = _group(str(project.get("name", ""))) if project.get("name") else ""
    extras = {
        _group(k): _strings(v) for k, v in _table(project.get("optional-dependencies")).items()
    }
    for group in _chosen(extras):
        needs.declared += _expand(extras, extras[group], name)
        needs.sources.append(f"pyproject.toml [project.optional-dependencies] {group}")
    groups = {_group(k): v for k, v in _table(pyproject.get("dependency-groups")).items()}
    for group in _chosen(groups):
        needs.declared += _dependency_group(groups, group, name, extras)
        needs.sources.append(f"pyproject.toml [dependency-groups] {group}")
    cfg = _ini(root / "setup.cfg")
    if cfg.has_section("options.extras_require"):
        cfg_extras = {_group(k): _lines(v) for k, v in cfg.items("options.extras_require")}
        for group in _chosen(cfg_extras):
            needs.declared += cfg_extras[group]
            needs.sources.append(f"setup.cfg extras_require {group}")
    tox = _ini(root / "tox.ini")
    if tox.has_section("testenv") and tox.has_option("testenv", "deps"):
        needs.declared += _tox_deps(root, tox.get("testenv", "deps"))
        needs.sources.append("tox.ini [testenv] deps")
    nox = _nox(_text(root / "noxfile.py"))
    if nox:
        needs.declared += nox
        needs.sources.append("noxfile.py session.install")
    for path in REQUIREMENT_FILES:
        if what_is(root / path) is None:
            needs.declared += _requirements(root, path)
            needs.sources.append(path)
    needs.declared = [r for r in dict.fromkeys(needs.declared) if r and not _is(r, name)]
    return needs


def _plugins(settings: dict[str, str]) -> list[str]:
    found = []
    addopts = settings.get("addopts", "")
    for pattern, plugin in PLUGINS:
        if pattern.search(addopts):
            found.append(plugin)
    for key in settings:
        plugin = PLUGIN_KEYS.get(key.lower())
        if plugin:
            found.append(plugin)
    found += _lines(settings.get("required_plugins", "").replace(" ", "\n"))
    return list(dict.fromkeys(found))


def _chosen(groups: dict[str, list]) -> list[str]:
    tests = [g for g in TEST_GROUPS if g in groups]
    return tests or [g for g in DEV_GROUPS if g in groups]


def _requirement_name(text: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
    return _group(match.group(1)) if match else ""


def _is(requirement: str, name: str) -> bool:
    return bool(name) and _requirement_name(requirement) == name


def _expand(extras: dict[str, list[str]], wanted: list[str], name: str, depth: int = 0) -> list:
    """``wanted``, with a requirement of the project itself (``shapes[test]``) replaced by
    the extras it names."""
    out = []
    for requirement in wanted:
        if not _is(requirement, name):
            out.append(requirement)
            continue
        inner = re.search(r"\[([^\]]*)\]", requirement)
        for extra in inner.group(1).split(",") if inner and depth < 5 else []:
            out += _expand(extras, extras.get(_group(extra.strip()), []), name, depth + 1)
    return out


def _dependency_group(
    groups: dict, group: str, name: str, extras: dict, seen: frozenset = frozenset()
) -> list[str]:
    if group in seen or len(seen) > 10:
        return []
    out = []
    entries = groups.get(group)
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, str):
            out += _expand(extras, [entry], name)
        elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
            inner = _group(entry["include-group"])
            out += _dependency_group(groups, inner, name, extras, seen | {group})
    return out


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


TOX_FACTOR = re.compile(r"^([\w{},.-]+):\s*")
PYTHON_FACTOR = re.compile(r"^(py[\w{},.]*|[\d{},.]+)$")
"""A factor that names Python versions (``py311``, ``py{3,311}``, ``3.12``): the test
environments the project runs on; other factors (``postgres``, ``unidecode``) are
variants the default run does not need."""


def _tox_deps(root: Path, text: str) -> list[str]:
    """``[testenv] deps``: the unconditional lines and those of a Python-version factor."""
    out = []
    for line in _lines(text):
        factor = TOX_FACTOR.match(line)
        if factor and not PYTHON_FACTOR.match(factor.group(1)):
            continue
        line = TOX_FACTOR.sub("", line).split(" #", 1)[0].strip()
        if line.startswith("-r"):
            path = line[2:].strip()
            if path and not path.startswith("{"):
                out += _requirements(root, path)
        elif line and not line.startswith(("-", "{", ".")):
            out.append(line)
    return out


def _requirements(root: Path, path: str, depth: int = 0) -> list[str]:
    """A requirements file's plain lines (and those of the files it ``-r``\\ s), inside root
    and reached through real folders only: a folder the model replaced by a link to the
    host's would have the host read a file of its choosing, whose lines (a token) would be
    asked of the package index by the install that has the network."""
    parts = Path(path).parts
    if depth > 3 or Path(path).is_absolute() or ".." in parts:
        return []
    if any(part in SKIP_DIRS for part in parts):
        return []
    if any(what_is(root.joinpath(*parts[: n + 1])) != "a folder" for n in range(len(parts) - 1)):
        return []
    out = []
    folder = Path(path).parent
    for raw in _text(root / path).splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line.startswith(("-r", "--requirement")):
            inner = line.split(None, 1)[1] if " " in line else line[2:]
            out += _requirements(root, str(folder / inner.strip()), depth + 1)
        elif line and not line.startswith(("#", "-", ".")):
            out.append(line)
    return out


def _nox(source: str) -> list[str]:
    """The string arguments of ``session.install(...)`` calls in a noxfile that read as
    requirements (``"."``, ``"-e"``, ``"-r"`` and the file after it are left out)."""
    if not source or "install" not in source:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out = []
    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        if isinstance(node, ast.Call) and getattr(func, "attr", None) == "install":
            words = [a.value for a in node.args if isinstance(a, ast.Constant)]
            words = [w for w in words if isinstance(w, str)]
            skip = False
            for word in words:
                if skip or word.startswith((".", "-")):
                    skip = word in ("-r", "--requirement", "-c", "--constraint", "-e")
                    continue
                out.append(word)
    return out
