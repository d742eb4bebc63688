"""What differs between a new project and a change to one that exists: one strategy each.

The build loop (:mod:`orchestrator.loop.agent`) is the same for both kinds of build. It
asks the build's :class:`Project` at the few points where they differ, and nothing else
about the project:

* **what every phase is told** besides its own prompt (:meth:`Project.prompt`): nothing
  for a new project; for an existing one, ``phases/enhance.md``, its test command and
  tests, what already failed before any change, and the knowledge digest of its tree;
* **what runs before the first phase** (:meth:`Project.before_first_phase`): for an
  existing project, its own tests, once, on the project as it is;
* **whether a phase needs the model** (:meth:`Project.without_model`): an existing
  project's deps phase is cadillac's alone when no dependency file changed and the plan
  changes none (its own dependencies installed, no model rounds);
* **what happens when a phase passed** (:meth:`Project.phase_passed`): an existing
  project's change is committed on its branch and ``changes.patch`` rewritten;
* **what a resume does first** (:meth:`Project.resume`): an existing project goes back
  to its last commit (the stopped phase's half-written changes are discarded, and named).

A new project is the empty strategy (:class:`NewProject`): every answer is "nothing".
:class:`ExistingProject` is ``cadillac enhance`` and ``iterate``; where its workspace
comes from and where its change goes is :mod:`orchestrator.loop.source`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from orchestrator.loop import source as sources
from orchestrator.loop.runs import BaselineRecord, PhaseSummary, Run, RunSummary, TaskRecord
from orchestrator.sandbox.files import UnsafeFile, read_regular, what_is
from orchestrator.sandbox.installs import DEPENDENCY_FILES
from phases import deps
from phases.base import (
    Baseline,
    Phase,
    PhaseContext,
    Plan,
    PlanError,
    load_plan,
    read_prompt,
    suite_kept,
)
from phases.suite import discover_test_command, inventory

FAILING_LINES = 12
"""How many of the last lines of a failing suite's output say what failed at the start."""
Emit = Callable[..., None]


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
            else Baseline(base.test_command, base.suite, dict(base.dependency_files))
        )

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
                f"start, as the checks run them): {failing}"
            )
        overview = digest()  # the end of the last phase refreshed it
        if overview:
            parts.append("An overview of the project (knowledge digest):\n" + overview)
        return "\n\n".join(parts)

    # ------------------------------------------------------------------ before the first phase
    def before_first_phase(self, ctx: PhaseContext) -> str | None:
        """The project's own tests, run once on the project as it is, as the checks run
        them (in the sandbox, its own dependencies installed as the deps phase installs
        them). What failed (the step, its status, the last lines of its output) is kept in
        ``task.json`` and told to every phase; None when they passed, or there is no test
        command to run."""
        base = self.record.baseline
        if base is None or not base.test_command:
            return None
        base.failing = failing_at_start(ctx, base.test_command)
        self.run.save_task(self.record)
        self.emit("baseline_tests", command=base.test_command, failing=base.failing)
        return base.failing

    # ------------------------------------------------------------------ phases
    def without_model(self, name: str, phase: Phase, ctx: PhaseContext) -> PhaseSummary | None:
        """The deps phase of a project whose dependency files are as they were, and whose
        plan lists none to change: the project's own dependencies installed, no model
        rounds. None when the model must do the phase (and a failing install is its)."""
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
        check = phase.check(ctx)
        if not check.passed:
            return None  # the model gets the phase, and this failure with it
        seconds = round(time.perf_counter() - started, 3)
        summary = f"{check.summary} (no dependency file changed: done without the model)"
        self.emit(
            "phase_end", phase=name, outcome="passed", rounds=0, seconds=seconds, check=summary
        )
        return PhaseSummary(phase=name, outcome="passed", budget=0, seconds=seconds, check=summary)

    def phase_passed(self, result: PhaseSummary, summary: RunSummary) -> None:
        """Commit what the phase changed on the build's branch; rewrite changes.patch."""
        message = f"cadillac {self.run.id} {result.phase}: {result.finish_summary or result.check}"
        workspace = self.run.workspace
        head = sources.commit(self.source, workspace, message[:300], said=self._guard_said)
        stat = sources.write_patch(self.source, workspace, self.run.patch_path)
        summary.branch = self.source.branch
        summary.changed = sources.changed_files(self.source, workspace)
        self.emit("commit", phase=result.phase, head=head, stat=stat.splitlines()[-1:] or [""])

    def resume(self) -> list[str]:
        """A resumed build runs the phase it stopped in again from its start, so its
        workspace goes back to the last phase's commit first (see
        :func:`orchestrator.loop.source.restore`); what that discards is returned."""
        return sources.restore(self.source, self.run.workspace, said=self._guard_said)

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


def failing_at_start(ctx: PhaseContext, test_command: str) -> str | None:
    """What :meth:`ExistingProject.before_first_phase` reports of a project as it is, or None."""
    as_it_is = Plan(
        summary="the project as it is",
        stack=[],
        files=list(DEPENDENCY_FILES),
        dependencies=[],
        test_command=test_command,
        run_command="true",
    )
    ready = deps.check(ctx, as_it_is)
    failed = suite_kept(ctx) if ready.passed else ready
    if failed is None or failed.passed:
        return None
    status, _, output = failed.details.partition("\n")
    tail = [line for line in output.splitlines() if line.strip()][-FAILING_LINES:]
    return f"{failed.summary}: {status}" + "".join(f"\n{line}" for line in tail)


def baseline_of(workspace: Path, test_command: str | None) -> BaselineRecord:
    """The project as an enhance build finds it: its test command, tests, dependencies."""
    return BaselineRecord(
        test_command=test_command or discover_test_command(workspace),
        suite=inventory(workspace),
        dependency_files=dependency_hashes(workspace),
    )
