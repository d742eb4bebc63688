"""The build loop: six phases, each a fresh conversation under a learned budget of rounds.

For each phase from the first that has not passed, the loop runs rounds. A round
(:meth:`Builder.step`) compacts the conversation, asks the model, dispatches its tool
calls, and, when the model called ``finish_phase``, runs the phase's check. A failing
check goes back to the model as the next message (the reflection loop of aider); a
phase leaves its loop by an exception that says why: :class:`PhasePassed`,
:class:`BudgetExhausted`, a :class:`~orchestrator.llm.client.ModelError` (the model
could not be reached), or :class:`CostLimitReached` (the cost or time cap, which also
ends the build, resumably). A phase that does not pass ends the build.

After every phase, passed or not, the model reflects once and the lessons it draws are
saved (dedup merges restatements), and one budget row is recorded. At the end, a passing
build boosts the lessons the model cited as applied and the skills it was shown; a failing
one penalises the lessons whose trigger the failure echoes, and the skills. A passing build
whose work recurs (:mod:`orchestrator.loop.skills`) drafts a skill. Every step is an event
in the run (:meth:`Builder.emit`) as it happens, and the summary is rewritten after each
phase; every round, with the model's message, its tool calls and their results, and every
reflection is a line of the run's ``trajectory.jsonl`` (:mod:`orchestrator.loop.trajectory`)
when it ends. The memory part of the prompt (notes and lessons) is built once per build
(:mod:`orchestrator.loop.memory_view`); the model changes the memory in-band with the
memory tool (:mod:`orchestrator.loop.memory_tool`). A user's plugins hear of the build
through hooks (:mod:`orchestrator.hooks`) and can never break it.

What differs between a new project and a change to one that exists (``enhance``,
``iterate``) is the build's :class:`~orchestrator.loop.project.Project`, one strategy
each, asked at the few points where they differ: what every phase is told, what runs
before the first phase (an existing project's own tests, once), whether a phase needs
the model, what a passed phase leaves behind (a commit and the patch) and what a resume
does first. An existing project's stacks are among the task's tags from the start
(:func:`memory.tags.project_tags`), so its budgets and recall match history from the
first phase. Each phase keeps one transcript, its conversation: the reflection reads it.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, Field

from memory import Lesson
from memory.skills import BadSkill
from memory.tags import infer_tags_from_text, stack_tags
from orchestrator import __version__
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.hooks import Hooks
from orchestrator.llm.client import LLMClient, LLMConfig, ModelError, ToolCall, check_model
from orchestrator.llm.prices import cost_stop
from orchestrator.loop import source as sources
from orchestrator.loop import trajectory
from orchestrator.loop.context import compact
from orchestrator.loop.knowledge import Knowledge
from orchestrator.loop.learning import DeferredLearning, HomeLearning, Learning
from orchestrator.loop.memory_tool import MemoryTool
from orchestrator.loop.memory_view import NotesConfig, open_build_memory, skills_text
from orchestrator.loop.project import Project, SuiteCannotRun, prepare_existing, project_of
from orchestrator.loop.prompt import opening, phase_part, stable_prefix
from orchestrator.loop.reflect import reflect
from orchestrator.loop.runs import (
    MatrixOrigin,
    PhaseSummary,
    Run,
    RunSummary,
    TaskRecord,
    new_run_id,
)
from orchestrator.loop.skills import draft_skill, find_recurrence
from orchestrator.loop.trajectory import (
    CheckStep,
    DrawnLesson,
    ReflectionRecord,
    RoundRecord,
    ToolStep,
)
from orchestrator.sandbox.executor import ExecConfig, check_sandbox, run_command
from orchestrator.sandbox.files import what_is
from orchestrator.sandbox.installs import InstallStep, project_env
from orchestrator.sandbox.venvs import support_site
from orchestrator.sandbox.workspace import Workspace
from orchestrator.tools.box import FinishRequest, ToolBox
from orchestrator.tools.schema import TOOLS
from phases import DEFAULT_ROUNDS, PHASES, load_phases
from phases.base import Phase, PhaseContext, PlanError, load_plan
from phases.stories import gate as stories

WRITING_TOOLS = ("write_file", "edit_file")
"""The model's tools that change a file on purpose (its change, whoever made the file)."""
NUDGE = "Reply with tool calls: work with the tools, then call finish_phase when the phase is done."


class BuildConfig(BaseModel):
    """Everything a build needs besides the task."""

    model_config = ConfigDict(extra="forbid")

    llm: LLMConfig = Field(default_factory=LLMConfig)
    executor: ExecConfig = Field(default_factory=ExecConfig)
    recall_limit: int = Field(default=8, ge=0)
    """Lessons recalled into every phase prompt."""
    lessons_chars: int = Field(default=4000, ge=0)
    """Character budget of the lessons section."""
    notes: NotesConfig = Field(default_factory=NotesConfig)
    """Character caps of the notes (and skills) in the prompt."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """End the build (resumably) before the spend would pass this."""
    max_tokens: int | None = Field(default=None, gt=0)
    """End the build (resumably) before its tokens would pass this (any model, priced or not)."""
    max_seconds: float | None = Field(default=None, gt=0)
    """End the build (resumably) once it has run this long (a matrix task's timeout)."""
    reflect: bool = True
    """Ask the model for lessons after every phase."""
    context_chars: int = Field(default=240_000, ge=10_000)
    """When a phase's conversation grows past this, older tool results are elided."""
    seed: int | None = None
    """The model's sampling seed, where its provider takes one (a matrix sets it per build)."""


class NothingToResume(CadillacError):
    """The run to resume already passed; resuming it would only repeat its learning."""


class CostLimitReached(CadillacError):
    """The build hit its cost or time limit; it ends cleanly and can be resumed."""


class PhaseEnded(Exception):
    """Leaves a phase's loop; ``check`` is the one line the phase's summary keeps."""

    outcome = "error"

    def __init__(self, check: str):
        super().__init__(check)
        self.check = check


class PhasePassed(PhaseEnded):
    outcome = "passed"


class BudgetExhausted(PhaseEnded):
    outcome = "budget_exhausted"


@dataclass
class Progress:
    """Where a build is, for the live status line: the phase, its round, what it does
    now (``thinking``: waiting for the model; a tool's name; ``checking``), since when,
    and what the build has spent so far."""

    phase: str
    round: int
    budget: int
    action: str
    since: float = 0.0
    """When ``action`` began (a Unix time): the status line shows how long it has taken."""
    tokens: int = 0
    cost_usd: float | None = None


@dataclass
class PhaseRun:
    """What one phase's loop works on: its conversation, its record and its summary."""

    phase: Phase
    ctx: PhaseContext
    result: PhaseSummary
    messages: list[dict]
    """The phase's one transcript: what the model was sent and answered (its reflection
    reads it too)."""
    emit: Callable[..., None]
    """An event of this phase and its current round."""
    part: str = ""
    """The system message after the build's stable prefix (the phase's own part)."""
    started: float = field(default_factory=time.perf_counter)
    current: RoundRecord | None = None
    """The round going on: written to trajectory.jsonl when it ends."""


class Builder:
    """One build run (new or resumed) of one task."""

    def __init__(
        self,
        home: Home,
        config: BuildConfig,
        task: str,
        run: Run,
        on_progress: Callable[[Progress], None] | None = None,
        learning: Learning | None = None,
        stop: threading.Event | None = None,
        record: TaskRecord | None = None,
        hooks: Hooks | None = None,
    ):
        self.home, self.config, self.task, self.run = home, config, task, run
        self.record = record or run.task()
        self.source = self.record.source
        """Set for a change to an existing project: where it came from, where it goes."""
        self.project: Project = project_of(self.record, run, run.event)
        """What differs between a new project and an existing one (orchestrator.loop.project)."""
        self.baseline = self.project.baseline
        self.stop = stop or threading.Event()
        """Set by whoever runs this build to stop it: its commands die, its loop ends."""
        self.on_progress = on_progress or (lambda p: None)
        self.emit = run.event
        project = self.project.tags
        self.tags = sorted(stack_tags(infer_tags_from_text(task)) | set(project))
        """The task's stacks: its words', and for a change to a project, the project's."""
        self.memory = open_build_memory(
            home,
            task + (f"\nThe project's stacks: {', '.join(project)}." if project else ""),
            self.tags,
            recall_limit=config.recall_limit,
            lessons_chars=config.lessons_chars,
            notes=config.notes,
            default_rounds=DEFAULT_ROUNDS,
        )
        self.store, self.history = self.memory.store, self.memory.history
        self.learning: Learning = learning or HomeLearning(home)
        self.hooks = Hooks.load() if hooks is None else hooks
        """A user's plugins (entry points and --plugin): told of the build, never in its way."""
        llm = (
            config.llm
            if config.seed is None
            else config.llm.model_copy(update={"seed": config.seed})
        )
        self.llm = LLMClient(llm, log_path=run.llm_path)
        self.workspace = Workspace(run.workspace, limits=config.executor.workspace)
        self.venv_bin = run.workspace / ".venv" / "bin"
        self.env = project_env(run.workspace)
        self.knowledge = Knowledge(
            run.workspace,
            run.dir / "index",
            home.runs_dir,
            self.store,
            task,
            run.id,
            on_error=lambda message: self.emit("knowledge_error", error=message[:500]),
        )
        self.phases = load_phases()
        self.summary = run.summary() or RunSummary(
            run_id=run.id, task=task, model=config.llm.model, kind=self.record.kind
        )
        self.lessons_text, self.recalled_ids = self.memory.lessons_text, self.memory.recalled_ids
        self.notebook, self.skillbook = self.memory.notebook, self.memory.skillbook
        self.skills = self.memory.skills
        self.view = self.memory.view(task, config.notes)
        self.prefix = stable_prefix(self.view.text)
        """The start of every phase's system message: the same for the whole build."""
        self.memory_changed = False
        self.memory_tool = MemoryTool(
            store=self.store,
            notebook=self.notebook,
            skills=self.skillbook,
            learning=self.learning,
            run_id=run.id,
            task=task,
            tags=self.tags,
            recalled=self.recalled_ids,
            emit=self._memory_event,
            on_change=self._memory_change,
            saved=list(self.summary.memory_saved),  # a resumed run's earlier saves stay its own
        )
        self.toolbox = ToolBox(
            self.workspace,
            config.executor,
            path_prefix=[self.venv_bin],
            env=self.env,
            stop=self.stop,
            knowledge=self.knowledge.answer,
            memory=self.memory_tool.answer,
        )
        self.failure = ""
        """The last failure the model saw (a check's or the model's), for penalties."""
        self.started = time.time()
        self.base_seconds = self.summary.seconds
        self.lock: FileLock | None = None
        """The run's lock, once taken (resume takes it first: a live run is not resumed)."""
        self.resuming = False
        """Set by :meth:`resume`: an enhance build then goes back to its last checkpoint."""
        self.discarded: list[str] = []
        """What going back to the checkpoint discarded (the stopped phase's changes)."""
        self.phase_emit: Callable[..., None] | None = None
        """The running phase's emit (its name and round on every event), None between phases."""

    @staticmethod
    def preflight(config: BuildConfig) -> None:
        """What can be checked before a run folder is made: the models and the sandbox."""
        for model in [config.llm.model, *config.llm.fallback_models]:
            check_model(model)
        check_keys(config.llm)
        check_sandbox(config.executor)

    @classmethod
    def start(
        cls,
        home: Home,
        config: BuildConfig,
        task: str,
        *,
        matrix: MatrixOrigin | None = None,
        **kw,
    ) -> Builder:
        """A new build of ``task``; ``matrix``: the matrix run it is one of (recorded, so that
        its resume learns only as that run would)."""
        cls.preflight(config)
        record = TaskRecord(
            run_id=new_run_id(),
            task=task,
            cadillac_version=__version__,
            config=config.model_dump(mode="json", exclude={"llm": {"api_key"}}),
            matrix=matrix,
        )
        return cls(home, config, task, Run.create(home.runs_dir, record), record=record, **kw)

    @classmethod
    def enhance(
        cls,
        home: Home,
        config: BuildConfig,
        instruction: str,
        path: Path,
        *,
        test_command: str | None = None,
        parent: str | None = None,
        matrix: MatrixOrigin | None = None,
        **kw,
    ) -> Builder:
        """A build that changes the project at ``path`` (a git repository or a folder; for
        ``iterate``, the workspace of the run ``parent``); see :mod:`orchestrator.loop.source`."""
        cls.preflight(config)
        record = TaskRecord(
            run_id=new_run_id(),
            task=instruction,
            kind="enhance",
            cadillac_version=__version__,
            config=config.model_dump(mode="json", exclude={"llm": {"api_key"}}),
            matrix=matrix,
        )
        run = Run.create(home.runs_dir, record)
        try:
            prepare_existing(record, run, path, test_command, parent)
        except BaseException:
            if record.source is not None:
                sources.discard(record.source, run.workspace)
            shutil.rmtree(run.dir, ignore_errors=True)
            raise
        return cls(home, config, instruction, run, record=record, **kw)

    def baseline_tests(self) -> str | None:
        """What runs before the first phase (an existing project's own tests, once, on the
        project as it is: :meth:`~orchestrator.loop.project.ExistingProject.before_first_phase`);
        what the user should hear of it, or None. When the project's tests cannot run at
        all, the run ends there, failed, with that reason (SuiteCannotRun is raised on)."""
        started = time.time()
        try:
            said = self.project.before_first_phase(self._context())
        except SuiteCannotRun as exc:
            self.summary.status, self.summary.reason = "failed", str(exc)
            self._finish()  # its time is counted from the builder's start
            raise
        self.summary.seconds += time.time() - started  # the install and the first run count
        return said

    @classmethod
    def resume(cls, home: Home, config: BuildConfig, run_id: str, **kw) -> Builder:
        cls.preflight(config)
        run = Run.open(home.runs_dir, run_id)
        lock = run.lock()  # refused now, before anything is said or written, if it is live
        summary = run.summary()
        if summary is not None and summary.status == "passed":
            lock.release()
            raise NothingToResume(f"run {run_id} already passed: nothing to resume")
        try:
            record = run.task()
            if not record.learns and kw.get("learning") is None:
                kw["learning"] = NoLearning()  # a holdout or --no-learn build: as it began
            builder = cls(home, config, record.task, run, record=record, **kw)
        except BaseException:  # an unreadable task.json, a model that cannot be opened
            lock.release()
            raise
        builder.lock = lock
        builder.resuming = True
        return builder

    # ------------------------------------------------------------------ the loop
    def build(self) -> RunSummary:
        lock = self.lock or self.run.lock()
        try:
            return self._build()
        finally:
            lock.release()
            self.lock = None

    def _build(self) -> RunSummary:
        s = self.summary
        s.status, s.reason, s.ended = "running", "", None
        s.lessons_recalled = self.recalled_ids
        s.notes_seen = [*self.view.pinned, *self.view.relevant]
        s.skills_seen = [skill.name for skill in self.skills]
        s.unsafe_no_sandbox = self.config.executor.sandbox == "none"
        self.started, self.base_seconds, self.failure = time.time(), s.seconds, ""
        budgets = self.history.compute_budgets(self.tags)
        done = {p.phase for p in s.phases if p.outcome == "passed"}
        s.phases = [p for p in s.phases if p.outcome == "passed"]
        self.discarded = discarded = self.project.resume() if self.resuming else []
        self.emit(
            "build_start",
            task=self.task,
            resumed=bool(done),
            tags=self.tags,
            sandbox=self.config.executor.sandbox,
            recalled=self.recalled_ids,
            budgets={k: b.model_dump() for k, b in budgets.items()},
            memory=self.view.event(),
            skills=s.skills_seen,
            plugins=self.hooks.names,
            discarded=discarded,
        )
        self._hook("build_start", task=self.task, config=self.record.config)
        try:
            for name in (p for p in PHASES if p not in done):
                result = self._without_model(name) or self.run_phase(name, budgets[name].rounds)
                s.phases.append(result)
                if result.outcome == "passed":
                    self.project.phase_passed(result, s)
                self.knowledge.refresh()  # the next phase's search sees what this one wrote
                self._save()
                if result.outcome != "passed":
                    s.status, s.reason = "failed", f"{name}: {result.outcome} ({result.check})"
                    break
            else:
                s.status, s.reason = "passed", "all six phases passed"
                self._draft_skill()
        except CostLimitReached as exc:
            s.status, s.reason = "stopped", str(exc)
        except KeyboardInterrupt:
            s.status, s.reason = "interrupted", f"interrupted; resume with --resume {self.run.id}"
            self._finish()
            raise
        except Exception as exc:  # a bug: keep the traceback in the run, then let it surface
            s.status, s.reason = "failed", f"internal error: {type(exc).__name__}: {exc}"
            self.emit("internal_error", traceback=traceback.format_exc())
            self._finish()
            raise
        self._reinforce()
        self._finish()
        return s

    def run_phase(self, name: str, budget: int) -> PhaseSummary:
        """Rounds until the phase passes, runs out of rounds or cannot reach the model."""
        p = self._phase_run(name, budget)
        self.emit("phase_start", phase=name, budget=budget)
        self.phase_emit = p.emit
        try:
            while True:
                self.step(p)
        except PhaseEnded as end:
            p.result.outcome, p.result.check = end.outcome, end.check
        except ModelError as exc:
            p.result.outcome, p.result.check = "error", f"model error: {exc}"
            self.failure = str(exc)
            self._end_phase(p, reflect=False)  # the model it would ask cannot be reached
            return p.result
        except CostLimitReached as exc:
            p.result.outcome, p.result.check = "error", str(exc)
            self._end_phase(p, learn=False)  # a stop for cost is not a lesson
            raise
        finally:
            self.phase_emit = None
        self._end_phase(p)
        return p.result

    def _without_model(self, name: str) -> PhaseSummary | None:
        """The phase done by cadillac alone when the project says it can be (an existing
        project's deps with no dependency file changed), or None."""

        def emit(kind: str, **fields) -> None:
            self.emit(kind, **({"phase": name} | fields))

        self.phase_emit = emit
        try:
            return self.project.without_model(name, self.phases[name], self._context(emit))
        finally:
            self.phase_emit = None

    def step(self, p: PhaseRun) -> None:
        """One round: compact, ask the model, run its tool calls, check on finish_phase."""
        r = p.result
        if r.rounds >= r.budget:  # the last check's failure, if there was one, says why
            raise BudgetExhausted(
                r.check or f"finish_phase was not called within {r.budget} rounds"
            )
        r.rounds += 1
        self._progress(p, "thinking")
        self._guard_limits()
        if self.memory_changed:
            self._rebuild_memory(p)
        compact(p.messages, self.config.context_chars)
        started = time.perf_counter()
        reply = self.llm.complete(p.messages, TOOLS, stable_chars=len(self.prefix))
        p.messages.append(reply.as_message())
        p.current = RoundRecord(
            phase=r.phase,
            round=r.rounds,
            text=reply.content,
            model=reply.model,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            cost_usd=reply.cost_usd,
        )
        try:
            if not reply.tool_calls:
                p.messages.append({"role": "user", "content": NUDGE})
                p.current.nudged = True
                p.emit("no_tool_call")
                return
            finish = None
            for call in reply.tool_calls:
                finish = self.execute(p, call) or finish
            if finish is not None:
                self.check(p, finish)
        except PhaseEnded:
            raise
        except BaseException as exc:  # the round is recorded as far as it went
            p.current.ended = f"{type(exc).__name__}: {exc}"[:500]
            raise
        finally:
            p.current.seconds = round(time.perf_counter() - started, 3)
            trajectory.append(self.run.dir, p.current)
            p.current = None

    def execute(self, p: PhaseRun, call: ToolCall) -> FinishRequest | None:
        """Dispatch one tool call; its result goes back to the model as the tool message."""
        self._progress(p, call.name)
        started = time.perf_counter()
        out = self.toolbox.dispatch(call.name, call.arguments)
        if out.ok and call.name in WRITING_TOOLS:
            self.project.model_wrote(written_path(call.arguments))
        p.messages.append({"role": "tool", "tool_call_id": call.id, "content": out.content})
        if p.current is not None:
            p.current.tools.append(
                ToolStep(
                    id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                    ok=out.ok,
                    result=out.content,
                    seconds=round(time.perf_counter() - started, 3),
                )
            )
        error = None if out.ok else out.content[:300]
        p.emit(
            "tool",
            tool=call.name,
            ok=out.ok,
            arguments_chars=len(call.arguments),
            result_chars=len(out.content),
            error=error,
        )
        return out.finish

    def check(self, p: PhaseRun, finish: FinishRequest) -> None:
        """Run the phase's check: PhasePassed, or its failure goes back to the model."""
        cited = [i for i in finish.applied_lessons if i in self.recalled_ids]
        p.result.finish_summary = finish.summary
        p.result.applied_lessons = sorted(set(p.result.applied_lessons) | set(cited))
        self._progress(p, "checking")
        check = p.phase.check(p.ctx)
        if p.phase.name != PHASES[0]:
            stories.watch(p.ctx)  # an attempt to drop or change a fixed story is recorded
        p.result.check = check.summary
        unknown = sorted(set(finish.applied_lessons) - set(cited))
        p.emit(
            "check", passed=check.passed, summary=check.summary, cited=cited, unknown_ids=unknown
        )
        sent = check.for_model()
        if p.current is not None:
            p.current.check = CheckStep(passed=check.passed, summary=check.summary, sent=sent)
        if check.passed:
            # the transcript's end, for the reflection
            p.messages.append({"role": "user", "content": sent})
            raise PhasePassed(check.summary)
        self.failure = sent
        p.messages.append({"role": "user", "content": self.failure})

    # ------------------------------------------------------------------ around the loop
    def _phase_run(self, name: str, budget: int) -> PhaseRun:
        phase = self.phases[name]
        result = PhaseSummary(phase=name, outcome="budget_exhausted", budget=budget)
        part = phase_part(
            phase,
            skills_text(self.skills, name, self.config.notes),
            self.project.prompt(lambda: self.knowledge.latest().digest),
        )
        messages = opening(
            phase,
            self.task,
            self.workspace,
            self.summary.phases,
            self.prefix,
            part,
            index=self.knowledge.latest,
            existing=self.baseline is not None,
        )
        self.memory_tool.phase_saves.clear()
        self.memory_tool.phase = name

        def emit(kind: str, **fields) -> None:
            self.emit(kind, phase=name, round=result.rounds, **fields)

        ctx = self._context(emit)
        return PhaseRun(phase, ctx, result, messages, emit, part=part)

    # ------------------------------------------------------------------ memory in the prompt
    def _memory_change(self) -> None:
        self.memory_changed = True

    def _rebuild_memory(self, p: PhaseRun) -> None:
        """The model changed a note: the prefix is rebuilt once, for this and later phases."""
        self.memory_changed = False
        self.view = self.memory.view(self.task, self.config.notes)
        self.prefix = stable_prefix(self.view.text)
        p.messages[0] = {"role": "system", "content": self.prefix + p.part}
        p.emit("memory_prompt", rebuilt=True, **self.view.event())

    def _memory_event(self, kind: str, **fields) -> None:
        """An event of the memory tool; a lesson it saved also reaches the plugins."""
        lesson = fields.pop("lesson", None)
        self.emit(kind, **fields)
        if lesson is not None:
            self._hook("lesson_saved", lesson=lesson)

    def _hook(self, name: str, **payload) -> None:
        """Tell the plugins; one that fails is an event and a warning line, never an error."""
        self.hooks.report(self.hooks.call(name, **payload), self.emit)

    def _context(self, emit: Callable[..., None] | None = None) -> PhaseContext:
        if what_is(self.workspace.root / ".venv") == "a folder":  # made by an earlier process
            support_site(self.home.cache_dir)  # its pip, seen by the sandbox from now on
        return PhaseContext(
            self.task,
            self.workspace,
            self._run_command,
            cache_dir=self.home.cache_dir,
            baseline=self.baseline,
            records=self.run.dir,
            emit=emit or self.emit,
            changed=self.source and (lambda: self._touched(emit or self.emit)),
        )

    def _touched(self, emit: Callable[..., None]) -> list[str]:
        """What an existing project's change touched (for its checks; what git's guard
        removed first is said, as at a commit)."""
        said = lambda text: emit("git_guard", text=text)  # noqa: E731
        return sources.touched(self.source, self.workspace.root, said)

    # ------------------------------------------------------------------ checks and learning
    def _run_command(
        self,
        command: str,
        timeout_s: float | None = None,
        install: InstallStep | None = None,
        visible: Sequence[Path] = (),
        writable: Sequence[Path] = (),
    ):
        """A command of a phase's check, with the workspace's virtual environment. Only an
        install step cadillac issued brings the network (run_command checks it); a judge
        of cadillac's (the story driver) also sees its own folders (``visible``,
        ``writable``)."""
        with self.project.own_command():  # what it leaves is cadillac's, not the change
            result = run_command(
                command,
                self.run.workspace,
                self.config.executor,
                timeout_s=timeout_s,
                path_prefix=[self.venv_bin],
                env=self.env,
                stop=self.stop,
                install=install,
                visible=visible,
                writable=writable,
            )
        (self.phase_emit or self.emit)(
            "command",
            command=command,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            seconds=round(result.seconds, 3),
            output_bytes=result.output_bytes,
            sandboxed=result.sandboxed,
            online=bool(install and install.network),
            limit=result.limit,
        )
        return result

    def _end_phase(self, p: PhaseRun, learn: bool = True, reflect: bool = True) -> None:
        r = p.result
        r.seconds = round(time.perf_counter() - p.started, 3)
        self.emit(
            "phase_end",
            phase=r.phase,
            outcome=r.outcome,
            rounds=r.rounds,
            seconds=r.seconds,
            check=r.check,
        )
        self._hook("phase_end", phase=r.phase, summary=r.model_dump(mode="json"))
        if not learn:
            return
        tags = self._tags()
        files = len(self.workspace.files())
        self.learning.record_phase(r.phase, r.rounds, files, tags=tags, outcome=r.outcome)
        if self.config.reflect and reflect:
            self._reflect(p, tags)

    def _reflect(self, p: PhaseRun, tags: list[str]) -> None:
        saved, r = self.memory_tool.phase_saves, p.result
        outcome = f"{r.outcome} after {r.rounds} round(s); {r.check}"
        try:
            lessons, skipped, answer = reflect(
                self.llm, self.task, r.phase, outcome, p.messages, tags, saved
            )
        except ModelError as exc:
            self.emit("reflection_failed", phase=r.phase, error=str(exc))
            return
        for reason in skipped:
            self.emit("reflection_skipped_line", phase=r.phase, reason=reason)
        record = ReflectionRecord(phase=r.phase, answer=answer, skipped=list(skipped))
        for lesson in lessons:
            stored_id, merged = self.learning.save_lesson(lesson)
            record.lessons.append(
                DrawnLesson(
                    id=stored_id,
                    type=lesson.type,
                    polarity=lesson.polarity,
                    trigger=lesson.trigger,
                    fix=lesson.fix,
                )
            )
            if stored_id is not None:
                self.summary.lessons_saved.append(stored_id)
            self.emit(
                "lesson_saved",
                phase=r.phase,
                id=stored_id,
                merged=merged,
                deferred=stored_id is None,
                trigger=lesson.trigger,
            )
            self._hook("lesson_saved", lesson=_lesson_payload(lesson, stored_id))
        trajectory.append(self.run.dir, record)
        self.emit(
            "reflection",
            phase=r.phase,
            lessons=len(lessons),
            skipped=len(skipped),
            answer_chars=len(answer),
        )

    def _reinforce(self) -> None:
        """Boost what a passed build applied; penalise only on a failure of the build's own
        making (a check that failed, a phase out of rounds). A stop for cost or time, an
        interrupt, a model that could not be reached or an internal error says nothing
        about the lessons, so it changes no confidence (:meth:`_failed_on_merits`)."""
        s = self.summary
        judged = s.status == "passed" or self._failed_on_merits()
        if self.skills and judged:
            names = [skill.name for skill in self.skills]
            changed = self.learning.skill_outcome(names, s.status == "passed")
            self.emit("skills_reinforced", names=changed, passed=s.status == "passed")
        applied = sorted({i for p in s.phases for i in p.applied_lessons})
        s.lessons_applied = applied
        if not applied:
            return
        if s.status == "passed":
            s.lessons_boosted = self.learning.boost(applied)
            self.emit("lessons_boosted", ids=s.lessons_boosted)
        elif judged and self.failure:
            s.lessons_penalised = self.learning.penalize(applied, self.failure)
            self.emit("lessons_penalised", ids=s.lessons_penalised, error=self.failure[:500])

    def _failed_on_merits(self) -> bool:
        """Whether the build failed because its last phase did (not a stop or an error)."""
        s = self.summary
        return s.status == "failed" and bool(s.phases) and s.phases[-1].outcome != "error"

    def _tags(self) -> list[str]:
        try:
            stack = load_plan(self.run.workspace).stack
        except PlanError:
            stack = []
        return sorted(set(self.tags) | {t.lower() for t in stack})

    def _guard_limits(self) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt  # the one who runs this build stopped it
        limit = self.config.max_seconds
        if limit is not None and time.time() - self.started > limit:
            raise CostLimitReached(
                f"stopped after the time limit of {limit:g} s; resume with --resume {self.run.id}"
            )
        totals = self.llm.totals
        calls = max(totals.calls, 1)
        cap, spent = self.config.max_cost_usd, totals.cost_usd
        if cap is not None and spent is not None and spent + spent / calls > cap:
            raise CostLimitReached(f"{cost_stop(cap, spent)}; resume with --resume {self.run.id}")
        tokens, used = self.config.max_tokens, totals.tokens_in + totals.tokens_out
        if tokens is not None and used + used / calls > tokens:
            raise CostLimitReached(
                f"stopped before the tokens pass --max-tokens {tokens} (spent {used:,}); "
                f"resume with --resume {self.run.id}"
            )

    def _progress(self, p: PhaseRun, action: str) -> None:
        t, r = self.llm.totals, p.result
        self.on_progress(
            Progress(
                r.phase,
                r.rounds,
                r.budget,
                action,
                since=time.time(),
                tokens=t.tokens_in + t.tokens_out,
                cost_usd=t.cost_usd,
            )
        )

    def _draft_skill(self) -> None:
        """A passing single build whose work recurs drafts a skill (one short extra call)."""
        if not isinstance(self.learning, HomeLearning) or self.summary.kind != "build":
            return  # a matrix run or a trial measures; it does not write skills
        found = find_recurrence(
            self.home.runs_dir, self.run.id, self._tags(), self.run.workspace, self.skillbook
        )
        if found is None:
            return
        try:
            plan = load_plan(self.run.workspace).model_dump_json(indent=1)
        except PlanError:
            return
        skill, why = draft_skill(self.llm, self.task, found, plan)
        if skill is None:
            self.emit("skill_draft_refused", runs=found.runs, reason=why[:500])
            return
        skill.origin = f"build {self.run.id}"
        try:
            self.learning.save_skill(skill)
        except BadSkill as exc:  # a skill of that name exists: a person's is never replaced
            self.emit("skill_draft_refused", runs=found.runs, reason=str(exc)[:500])
            return
        self.summary.skill_written = skill.name
        self.emit("skill_written", name=skill.name, runs=found.runs, tags=found.tags)

    def _finish(self) -> None:
        self.summary.ended = time.time()
        self._save()
        self.emit("build_end", status=self.summary.status, reason=self.summary.reason)
        summary = self.summary.model_dump(mode="json") | {"home": str(self.home.root)}
        self._hook("build_end", summary=summary)

    def _save(self) -> None:
        s, t = self.summary, self.llm.totals
        s.seconds = round(self.base_seconds + time.time() - self.started, 3)
        s.llm_calls, s.failed_attempts = t.calls, t.failed_attempts
        s.calls_by_model = dict(t.answered_by)
        s.tokens_in, s.tokens_out, s.cost_usd = t.tokens_in, t.tokens_out, t.cost_usd
        s.tokens_cached = t.tokens_cached
        s.files = self.workspace.files()
        s.memory_saved = list(self.memory_tool.saved)
        self.run.save_summary(s)


def written_path(arguments: str) -> str:
    """The ``path`` argument of a file tool's call that succeeded ("" if there is none)."""
    try:
        path = json.loads(arguments).get("path", "")
    except (ValueError, AttributeError):
        return ""
    return path if isinstance(path, str) else ""


def check_keys(llm: LLMConfig) -> None:
    """Refuse, in one line naming the variable, a hosted model whose API key is not set: found
    now, not at the first model call after a run folder was made. cadillac's own back ends,
    a server given by ``--api-base`` and a key given in the config need none."""
    import os

    from orchestrator.llm.keys import provider_env

    for endpoint in llm.endpoints():
        if endpoint.api_key or endpoint.api_base:
            continue
        names = [n for n in provider_env(endpoint.model, None) if n.endswith("_API_KEY")]
        if names and not any(os.environ.get(name) for name in names):
            raise CadillacError(
                f"model {endpoint.model} needs {names[0]}, which is not set: export it, "
                "or give --api-base for a server of your own"
            )


class NoLearning(DeferredLearning):
    """The learning of a resumed build its matrix run did not let learn: queued, never
    applied, and nothing said to be boosted."""

    def boost(self, ids: list[str]) -> list[str]:
        return []

    def skill_outcome(self, names: list[str], passed: bool) -> list[str]:
        return []


def _lesson_payload(lesson: Lesson, stored_id: str | None) -> dict:
    data = lesson.model_dump(mode="json")
    data["id"] = stored_id or data.get("id") or ""
    return data
