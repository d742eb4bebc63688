"""What a phase is: a name, a prompt file beside it, and a deterministic check.

The agent loop (:mod:`orchestrator.loop.agent`) knows phases only through the
:class:`Phase` protocol. A phase's prompt is data — ``phases/<name>.md`` —
so people and the improve cycle can change it without touching control flow.
Its check runs when the model calls ``finish_phase``: a :class:`CheckResult`
that passes ends the phase; one that fails goes back to the model with what
failed and excerpts of the output, and the phase goes on within its budget.

Every check holds the build to ``plan.json``, so :class:`PlanPhase` loads and
validates the plan once for all of them: a missing or invalid plan fails the
check with the plan's error, and the phase's own check function gets the plan.
Checks see the build through a :class:`PhaseContext`: the task, the workspace,
and a way to run commands with the workspace's virtual environment first on
``PATH``. This package imports nothing of cadillac's but the sandbox layer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from orchestrator.sandbox.executor import CommandResult
from orchestrator.sandbox.files import read_regular, what_is
from orchestrator.sandbox.installs import InstallStep
from orchestrator.sandbox.workspace import Workspace
from phases.suite.inventory import SuiteInventory
from phases.suite.results import SuiteResults

PROMPTS = Path(__file__).parent


class Plan(BaseModel):
    """plan.json: what the checks of later phases hold the build to."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1)
    stack: list[str]
    """Tags such as python, flask, sqlite."""
    files: list[str] = Field(min_length=1)
    """Every file the project will have, relative to the workspace."""
    dependencies: list[str]
    """Requirement strings (empty for a standard-library project)."""
    install_command: str | None = None
    """Extra set-up after cadillac installed the dependency files; runs without network."""
    test_command: str = Field(min_length=1)
    run_command: str = Field(min_length=1)
    """A smoke run that must exit 0."""

    @field_validator("files")
    @classmethod
    def _relative(cls, files: list[str]) -> list[str]:
        for path in files:
            if path.startswith("/") or ".." in Path(path).parts:
                raise ValueError(f"{path!r} must be a path inside the workspace")
        return files


class CheckResult(BaseModel):
    passed: bool
    summary: str
    """One line: what passed or what failed."""
    details: str = ""
    """Output excerpts for the model."""

    def for_model(self) -> str:
        head = "CHECK PASSED" if self.passed else "CHECK FAILED"
        return f"{head}: {self.summary}" + (f"\n{self.details}" if self.details else "")


Runner = Callable[..., CommandResult]
"""run(command, timeout_s=None, install=None, visible=(), writable=()) -> CommandResult, in
the workspace; only an issued ``install`` step (see orchestrator/sandbox/installs.py) gets
the network and its program's settings, and run_command checks the step. ``visible``:
folders of the host's the command may read (a judge's own files), ``writable``: folders it
may also write (where a judge leaves screenshots)."""


@dataclass
class Baseline:
    """The project an enhance build started from, as the checks hold the change to it."""

    test_command: str | None
    """The project's own test command (found in its configuration, or given by the user)."""
    suite: SuiteInventory
    """Its tests and skip markers before the change: none may be lost."""
    dependency_files: dict[str, str]
    """Dependency file -> its sha256 before the change (the deps phase runs when one differs)."""
    results: SuiteResults | None = None
    """What the project's own test command did, test by test, on the project as it was
    (run once before the first phase); None until then, or when there is no command."""
    version: str | None = None
    """The project's version, from its repository's tags, for the install of a project
    whose version its build backend reads from git (hatch-vcs, setuptools-scm)."""


@dataclass
class PhaseContext:
    task: str
    workspace: Workspace
    run: Runner
    cache_dir: Path | None = None
    """Where phases may keep reusable things between builds (a template virtual env)."""
    baseline: Baseline | None = None
    """Set when the build changes an existing project (``cadillac enhance``, ``iterate``)."""
    records: Path | None = None
    """A folder of the run's, out of the sandbox's reach: the stories the plan fixed, the
    screenshots of browser stories. None: nothing is kept (a check run on its own)."""
    emit: Callable[..., None] | None = None
    """emit(kind, **fields): an event in the run's record (a story's result, an attempt to
    weaken the stories)."""
    changed: Callable[[], list[str]] | None = None
    """changed() -> the paths the change touched since the build's start (files added,
    changed or removed, relative to the workspace), read from git when asked; None for a
    new project (all of it is the change). A code check of an existing project checks
    these, not every file the user's project holds (its own deliberately broken test
    fixtures are not the change's concern)."""

    def note(self, kind: str, **fields) -> None:
        if self.emit is not None:
            self.emit(kind, **fields)

    def plan(self) -> Plan:
        """The validated plan.json (raises PlanError)."""
        return load_plan(self.workspace.root)


class PlanError(Exception):
    pass


def load_plan(root: Path) -> Plan:
    path = root / "plan.json"
    found = what_is(path)
    if found == "nothing":
        raise PlanError("plan.json does not exist in the workspace root")
    if found is not None:
        raise PlanError(f"plan.json is {found}; it must be a regular file in the workspace root")
    try:
        return Plan.model_validate_json(read_regular(path))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'plan'}: {e['msg']}" for e in exc.errors()
        )
        raise PlanError(f"plan.json is not valid: {problems}") from None
    except (ValueError, json.JSONDecodeError) as exc:
        raise PlanError(f"plan.json is not valid JSON: {exc}") from None
    except OSError as exc:
        raise PlanError(f"plan.json cannot be read: {exc.strerror or exc}") from None


class Phase(Protocol):
    name: str

    def prompt(self) -> str: ...

    def check(self, ctx: PhaseContext) -> CheckResult: ...


def read_prompt(name: str) -> str:
    return (PROMPTS / f"{name}.md").read_text(encoding="utf-8")


def command_failed(what: str, result: CommandResult) -> CheckResult:
    return CheckResult(passed=False, summary=f"{what} failed", details=result.for_model())


def run_step(
    ctx: PhaseContext,
    what: str,
    command: str,
    timeout_s: float | None = None,
    install: InstallStep | None = None,
) -> CheckResult | None:
    """Run one command of a check; a CheckResult when it failed, else None. Only an
    install step cadillac issued (``install``, whose command this is) has the network."""
    result = ctx.run(command, timeout_s=timeout_s, install=install)
    return None if result.ok else command_failed(f"{what} `{command}`", result)


def python_compiles(ctx: PhaseContext, paths: list[str]) -> CheckResult | None:
    """py_compile every listed .py file that exists; a failing CheckResult or None."""
    py = [p for p in paths if p.endswith(".py")]
    if not py:
        return None
    quoted = " ".join(json.dumps(p) for p in py)
    return run_step(ctx, "compiling", f"python -m py_compile {quoted}")


CheckFn = Callable[[PhaseContext, Plan], CheckResult]
"""A phase's own check, given the validated plan."""


@dataclass
class PlanPhase:
    """A phase given by its name and its check function (every phase module makes one)."""

    name: str
    check_fn: CheckFn

    def prompt(self) -> str:
        return read_prompt(self.name)

    def check(self, ctx: PhaseContext) -> CheckResult:
        try:
            plan = ctx.plan()
        except PlanError as exc:
            return CheckResult(passed=False, summary=str(exc))
        return self.check_fn(ctx, plan)
