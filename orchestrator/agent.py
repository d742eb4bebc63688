"""The build loop: six phases, each a fresh conversation under a learned budget of rounds.

For each phase from the first that has not passed: build its opening (task,
plan, what earlier phases did, the workspace's files, recalled lessons with
their ids), then run rounds — one model turn, its tool calls, and, when the
model calls ``finish_phase``, the phase's check. A failing check goes back to
the model as the next message. A phase ends ``passed``, ``budget_exhausted``
(its rounds ran out) or ``error`` (the model could not be reached, or the cost
cap was hit); a phase that does not pass ends the build, which can be resumed.

After every phase, passed or not, the model reflects once and the lessons it
draws are saved (dedup merges restatements), and one budget row is recorded.
At the end, a passing build boosts the lessons the model cited as applied; a
failing one penalises those whose trigger the failure echoes. Everything is
written to the run's events as it happens, and the summary after each phase.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from memory import MemoryStore, PhaseBudgets, format_for_prompt
from memory.tags import infer_tags_from_text, stack_tags
from orchestrator import __version__
from orchestrator.context import compact
from orchestrator.errors import CadillacError
from orchestrator.executor import ExecConfig, run_command
from orchestrator.home import Home
from orchestrator.learning import HomeLearning, Learning
from orchestrator.llm import LLMClient, LLMConfig, ModelError, check_model
from orchestrator.reflect import PhaseRecord, reflect
from orchestrator.runs import PhaseSummary, Run, RunSummary, TaskRecord, new_run_id
from orchestrator.tools import TOOLS, ToolBox
from orchestrator.workspace import Workspace
from phases import PHASES, load_phases
from phases.base import Acceptance, PhaseContext, PlanError, load_plan, read_prompt

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
    max_cost_usd: float | None = Field(default=None, gt=0)
    """End the build (resumably) before the spend would pass this."""
    max_seconds: float | None = Field(default=None, gt=0)
    """End the build (resumably) once it has run this long (a matrix task's timeout)."""
    reflect: bool = True
    """Ask the model for lessons after every phase."""
    context_chars: int = Field(default=240_000, ge=10_000)
    """When a phase's conversation grows past this, older tool results are elided."""


class CostLimitReached(CadillacError):
    """The build hit its cost or time limit; it ends cleanly and can be resumed."""


@dataclass
class Progress:
    phase: str
    round: int
    budget: int
    action: str


class Builder:
    """One build run (new or resumed) of one task."""

    def __init__(
        self,
        home: Home,
        config: BuildConfig,
        task: str,
        run: Run,
        acceptance: Acceptance | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        learning: Learning | None = None,
    ):
        self.home, self.config, self.task, self.run = home, config, task, run
        self.acceptance = acceptance
        self.on_progress = on_progress or (lambda p: None)
        self.store = MemoryStore(home.memory_path)
        self.history = PhaseBudgets(home.budgets_path)
        self.learning: Learning = learning or HomeLearning(home)
        self.llm = LLMClient(config.llm, log_path=run.llm_path)
        self.workspace = Workspace(run.workspace)
        self.venv_bin = run.workspace / ".venv" / "bin"
        self.toolbox = ToolBox(self.workspace, config.executor, path_prefix=[self.venv_bin])
        self.phases = load_phases()
        self.summary = run.summary() or RunSummary(run_id=run.id, task=task, model=config.llm.model)
        self.tags = sorted(stack_tags(infer_tags_from_text(task)))

    @classmethod
    def start(cls, home: Home, config: BuildConfig, task: str, **kw) -> Builder:
        for model in [config.llm.model, *config.llm.fallback_models]:
            check_model(model)
        record = TaskRecord(
            run_id=new_run_id(),
            task=task,
            cadillac_version=__version__,
            config=config.model_dump(mode="json", exclude={"llm": {"api_key"}}),
        )
        return cls(home, config, task, Run.create(home.runs_dir, record), **kw)

    @classmethod
    def resume(cls, home: Home, config: BuildConfig, run_id: str, **kw) -> Builder:
        for model in [config.llm.model, *config.llm.fallback_models]:
            check_model(model)
        run = Run.open(home.runs_dir, run_id)
        return cls(home, config, run.task().task, run, **kw)

    # ------------------------------------------------------------------ the loop
    def build(self) -> RunSummary:
        s = self.summary
        s.status, s.reason, s.ended = "running", "", None
        started, self._base_seconds = time.time(), s.seconds
        self._started = started
        recalled = self.store.recall(self.task, limit=self.config.recall_limit)
        self.lessons_text = format_for_prompt(recalled, self.config.lessons_chars)
        self.recalled_ids = [r.lesson.id for r in recalled]
        s.lessons_recalled = self.recalled_ids
        budgets = self.history.compute_budgets(self.tags)
        done = {p.phase for p in s.phases if p.outcome == "passed"}
        s.phases = [p for p in s.phases if p.outcome == "passed"]
        self.run.event(
            "build_start",
            task=self.task,
            resumed=bool(done),
            tags=self.tags,
            recalled=self.recalled_ids,
            budgets={k: b.model_dump() for k, b in budgets.items()},
        )
        self._failure = ""
        try:
            for name in PHASES:
                if name in done:
                    continue
                result = self.run_phase(name, budgets[name].rounds)
                s.phases.append(result)
                self._save(started)
                if result.outcome != "passed":
                    s.status, s.reason = "failed", f"{name}: {result.outcome} ({result.check})"
                    break
            else:
                s.status, s.reason = "passed", "all six phases passed"
        except CostLimitReached as exc:
            s.status, s.reason = "stopped", str(exc)
        except KeyboardInterrupt:
            s.status, s.reason = "stopped", f"interrupted; resume with --resume {self.run.id}"
            self._finish(started)
            raise
        except Exception as exc:  # a bug: keep the traceback in the run, then let it surface
            s.status, s.reason = "failed", f"internal error: {type(exc).__name__}: {exc}"
            self.run.event("internal_error", traceback=traceback.format_exc())
            self._finish(started)
            raise
        self._reinforce(self._failure)
        self._finish(started)
        return s

    def _finish(self, started: float) -> None:
        self.summary.ended = time.time()
        self._save(started)
        self.run.event("build_end", status=self.summary.status, reason=self.summary.reason)

    def run_phase(self, name: str, budget: int) -> PhaseSummary:
        phase = self.phases[name]
        ctx = PhaseContext(
            self.task,
            self.workspace,
            self._run_command,
            self.acceptance,
            cache_dir=self.home.root / ".cache",
        )
        record = PhaseRecord(self.task, name)
        result = PhaseSummary(phase=name, outcome="budget_exhausted", budget=budget)
        started = time.perf_counter()
        self.run.event("phase_start", phase=name, budget=budget)
        messages = self._opening(phase)
        try:
            while result.rounds < budget:
                result.rounds += 1
                self._progress(name, result.rounds, budget, "thinking")
                if self._turn(phase, ctx, messages, record, result):
                    result.outcome = "passed"
                    break
        except ModelError as exc:
            result.outcome, result.check = "error", f"model error: {exc}"
            self._failure = str(exc)
        except CostLimitReached as exc:
            result.outcome, result.check = "error", str(exc)
            self._end_phase(name, result, record, started, record_budget=False)
            raise
        if result.outcome == "budget_exhausted" and not result.check:
            result.check = f"finish_phase was not called within {budget} rounds"
        self._end_phase(name, result, record, started)
        return result

    def _turn(self, phase, ctx, messages, record, result) -> bool:
        """One round: a model turn and its tool calls; True when the phase's check passed."""
        name = phase.name
        self._guard_limits()
        compact(messages, self.config.context_chars)
        reply = self.llm.complete(messages, TOOLS)
        messages.append(reply.as_message())
        if not reply.tool_calls:
            messages.append({"role": "user", "content": NUDGE})
            self.run.event("no_tool_call", phase=name, round=result.rounds)
            return False
        finish = None
        for call in reply.tool_calls:
            self._progress(name, result.rounds, result.budget, call.name)
            out = self.toolbox.dispatch(call)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": out.content})
            record.tool(call.name, call.arguments, out.ok, out.content)
            self.run.event(
                "tool",
                phase=name,
                round=result.rounds,
                tool=call.name,
                ok=out.ok,
                arguments_chars=len(call.arguments),
                result_chars=len(out.content),
                error=None if out.ok else out.content[:300],
            )
            finish = out.finish or finish
        if finish is None:
            return False
        result.finish_summary = finish.summary
        cited = [i for i in finish.applied_lessons if i in self.recalled_ids]
        result.applied_lessons = sorted(set(result.applied_lessons) | set(cited))
        self._progress(name, result.rounds, result.budget, "checking")
        check = phase.check(ctx)
        result.check = check.summary
        record.note(f"check: {check.for_model()}")
        self.run.event(
            "check",
            phase=name,
            round=result.rounds,
            passed=check.passed,
            summary=check.summary,
            cited=cited,
            unknown_ids=sorted(set(finish.applied_lessons) - set(cited)),
        )
        if not check.passed:
            self._failure = check.for_model()
            messages.append({"role": "user", "content": check.for_model()})
        return check.passed

    # ------------------------------------------------------------------ helpers
    def _opening(self, phase) -> list[dict]:
        system = read_prompt("system") + "\n\n" + phase.prompt()
        if self.lessons_text:
            system += "\n\n" + self.lessons_text
        parts = [f"Task: {self.task}"]
        try:
            plan = load_plan(self.run.workspace)
            parts.append(f"Plan (plan.json):\n{plan.model_dump_json(indent=2)}")
        except PlanError:
            pass
        earlier = [
            f"- {p.phase}: {p.outcome}; {p.finish_summary or p.check}" for p in self.summary.phases
        ]
        if earlier:
            parts.append("Earlier phases:\n" + "\n".join(earlier))
        files = self.workspace.files()
        parts.append("Workspace files:\n" + ("\n".join(files) if files else "(empty)"))
        parts.append(f"You are in the {phase.name} phase. Begin.")
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": "\n\n".join(parts)},
        ]

    def _run_command(self, command: str, timeout_s: float | None = None, network: bool = False):
        env = {
            "VIRTUAL_ENV": str(self.venv_bin.parent),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_CACHE_DIR": "1",
        }
        result = run_command(
            command,
            self.run.workspace,
            self.config.executor,
            timeout_s=timeout_s,
            path_prefix=[self.venv_bin],
            env=env,
            network=network,
        )
        self.run.event(
            "command",
            command=command,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            seconds=round(result.seconds, 3),
            output_bytes=result.output_bytes,
            sandboxed=result.sandboxed,
        )
        return result

    def _end_phase(self, name, result, record, started, record_budget: bool = True) -> None:
        result.seconds = round(time.perf_counter() - started, 3)
        record.outcome = f"{result.outcome} after {result.rounds} round(s); {result.check}"
        self.run.event(
            "phase_end",
            phase=name,
            outcome=result.outcome,
            rounds=result.rounds,
            seconds=result.seconds,
            check=result.check,
        )
        tags = self._tags()
        if record_budget:
            self.learning.record_phase(
                name, result.rounds, len(self.workspace.files()), tags=tags, outcome=result.outcome
            )
        if self.config.reflect and record_budget:  # not after a stop for cost
            self._reflect(record, tags)

    def _reflect(self, record: PhaseRecord, tags: list[str]) -> None:
        try:
            lessons, skipped, answer = reflect(self.llm, record, tags, self.task)
        except ModelError as exc:
            self.run.event("reflection_failed", phase=record.phase, error=str(exc))
            return
        for reason in skipped:
            self.run.event("reflection_skipped_line", phase=record.phase, reason=reason)
        for lesson in lessons:
            stored_id, merged = self.learning.save_lesson(lesson)
            if stored_id is not None:
                self.summary.lessons_saved.append(stored_id)
            self.run.event(
                "lesson_saved",
                phase=record.phase,
                id=stored_id,
                merged=merged,
                deferred=stored_id is None,
                trigger=lesson.trigger,
            )
        self.run.event(
            "reflection",
            phase=record.phase,
            lessons=len(lessons),
            skipped=len(skipped),
            answer_chars=len(answer),
        )

    def _reinforce(self, failure: str) -> None:
        s = self.summary
        applied = sorted({i for p in s.phases for i in p.applied_lessons})
        s.lessons_applied = applied
        if not applied:
            return
        if s.status == "passed":
            s.lessons_boosted = self.learning.boost(applied)
            self.run.event("lessons_boosted", ids=s.lessons_boosted)
        elif failure:
            s.lessons_penalised = self.learning.penalize(applied, failure)
            self.run.event("lessons_penalised", ids=s.lessons_penalised, error=failure[:500])

    def _tags(self) -> list[str]:
        try:
            stack = load_plan(self.run.workspace).stack
        except PlanError:
            stack = []
        return sorted(set(self.tags) | {t.lower() for t in stack})

    def _guard_limits(self) -> None:
        limit = self.config.max_seconds
        if limit is not None and time.time() - self._started > limit:
            raise CostLimitReached(
                f"stopped after the time limit of {limit:g} s; resume with --resume {self.run.id}"
            )
        cap, spent = self.config.max_cost_usd, self.llm.totals.cost_usd
        if cap is None or spent is None:
            return
        last = spent / max(self.llm.totals.calls, 1)
        if spent + last > cap:
            raise CostLimitReached(
                f"stopped before the spend passes --max-cost {cap:g} USD (spent {spent:.4f}); "
                f"resume with --resume {self.run.id}"
            )

    def _progress(self, phase: str, round_: int, budget: int, action: str) -> None:
        self.on_progress(Progress(phase, round_, budget, action))

    def _save(self, started: float) -> None:
        s, t = self.summary, self.llm.totals
        s.seconds = round(self._base_seconds + time.time() - started, 3)
        s.llm_calls, s.failed_attempts = t.calls, t.failed_attempts
        s.tokens_in, s.tokens_out, s.cost_usd = t.tokens_in, t.tokens_out, t.cost_usd
        s.files = self.workspace.files()
        self.run.save_summary(s)
