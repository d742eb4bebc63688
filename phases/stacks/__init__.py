"""Stack profiles: what "the code is right" means in each stack a plan can name.

What this package decides, and why:

* **A profile per stack**, one module each: :mod:`~phases.stacks.python`,
  :mod:`~phases.stacks.node` (JavaScript or TypeScript), :mod:`~phases.stacks.web` (a
  React/Vite front end), :mod:`~phases.stacks.go` and :mod:`~phases.stacks.rust`. A full
  stack project is a back-end profile at the root with a web profile in ``frontend/``.
  Each profile follows the :class:`Stack` protocol. It says where it applies (the
  folders that hold its manifest), how its code is checked there, and how its artifact
  is built and then run or served.
* **The plan chooses.** :func:`stacks_of` reads the plan's ``stack`` tags and its
  ``files``. A ``go.mod`` makes a Go project, a ``Cargo.toml`` a Rust one, and a
  ``package.json`` with a React or Vite dependency (or a ``react``/``vite`` tag) a web
  front end in that folder. Any other ``package.json`` is Node. Python files, or a
  Python manifest, make the project Python. No Python check runs on a Go project, and a
  Python back end with a ``frontend/`` gets both profiles, each in its own folder.
  An existing project's root manifests count too, and name its primary stack: a Python
  project's ``package.json`` beside its ``pyproject.toml`` is tooling (Django's eslint),
  so no ``tsc`` or ``npm run build`` runs on it unless the plan's tags name a JS stack.
* **Checks are the toolchains' own**, run in the build's sandbox. Python: every module
  compiles, and every import between the project's own modules resolves, checked
  statically. TypeScript: ``tsc --noEmit`` where there is a ``tsconfig.json``. Go:
  ``go vet ./...`` then ``go build ./...``. Rust: ``cargo build --offline``. A web front
  end: ``npm run build``. The first failure fails the check, with the toolchain's output.
* **The artifact is what a user runs**, built as they would build it
  (:func:`build_artifacts`, before the stories drive it at integrate and validate): a web
  front end's ``npm run build`` (the page in its ``dist/``), a Go main package's ``go build
  -o bin/NAME .`` (NAME: the module path's last element, as go names it; ``go build ./...``
  for a module with no main package at its root), a Rust crate's ``cargo build --offline``
  (its binaries in ``target/debug/``). Python and Node code is run as it is: no artifact.
  Each profile's :attr:`Stack.serves` says what comes out and how it is run, and
  :meth:`Stack.artifact_path` where it is.
* **A run of 0 tests is not a pass.** :func:`ran_tests` reads the summary line of the
  runners it knows (pytest, unittest, node's test runner, jest, vitest, go test, cargo
  test). When that line says nothing ran, the test command fails, even though it exited 0.

This package imports nothing of cadillac's but the sandbox layer, as :mod:`phases` does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from orchestrator.sandbox.files import what_is
from phases.base import CheckResult, PhaseContext, Plan, command_failed


class Stack(Protocol):
    """One stack's profile, applied in one folder of the project."""

    name: str
    """``python``, ``node``, ``web``, ``go``, ``rust``."""
    root: str
    """The folder it applies in, relative to the workspace (``.`` or ``frontend``)."""
    guide: str
    """What a phase is told of the stack: how its dependencies, checks and tests go."""

    serves: str
    """What its artifact is and how a user runs or serves it; "" when there is none (the
    code is run as it is)."""

    def check_code(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        """The code compiles (and type-checks) here; a failing CheckResult or None."""
        ...

    def artifact(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        """Build what a user runs (:attr:`serves`); a failing CheckResult or None."""
        ...

    def artifact_path(self, workspace: Path) -> str:
        """Where :meth:`artifact` puts it, relative to the workspace; "" for none."""
        ...


def _folder(path: str) -> str:
    head, _, _ = path.rpartition("/")
    return head or "."


FRONT_END_FOLDERS = ("frontend", "web", "client")
"""A ``package.json`` in one of these is a front end's, whatever it depends on."""
PYTHON_MANIFESTS = ("requirements.txt", "pyproject.toml", "setup.py")


JS_TAGS = frozenset(
    {"node", "nodejs", "javascript", "js", "typescript", "ts", "react", "vite", "web", "npm"}
)
"""Plan tags that make an existing Python project's root ``package.json`` a stack of its own."""
ROOT_MANIFESTS = (*PYTHON_MANIFESTS, "setup.cfg", "go.mod", "Cargo.toml", "package.json")
"""The manifests at an existing project's root that say what it is, whatever the plan lists."""


def stacks_of(ctx: PhaseContext, plan: Plan) -> list[Stack]:
    """The profiles the plan's stack and files choose, each with the folder it applies in."""
    existing = ctx.baseline is not None or ctx.changed is not None
    return stacks_in(ctx.workspace.root, plan, existing)


def stacks_in(workspace: Path, plan: Plan, existing: bool = False) -> list[Stack]:
    """:func:`stacks_of` for the workspace at ``workspace``. For an ``existing`` project
    the manifests at its root count as well as the plan's files (a plan may list only
    what it changes), and when one of them is Python's the project is Python: a
    ``package.json`` beside it is its tooling (Django's eslint and QUnit), checked as
    Node or a front end only when the plan's stack tags name one (:data:`JS_TAGS`)."""
    from phases.stacks import go, node, python, rust, web

    files = [f.replace("\\", "/").removeprefix("./") for f in plan.files]
    tags = {t.lower() for t in plan.stack}
    if existing:
        files += [n for n in ROOT_MANIFESTS if what_is(workspace / n) is None]
    python_root = existing and any(f in (*PYTHON_MANIFESTS, "setup.cfg") for f in files)
    found: list[Stack] = []
    for path in sorted(set(files), key=lambda p: (p.count("/"), p)):
        name, root = path.rsplit("/", 1)[-1], _folder(path)
        if name == "package.json" and root == "." and python_root and not tags & JS_TAGS:
            continue  # an existing Python project's JS tooling
        if name == "go.mod":
            found.append(go.GoStack(root))
        elif name == "Cargo.toml":
            found.append(rust.RustStack(root))
        elif name == "package.json":
            web_here = web.is_web(workspace, root) or root in FRONT_END_FOLDERS
            found.append(web.WebStack(root) if web_here else node.NodeStack(root))
    python_files = [f for f in files if f.endswith(".py")]
    manifests = [f for f in files if f.rsplit("/", 1)[-1] in PYTHON_MANIFESTS]
    if python_files or manifests or python_root or ("python" in tags and not found):
        found.insert(0, python.PythonStack("."))
    return found


def check_code(ctx: PhaseContext, plan: Plan) -> CheckResult | None:
    """Every profile's code check, in order; the first failure, or None."""
    for stack in stacks_of(ctx, plan):
        failed = stack.check_code(ctx, plan)
        if failed is not None:
            return failed
    return None


def build_artifacts(ctx: PhaseContext, plan: Plan) -> CheckResult | None:
    """Every profile's artifact, built in order (a full stack's back end, then its front
    end); the first failure, or None."""
    for stack in stacks_of(ctx, plan):
        failed = stack.artifact(ctx, plan)
        if failed is not None:
            return failed
    return None


def guide(workspace: Path, plan: Plan, existing: bool = False) -> str:
    """What the phases are told of the plan's stacks, one paragraph each with its folder
    (``existing``: the build changes a project that exists, see :func:`stacks_in`)."""
    found = stacks_in(workspace, plan, existing)
    if not found:
        return ""
    lines = [f"- {s.guide}" + ("" if s.root == "." else f" (in {s.root}/)") for s in found]
    return "The plan's stacks, and how cadillac checks them:\n" + "\n".join(lines)


def describe(ctx: PhaseContext, plan: Plan) -> str:
    """The profiles in a few words: ``python (.), web (frontend)``."""
    return ", ".join(f"{s.name} ({s.root})" for s in stacks_of(ctx, plan)) or "none"


# ------------------------------------------------------------------- counting tests
PYTEST = re.compile(r"^=+ (.*?) in [\d.]+s(?: \([\d:]+\))? =+$", re.M)
PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|xfailed|xpassed)")
COUNTS = (
    re.compile(r"^Ran (\d+) tests? in ", re.M),  # unittest
    re.compile(r"^(?:# |ℹ )tests (\d+)$", re.M),  # node --test (TAP, or its spec reporter)
    re.compile(r"^Tests:\s+.*?(\d+) total$", re.M),  # jest
    re.compile(r"^\s*Tests\s+(?:.*?\|\s*)?(\d+)\s+passed", re.M),  # vitest
)
NOTHING_RAN = re.compile(r"^=+ no tests ran|^NO TESTS RAN|No tests found|No test files found", re.M)
CARGO = re.compile(r"^running (\d+) tests?$", re.M)
GO = re.compile(r"^(ok|FAIL|\?)\s+\S+(.*)$", re.M)


def ran_tests(output: str) -> int | None:
    """How many tests the runner's output says ran (skipped ones are not run); None when
    no runner this knows said."""
    summary = PYTEST.findall(output)
    if summary:
        return sum(int(n) for n, _ in PYTEST_COUNT.findall(summary[-1]))
    if CARGO.search(output) and "test result:" in output:
        return sum(int(n) for n in CARGO.findall(output))  # one line per test binary
    counts = [int(m.group(1)) for pattern in COUNTS for m in pattern.finditer(output)]
    if counts:
        return max(counts)
    if NOTHING_RAN.search(output):
        return 0
    packages = GO.findall(output)
    if packages:  # go test: "?" is "[no test files]"; "[no tests to run]" ran none either
        return sum(1 for status, rest in packages if status != "?" and "tests to run" not in rest)
    return None


def run_tests(
    ctx: PhaseContext, command: str, what: str = "the test command"
) -> CheckResult | None:
    """Run a test command; a failing CheckResult when it fails or runs no test, else None."""
    result = ctx.run(command, timeout_s=600)
    if not result.ok:
        return command_failed(f"{what} `{command}`", result)
    return no_tests(command, result.output)


def no_tests(command: str, output: str) -> CheckResult | None:
    """A failing CheckResult when the test command's output says it ran no test."""
    if ran_tests(output) == 0:
        return CheckResult(
            passed=False,
            summary=f"the test command `{command}` ran 0 tests",
            details="A run of no tests proves nothing: write tests the command finds, "
            "or fix the command so it finds them.\n" + output[-2000:],
        )
    return None
