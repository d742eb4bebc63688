"""A run's folder: what it was asked, what happened (as it happened), and how it ended.

``runs/<run-id>/`` under the home holds ``task.json`` (the request and the
resolved configuration), ``events.jsonl`` (one :class:`Event` per step, appended
and flushed as it happens, so a killed run can still be read), ``llm.jsonl``
(every model attempt, written by :mod:`orchestrator.llm.client`), ``summary.json``
(rewritten after every phase, so it is current even after a crash between
phases) and ``workspace/`` (the project being built). Run ids sort by time.
"""

from __future__ import annotations

import os
import secrets
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock, Timeout
from pydantic import BaseModel, Field

from orchestrator.errors import CadillacError

SCHEMA = 1
PhaseOutcome = Literal["passed", "budget_exhausted", "error", "skipped"]
RunStatus = Literal["running", "passed", "failed", "stopped", "interrupted"]
"""stopped: a cost or time limit ended it; interrupted: Ctrl-C, SIGTERM, or a killed process."""


class TaskRecord(BaseModel):
    v: int = SCHEMA
    run_id: str
    task: str
    created: float = Field(default_factory=time.time)
    cadillac_version: str
    config: dict[str, Any]
    """The fully resolved build configuration (the API key is never written)."""


class Event(BaseModel):
    v: int = SCHEMA
    ts: float = Field(default_factory=time.time)
    kind: str
    phase: str | None = None
    round: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class PhaseSummary(BaseModel):
    phase: str
    outcome: PhaseOutcome
    rounds: int = 0
    budget: int = 0
    seconds: float = 0.0
    check: str = ""
    """The last check's one-line result."""
    finish_summary: str = ""
    """What the model said when it finished the phase."""
    applied_lessons: list[str] = Field(default_factory=list)


class RunSummary(BaseModel):
    v: int = SCHEMA
    run_id: str
    task: str
    status: RunStatus = "running"
    reason: str = ""
    """Why the run ended as it did, in words."""
    model: str = ""
    started: float = Field(default_factory=time.time)
    ended: float | None = None
    seconds: float = 0.0
    phases: list[PhaseSummary] = Field(default_factory=list)
    llm_calls: int = 0
    failed_attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    lessons_recalled: list[str] = Field(default_factory=list)
    lessons_applied: list[str] = Field(default_factory=list)
    lessons_saved: list[str] = Field(default_factory=list)
    lessons_boosted: list[str] = Field(default_factory=list)
    lessons_penalised: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    unsafe_no_sandbox: bool = False
    """The user ran the model's commands without a sandbox (``--unsafe-no-sandbox``)."""


def new_run_id() -> str:
    return f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


class Run:
    """The folder of one build run, and its writers."""

    def __init__(self, runs_dir: Path, run_id: str):
        self.id = run_id
        self.dir = runs_dir / run_id
        self.workspace = self.dir / "workspace"
        self.task_path = self.dir / "task.json"
        self.events_path = self.dir / "events.jsonl"
        self.llm_path = self.dir / "llm.jsonl"
        self.summary_path = self.dir / "summary.json"
        self.lock_path = self.dir / "run.lock"

    def live(self) -> bool:
        """Whether a process is building in this run right now (it holds the run's lock)."""
        probe = FileLock(str(self.lock_path), timeout=0)
        try:
            probe.acquire()
        except Timeout:
            return True
        except OSError:  # a run folder that cannot be locked is not being built by us
            return False
        probe.release()
        return False

    def lock(self) -> FileLock:
        """The run's lock, taken: one process at a time builds in a run (a second --resume of a
        live run is refused, and touches nothing)."""
        lock = FileLock(str(self.lock_path), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise CadillacError(
                f"run {self.id} is being built by another process right now; "
                "wait for it to end, or resume it after it stopped"
            ) from None
        return lock

    @classmethod
    def create(cls, runs_dir: Path, record: TaskRecord) -> Run:
        run = cls(runs_dir, record.run_id)
        run.workspace.mkdir(parents=True, exist_ok=False)
        run.task_path.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return run

    @classmethod
    def open(cls, runs_dir: Path, run_id: str) -> Run:
        run = cls(runs_dir, run_id)
        if not run.task_path.is_file():
            raise CadillacError(f"no run {run_id!r} in {runs_dir} (see 'cadillac runs list')")
        return run

    def task(self) -> TaskRecord:
        return TaskRecord.model_validate_json(self.task_path.read_text(encoding="utf-8"))

    def event(self, kind: str, phase: str | None = None, round: int | None = None, **data) -> None:
        line = Event(kind=kind, phase=phase, round=round, data=data).model_dump_json()
        with self.events_path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()

    def events(self) -> list[Event]:
        if not self.events_path.is_file():
            return []
        out = []
        for line in self.events_path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(Event.model_validate_json(line))
            except ValueError:
                continue  # a line cut by a crash
        return out

    def save_summary(self, summary: RunSummary) -> None:
        tmp = self.summary_path.with_suffix(".json.tmp")
        tmp.write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.summary_path)

    def summary(self) -> RunSummary | None:
        if not self.summary_path.is_file():
            return None
        return RunSummary.model_validate_json(self.summary_path.read_text(encoding="utf-8"))


def list_runs(runs_dir: Path) -> list[Run]:
    """Runs with a task.json, newest first."""
    if not runs_dir.is_dir():
        return []
    found = [Run(runs_dir, p.name) for p in runs_dir.iterdir() if (p / "task.json").is_file()]
    return sorted(found, key=lambda r: r.id, reverse=True)
