"""What differs between a new project and a change to one that exists: one strategy each.

The build loop (:mod:`orchestrator.loop.agent`) is the same for both kinds of build. It
asks the build's :class:`Project` at the few points where they differ, and nothing else
about the project:

* **what every phase is told** besides its own prompt (:meth:`Project.prompt`): nothing
  for a new project; for an existing one, ``phases/enhance.md``, its test command and
  tests, what already failed before any change, and the knowledge digest of its tree;
* **what runs before the first phase** (:meth:`Project.before_first_phase`): for an
  existing project, its dependencies and test tools installed and its own tests run once,
  on the project as it is, test by test: the baseline every later run is held to
  (:mod:`phases.suite.gate`). A suite that cannot run at all stops the build there, in
  one line (:class:`SuiteCannotRun`): no model round is spent on it;
* **whether a phase needs the model** (:meth:`Project.without_model`): an existing
  project's deps phase is cadillac's alone when no dependency file changed and the plan
  changes none (its own dependencies installed, no model rounds);
* **what happens when a phase passed** (:meth:`Project.phase_passed`): an existing
  project's change is committed on its branch and ``changes.patch`` rewritten, without
  what cadillac's own commands left in the workspace (:mod:`orchestrator.loop.products`:
  every command of cadillac's runs inside :meth:`Project.own_command`, and what the model
  writes with its file tools is its own, :meth:`Project.model_wrote`);
* **what a resume does first** (:meth:`Project.resume`): an existing project goes back
  to its last commit (the stopped phase's half-written changes are discarded, and named).

A new project is the empty strategy (:class:`NewProject`): every answer is "nothing".
:class:`ExistingProject` is ``cadillac enhance`` and ``iterate``; where its workspace
comes from and where its change goes is :mod:`orchestrator.loop.source`.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from orchestrator.errors import CadillacError
from orchestrator.loop import source as sources
from orchestrator.loop.products import Products
from orchestrator.loop.runs import BaselineRecord, PhaseSummary, Run, RunSummary, TaskRecord
from orchestrator.sandbox.files import UnsafeFile, read_regular, replace_file, what_is
from orchestrator.sandbox.installs import DEPENDENCY_FILES
from phases import deps
from phases.base import Baseline, Phase, PhaseContext, Plan, PlanError, load_plan, read_prompt
from phases.suite import discover_test_command, inventory
from phases.suite.gate import project_run
from phases.suite.results import SuiteResults
from phases.suite.run import DEFAULT_TIMEOUT_S

FAILING_SHOWN = 10
"""How many tests that already fail are named at the start."""
BASELINE_RESULTS = "baseline-tests.json"
"""The first run's results, test by test, in the run's folder."""
Emit = Callable[..., None]


class SuiteCannotRun(CadillacError):
    """The project's own tests cannot run on the project as it is: the build stops before
    its first phase (a change could not be judged by them)."""


class Project(Protocol):
    """The answers the build loop asks of the project it builds (see the module docstring)."""

    tags: list[str]
    """The project's own stacks, read from its files (none for a new project)."""
    baseline: Baseline | None
    """What the checks hold a change to an existing project to; None for a new one."""

    def prompt(self, digest: Callable[[], str]) -> str:
        """What every phase is told about the project (``digest``: the knowledge digest's)."""
        ...

    def before_first_phase(self, ctx: PhaseContext) -> str | None:
        """Work before the first phase; what the user should hear of it, or None."""
        ...

    def without_model(self, name: str, phase: Phase, ctx: PhaseContext) -> PhaseSummary | None:
        """The phase ``name`` done by cadillac alone, or None when the model must do it."""
        ...

    def phase_passed(self, result: PhaseSummary, summary: RunSummary) -> None:
        """Record what the passed phase changed (``summary`` hears where it went)."""
        ...

    def resume(self) -> list[str]:
        """Make the workspace ready to run the stopped phase again; what that discarded."""
        ...

    def own_command(self) -> AbstractContextManager:
        """Around each command cadillac runs itself in the workspace (an install, a check)."""
        ...

    def model_wrote(self, path: str) -> None:
        """The model wrote ``path`` with a file tool."""
        ...


class NewProject:
    """A project cadillac makes from an empty folder: nothing differs from the loop."""

    tags: list[str] = []
    baseline: Baseline | None = None

    def prompt(self, digest: Callable[[], str]) -> str:
        return ""

    def before_first_phase(self, ctx: PhaseContext) -> str | None:
        return None

    def without_model(self, name: str, phase: Phase, ctx: PhaseContext) -> PhaseSummary | None:
        return None

    def phase_passed(self, result: PhaseSummary, summary: RunSummary) -> None:
        return None

    def resume(self) -> list[str]:
        return []

    def own_command(self) -> AbstractContextManager:
        return contextlib.nullcontext()

    def model_wrote(self, path: str) -> None:
        return None


class ExistingProject:
    """A change to a project that exists (``cadillac enhance``, ``iterate``): its workspace
    is a worktree or a copy (:mod:`orchestrator.loop.source`), its own suite is the first
    judge of the change, and each passed phase is a commit on the build's branch."""

    def __init__(self, record: TaskRecord, run: Run, emit: Emit):
        assert record.source is not None
        self.record, self.run, self.emit = record, run, emit
        self.source = record.source
        self.tags = sorted(self.source.tags)
        base = record.baseline
        self.baseline = (
            None
            if base is None
            else Baseline(
                base.test_command,
                base.suite,
                dict(base.dependency_files),
                results=load_results(run.dir / BASELINE_RESULTS),
                version=self.source.version,
            )
        )
        self.products = Products(run.workspace, run.dir, sources.NOT_THE_CHANGE)
        """What cadillac's own commands left in the workspace: never the change."""

    # ------------------------------------------------------------------ the prompt
    def prompt(self, digest: Callable[[], str]) -> str:
        base, parts = self.baseline, [read_prompt("enhance")]
        if self.source.parent_run:
            parts.append(f"The project is the result of cadillac run {self.source.parent_run}.")
        if base is not None:
            command = base.test_command or "none found: plan.json's test_command must run them"
            parts.append(
                f"The project's own test command: {command}; its tests: "
                f"{base.suite.count()} in {len(base.suite.tests)} file(s)."
            )
        failing = self.record.baseline.failing if self.record.baseline else None
        if failing:
            parts.append(
                "The project's own tests already failed before any change (run once at the "
                f"start, as the checks run them; these may still fail, no others): {failing}"
            )
        results = self.baseline.results if self.baseline else None
        if results is not None and not results.readable:
            parts.append(
                "The project's test command reports no per-test results cadillac can read: "
                "its exit status decides."
            )
        overview = digest()  # the end of the last phase refreshed it
        if overview:
            parts.append("An overview of the project (knowledge digest):\n" + overview)
        return "\n\n".join(parts)

    # ------------------------------------------------------------------ before the first phase
    def before_first_phase(self, ctx: PhaseContext) -> str | None:
        """Install the project's dependencies and test tools as the deps phase does, then
        run its own tests once, with reports, on the project as it is: the results, test
        by test, are the baseline (``baseline-tests.json``) every later run is held to.
        What already fails is kept in ``task.json``, told to every phase and returned;
        None when everything passed, or there is no test command. A suite that cannot run
        at all raises :class:`SuiteCannotRun`."""
        base = self.record.baseline
        if base is None or not base.test_command or self.baseline is None:
            return None
        as_it_is = Plan(
            summary="the project as it is",
            stack=[],
            files=list(DEPENDENCY_FILES),
            dependencies=[],
            test_command=base.test_command,
            run_command="true",
        )
        started = time.perf_counter()
        ready = deps.check(ctx, as_it_is)
        seconds = round(time.perf_counter() - started, 3)
        self.emit("baseline_deps", passed=ready.passed, summary=ready.summary, seconds=seconds)
        base.installed = ready.summary if ready.passed else ""
        if not ready.passed:
            base.failing = (
                f"{ready.summary}: {ready.details.splitlines()[0] if ready.details else ''}"
            )
            self.run.save_task(self.record)
            return base.failing
        results = project_run(ctx, base.test_command, DEFAULT_TIMEOUT_S)
        replace_file(self.run.dir / BASELINE_RESULTS, results.model_dump_json().encode())
        self.baseline.results = results
        failed = results.with_outcome("failed")
        self.emit(
            "baseline_tests",
            command=base.test_command,
            report=results.report,
            ran=results.ran(),
            passed=len(results.with_outcome("passed")),
            failed=failed[:50],
            exit_code=results.exit_code,
            seconds=results.seconds,
        )
        stop = cannot_run(results)
        if stop:
            base.failing = stop
            self.run.save_task(self.record)
            raise SuiteCannotRun(stop)
        base.failing = failing_text(results)
        self.run.save_task(self.record)
        return base.failing

    # ------------------------------------------------------------------ phases
    def without_model(self, name: str, phase: Phase, ctx: PhaseContext) -> PhaseSummary | None:
        """The deps phase of a project whose dependency files are as they were, and whose
        plan lists none to change: the project's own dependencies installed, no model
        rounds. None when the model must do the phase (and a failing install is its).
        What the install before the first phase made is kept when its environment is
        still there (installing it again would install the same, and cost the time)."""
        if name != "deps" or self.baseline is None:
            return None
        try:
            planned = set(load_plan(self.run.workspace).files)
        except PlanError:
            return None
        now = dependency_hashes(self.run.workspace)
        if now != self.baseline.dependency_files or planned & set(DEPENDENCY_FILES):
            return None
        started = time.perf_counter()
        base = self.record.baseline
        venv = what_is(self.run.workspace / ".venv" / "bin" / "python")
        if base is not None and base.installed and venv in (None, "a symbolic link"):
            summary = (
                f"installed before the first phase: {base.installed}; no dependency file "
                "changed: done without the model"
            )
        else:
            check = phase.check(ctx)
            if not check.passed:
                return None  # the model gets the phase, and this failure with it
            summary = f"{check.summary} (no dependency file changed: done without the model)"
        seconds = round(time.perf_counter() - started, 3)
        self.emit(
            "phase_end", phase=name, outcome="passed", rounds=0, seconds=seconds, check=summary
        )
        return PhaseSummary(phase=name, outcome="passed", budget=0, seconds=seconds, check=summary)

    def phase_passed(self, result: PhaseSummary, summary: RunSummary) -> None:
        """Commit what the phase changed on the build's branch; rewrite changes.patch."""
        message = f"cadillac {self.run.id} {result.phase}: {result.finish_summary or result.check}"
        workspace = self.run.workspace
        head, left = sources.commit(
            self.source,
            workspace,
            message[:300],
            said=self._guard_said,
            products=self.products.of,
        )
        stat = sources.write_patch(self.source, workspace, self.run.patch_path)
        summary.branch = self.source.branch
        summary.changed = sources.changed_files(self.source, workspace)
        summary.left_out = sorted(set(summary.left_out) | set(left))
        self.emit(
            "commit",
            phase=result.phase,
            head=head,
            stat=stat.splitlines()[-1:] or [""],
            left_out=left[:50],
            left_out_count=len(left),
        )

    def resume(self) -> list[str]:
        """A resumed build runs the phase it stopped in again from its start, so its
        workspace goes back to the last phase's commit first (see
        :func:`orchestrator.loop.source.restore`); what that discards is returned."""
        return sources.restore(self.source, self.run.workspace, said=self._guard_said)

    def own_command(self) -> AbstractContextManager:
        """What the command makes, changes or removes is cadillac's, not the change."""
        return self.products.watch()

    def model_wrote(self, path: str) -> None:
        self.products.claim(path)

    def _guard_said(self, text: str) -> None:
        """What the git guard removed from the workspace before running git, as an event."""
        self.emit("git_guard", text=text)


def project_of(record: TaskRecord, run: Run, emit: Emit) -> Project:
    """The strategy of the build ``record`` describes."""
    if record.source is None:
        return NewProject()
    return ExistingProject(record, run, emit)


def prepare_existing(
    record: TaskRecord, run: Run, path: Path, test_command: str | None, parent: str | None
) -> None:
    """Fill a new enhance run's workspace from ``path`` and record where it came from and
    the project as it was found (:func:`baseline_of`). On a failure the caller undoes the
    worktree, its branch and the run folder (:func:`orchestrator.loop.source.discard`)."""
    record.source = sources.prepare(path, run.workspace, run.dir, run.id, parent)
    record.baseline = baseline_of(run.workspace, test_command)
    run.save_task(record)


def dependency_hashes(root: Path) -> dict[str, str]:
    """Each dependency file at the top of ``root`` -> its sha256 (links are not read)."""
    out = {}
    for name in DEPENDENCY_FILES:
        if what_is(root / name) is None:
            try:
                out[name] = hashlib.sha256(read_regular(root / name)).hexdigest()
            except (UnsafeFile, OSError):
                continue
    return out


def load_results(path: Path) -> SuiteResults | None:
    """The first run's results kept in ``path``; None when there are none (yet)."""
    if what_is(path) is not None:
        return None
    try:
        return SuiteResults.model_validate_json(read_regular(path))
    except (OSError, UnsafeFile, ValueError):
        return None


def cannot_run(results: SuiteResults) -> str | None:
    """Why the project's own tests cannot run at all, in one line; None when they ran."""
    command = f"`{results.command}`"
    last = results.tail.strip().splitlines()[-1][:200] if results.tail.strip() else ""
    said = f": {last}" if last else ""
    if results.timed_out:
        return (
            f"the project's own tests {command} did not finish within "
            f"{DEFAULT_TIMEOUT_S:.0f} s; give --test-cmd a part of the suite"
        )
    if results.readable and results.ran() == 0:
        return f"the project's own tests {command} ran 0 tests{said}"
    if not results.readable and results.exit_code != 0:
        return (
            f"the project's own tests cannot run: {command} exited with status "
            f"{results.exit_code} and reported no test{said}"
        )
    return None


def failing_text(results: SuiteResults) -> str | None:
    """What already fails, in a few lines (the first tests named); None when nothing does."""
    failed = results.with_outcome("failed")
    if not results.readable:
        return None
    if not failed:
        return None
    names = ", ".join(failed[:FAILING_SHOWN])
    more = f" and {len(failed) - FAILING_SHOWN} more" if len(failed) > FAILING_SHOWN else ""
    lines = [f"{len(failed)} of {results.ran()} test(s) failed: {names}{more}"]
    for test in failed[:3]:
        said = results.messages.get(test, "").strip().splitlines()
        if said:
            lines.append(f"{test}: {said[-1][:200]}")
    return "\n".join(lines)


def baseline_of(workspace: Path, test_command: str | None) -> BaselineRecord:
    """The project as an enhance build finds it: its test command, tests, dependencies."""
    return BaselineRecord(
        test_command=test_command or discover_test_command(workspace),
        suite=inventory(workspace),
        dependency_files=dependency_hashes(workspace),
    )
