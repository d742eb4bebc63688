"""A run's folder: what it was asked, what happened (as it happened), and how it ended.

``runs/<run-id>/`` under the home holds ``task.json`` (the request and the
resolved configuration), ``events.jsonl`` (one :class:`Event` per step, appended
and flushed as it happens, so a killed run can still be read), ``llm.jsonl``
(every model attempt, written by :mod:`orchestrator.llm.client`), ``summary.json``
(rewritten after every phase, so it is current even after a crash between
phases) and ``workspace/`` (the project being built). Run ids sort by time.

A record that cannot be read (not UTF-8, not JSON, a value out of place) makes its run
*unreadable*: :class:`RunUnreadable` says which file and why, in one line, and a listing
shows the run as such instead of stopping. :func:`read_record` reads the records of the
other kinds of run (matrix, improve, nightly) the same way.

:meth:`Run.remove` takes a run away (``cadillac runs prune``): under its lock, never
following a link, and for an enhance run of a git repository with the worktree and branch
it made there.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import shutil
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from filelock import FileLock, Timeout
from pydantic import BaseModel, Field, ValidationError

from orchestrator.errors import CadillacError
from orchestrator.loop.source import Source
from orchestrator.sandbox.files import append_file, remove_tree, replace_file
from orchestrator.sandbox.git import GitError, git
from phases.suite import SuiteInventory

SCHEMA = 1
PhaseOutcome = Literal["passed", "budget_exhausted", "error", "skipped"]
RunStatus = Literal["running", "passed", "failed", "stopped", "interrupted"]
"""stopped: a cost or time limit ended it; interrupted: Ctrl-C, SIGTERM, or a killed process."""


class BaselineRecord(BaseModel):
    """The project an enhance build started from, as its checks hold the change to it."""

    test_command: str | None = None
    """The project's own test command: given with ``--test-cmd``, or found in its files."""
    suite: SuiteInventory = Field(default_factory=SuiteInventory)
    dependency_files: dict[str, str] = Field(default_factory=dict)
    """Dependency file -> sha256 at the start."""
    failing: str | None = None
    """What the project's own tests said when run once before the first phase, when they
    failed (``cadillac enhance`` runs them); None when they passed or did not run."""
    installed: str = ""
    """What the install before the first phase did, when it passed ("" otherwise): the
    deps phase keeps it when no dependency file changed."""


class MatrixOrigin(BaseModel):
    """The matrix run a build was one of, and whether that run let it learn: a resumed build
    learns (memory, budgets, skills) only as its matrix run would have let it."""

    run: str
    """The matrix run's id (``matrix-…``)."""
    matrix: str
    """The matrix folder its task came from."""
    split: Literal["train", "holdout"]
    learn: bool
    """False for a holdout task (what it teaches would leak the holdout) and under
    ``--no-learn``."""


class TaskRecord(BaseModel):
    v: int = SCHEMA
    run_id: str
    task: str
    created: float = Field(default_factory=time.time)
    cadillac_version: str
    config: dict[str, Any]
    """The fully resolved build configuration (the API key is never written)."""
    kind: Literal["build", "enhance"] = "build"
    """``enhance``: a change to an existing project (``cadillac enhance`` and ``iterate``)."""
    source: Source | None = None
    """Where an enhance build's project came from and where its change is recorded."""
    baseline: BaselineRecord | None = None
    matrix: MatrixOrigin | None = None
    """Set for a build of a matrix run (a task.json written before it existed has none)."""

    @property
    def run_kind(self) -> str:
        """The kind ``runs list`` names: ``iterate`` for an enhance build of a run's
        workspace (``cadillac iterate``), else ``build`` or ``enhance``."""
        if self.source is not None and self.source.parent_run:
            return "iterate"
        return self.kind

    @property
    def learns(self) -> bool:
        """Whether the build may write the home's memory, budgets and skills."""
        return self.matrix is None or self.matrix.learn


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


def lock_held(path: Path) -> bool:
    """Whether a live process holds the lock file at ``path`` (a killed one holds nothing:
    the kernel drops its locks). Asked without writing anything: the file is opened for
    reading (a missing file is a lock nobody holds; a link is never followed) and a shared
    lock is tried and let go at once, so a listing or the dashboard creates no lock file
    and takes no lock a starting run could find taken. A file that cannot be opened for
    another reason (a folder not ours to read) is not held by a run of ours."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


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
    calls_by_model: dict[str, int] = Field(default_factory=dict)
    """Of ``llm_calls``, those each model answered (the primary or a fallback)."""
    failed_attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    """Of ``tokens_in``, those the provider read from its prompt cache (the stable prefix)."""
    cost_usd: float | None = None
    lessons_recalled: list[str] = Field(default_factory=list)
    lessons_applied: list[str] = Field(default_factory=list)
    lessons_saved: list[str] = Field(default_factory=list)
    lessons_boosted: list[str] = Field(default_factory=list)
    lessons_penalised: list[str] = Field(default_factory=list)
    notes_seen: list[str] = Field(default_factory=list)
    """Notes whose full text the build's prompt carried (pinned and relevant ones)."""
    skills_seen: list[str] = Field(default_factory=list)
    """Skills that matched the task: in full in the plan phase, by name in the others."""
    skill_written: str | None = None
    """The skill drafted at the end of this build, when its work recurred."""
    memory_saved: list[str] = Field(default_factory=list)
    """What the model saved with the memory tool: ``lesson:ID``, ``note:NAME``, ``skill:NAME``."""
    files: list[str] = Field(default_factory=list)
    unsafe_no_sandbox: bool = False
    """The user ran the model's commands without a sandbox (``--unsafe-no-sandbox``)."""
    kind: Literal["build", "enhance"] = "build"
    branch: str | None = None
    """An enhance build's branch, holding one commit per phase that changed something."""
    changed: list[str] = Field(default_factory=list)
    """The files an enhance build's change touches (``changes.patch`` holds it)."""
    left_out: list[str] = Field(default_factory=list)
    """Files an enhance build left out of its change: what cadillac's own installs, builds
    and test runs made or changed in the workspace (a lock file, a coverage folder)."""
    applied: str = ""
    """What ``--apply`` did with the change, when it was asked to."""


def new_run_id() -> str:
    return f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


BUILD_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")
"""What :func:`new_run_id` makes: a build's folder name (other kinds add a prefix)."""


def id_time(run_id: str) -> float | None:
    """When a run with this id (``[kind-]YYYYmmdd-HHMMSS-…``) started, to the second."""
    match = re.search(r"(\d{8}-\d{6})", run_id)
    if not match:
        return None
    try:
        return datetime.strptime(match.group(1), "%Y%m%d-%H%M%S").timestamp()
    except ValueError:
        return None


class RunUnreadable(CadillacError):
    """A run's record cannot be read: which file, and why (one line)."""

    def __init__(self, run_id: str, file: str, reason: str):
        super().__init__(f"run {run_id} is unreadable: {file}: {reason}")
        self.file, self.reason = file, reason

    @property
    def why(self) -> str:
        """``<file>: <reason>``, for a listing's row."""
        return f"{self.file}: {self.reason}"


Record = TypeVar("Record", bound=BaseModel)


def _problem(exc: ValidationError) -> str:
    """What is wrong with a record, in words: the first one or two errors."""
    parts = []
    for error in exc.errors()[:2]:
        message = error["msg"]
        if error["type"] == "json_invalid":
            return "not JSON (" + message.removeprefix("Invalid JSON: ") + ")"
        where = ".".join(str(x) for x in error["loc"])
        got = error.get("input")
        shown = "" if isinstance(got, dict | list) else f" (got {str(got)[:60]!r})"
        parts.append(f"{where + ': ' if where else ''}{message}{shown}")
    more = len(exc.errors()) - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def read_record(path: Path, model: type[Record], run_id: str) -> Record:
    """The record in ``path``; RunUnreadable (naming the file and the reason) when it cannot
    be read as a ``model``."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RunUnreadable(run_id, path.name, "missing") from None
    except OSError as exc:
        raise RunUnreadable(run_id, path.name, exc.strerror or str(exc)) from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = data[exc.start]
        raise RunUnreadable(
            run_id, path.name, f"not UTF-8 text (byte 0x{byte:02x} at offset {exc.start})"
        ) from None
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        raise RunUnreadable(run_id, path.name, _problem(exc)) from None


BUILD_KINDS = ("build", "enhance", "iterate")
"""The kinds of build run (:attr:`TaskRecord.run_kind`): a folder with a task.json."""
OTHER_KINDS = ("matrix", "improve", "nightly")
"""The kinds of run besides builds, each a ``<kind>-<id>`` folder in runs/."""

HINTS = {
    "matrix": "'cadillac runs show {id}' lists its builds (each can be resumed), and "
    "'cadillac matrix run' starts a new matrix run",
    "improve": "'cadillac runs show {id}' shows it, and 'cadillac improve' starts a new cycle",
    "nightly": "'cadillac runs show {id}' shows it and its report",
}
"""What to do instead, for an id of each other kind given where a build's is wanted."""


def other_kind(run_id: str) -> str | None:
    """The kind of a ``<kind>-<id>`` run id of another kind than a build; None for a build's."""
    kind, _, rest = run_id.partition("-")
    return kind if kind in OTHER_KINDS and rest else None


def check_run_id(run_id: str, runs_dir: Path) -> str:
    """``run_id`` when it names a folder right in ``runs_dir`` (never a path that leaves it);
    CadillacError otherwise."""
    if not run_id.strip():
        raise CadillacError("the run id is empty: give one from 'cadillac runs list'")
    if run_id in (".", "..") or any(c in run_id for c in "/\\\0"):
        raise CadillacError(f"no run {run_id!r} in {runs_dir} (see 'cadillac runs list')")
    return run_id


class RunBusy(CadillacError):
    """A run a process holds the lock of: it is running, and is left alone."""

    def __init__(self, run_id: str):
        super().__init__(f"run {run_id} is running")


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
        return lock_held(self.lock_path)

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
        """The run's folder with its task.json, or no folder at all: the record is made into
        text before anything is created (a task that cannot be stored makes nothing)."""
        try:
            text = record.model_dump_json(indent=2) + "\n"
        except ValueError as exc:  # text that is not UTF-8 (a lone surrogate) cannot be stored
            raise CadillacError(f"the run cannot be recorded: {exc}") from None
        run = cls(runs_dir, record.run_id)
        run.dir.mkdir(parents=True, exist_ok=False)
        try:
            replace_file(run.task_path, text)
            run.workspace.mkdir()
        except BaseException:
            shutil.rmtree(run.dir, ignore_errors=True)
            raise
        return run

    @classmethod
    def open(cls, runs_dir: Path, run_id: str) -> Run:
        """The build run ``run_id``; CadillacError when there is none, saying what kind of run
        the id names when it is another kind's (``runs list`` shows those too)."""
        run = cls(runs_dir, check_run_id(run_id, runs_dir))
        if not run.task_path.is_file():
            kind = other_kind(run_id)
            if kind is not None and run.dir.is_dir():
                hint = HINTS[kind].format(id=run_id)
                article = "an" if kind[0] in "aeiou" else "a"
                raise CadillacError(
                    f"{run_id} is {article} {kind} run, not a build: 'build --resume' and "
                    f"'iterate' take the id of a build or enhance run; {hint}"
                )
            raise CadillacError(f"no run {run_id!r} in {runs_dir} (see 'cadillac runs list')")
        return run

    def remove(self, dry_run: bool = False) -> list[str]:
        """Remove the run's folder, never following a link in it, and an enhance run's
        worktree and branch in the user's repository (``git worktree remove`` and ``git
        branch -D`` there, after the worktree's files went by :func:`remove_tree`, so git
        walks none of what the model left). RunBusy while a process holds the run's lock;
        the lock is held while the run goes, so no resume starts in it meanwhile. With
        ``dry_run`` nothing goes. Returns what was (or would be) done besides the folder,
        and what was left."""
        if dry_run:
            if self.live():
                raise RunBusy(self.id)
            return self._worktree_gone(dry_run=True)
        lock = FileLock(str(self.lock_path), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise RunBusy(self.id) from None
        except OSError:  # a folder not ours to write: it cannot be removed either
            return [f"left behind: {self.dir} is not writable"]
        try:
            notes = self._worktree_gone(dry_run=False)
            left = remove_tree(self.dir)
        finally:
            lock.release()
        return notes + ([f"left behind: {left}"] if left else [])

    def _worktree_gone(self, dry_run: bool) -> list[str]:
        """Remove an enhance run's worktree and branch from the user's repository (see
        :meth:`remove`); what was done, or why not."""
        if not self.task_path.is_file():
            return []
        try:
            source = self.task().source
        except RunUnreadable as exc:
            pointer = self.workspace / ".git"
            if pointer.is_file() and not pointer.is_symlink():
                return [
                    f"its worktree's repository is unknown ({exc.why}): 'git worktree prune' "
                    "there drops its record"
                ]
            return []
        if source is None or source.kind != "git":
            return []  # a copied folder's repository is in the run folder: it goes with it
        repo, branch = Path(source.path), source.branch
        if branch != f"cadillac/{self.id}":  # never a branch cadillac did not make for it
            return [f"kept the branch {branch!r} in {repo}: not one cadillac made for this run"]
        if dry_run:
            return [f"with its worktree and branch {branch} in {repo}"]
        if not (repo / ".git").exists():
            return [f"its repository {repo} is gone: nothing removed there"]
        left = remove_tree(self.workspace)
        notes = [f"with its worktree and branch {branch} in {repo}"]
        try:
            listed = git("worktree", "list", "--porcelain", repo=repo).splitlines()
            ours = self.workspace.resolve()
            if any(Path(line[9:]).resolve() == ours for line in listed if line[:9] == "worktree "):
                git("worktree", "remove", "--force", str(self.workspace), repo=repo)
            if git("branch", "--list", branch, repo=repo).strip():
                git("branch", "-D", branch, repo=repo)
        except GitError as exc:
            notes.append(f"left in {repo}: {exc}")
        return notes + ([f"left behind: {left}"] if left else [])

    def save_task(self, record: TaskRecord) -> None:
        replace_file(self.task_path, record.model_dump_json(indent=2) + "\n")

    @property
    def patch_path(self) -> Path:
        return self.dir / "changes.patch"

    def task(self) -> TaskRecord:
        """The run's task.json (RunUnreadable when it cannot be read)."""
        return read_record(self.task_path, TaskRecord, self.id)

    def event(self, kind: str, phase: str | None = None, round: int | None = None, **data) -> None:
        line = Event(kind=kind, phase=phase, round=round, data=data).model_dump_json()
        append_file(self.events_path, line + "\n")

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
        replace_file(self.summary_path, summary.model_dump_json(indent=2) + "\n")

    def summary(self) -> RunSummary | None:
        """The run's summary.json; None before its first phase ended (RunUnreadable when it
        cannot be read)."""
        if not self.summary_path.exists():
            return None
        return read_record(self.summary_path, RunSummary, self.id)

    def status(self, summary: RunSummary | None) -> RunStatus:
        """The build's status from its summary: ``running`` before its first phase ended,
        and ``interrupted`` when it says running while no process builds in it (killed)."""
        status = summary.status if summary else "running"
        return "interrupted" if status == "running" and not self.live() else status

    def row(self) -> dict[str, Any]:
        """The run as ``cadillac runs list`` shows it (``--json`` prints these keys): its
        status is ``unreadable``, with the reason, when a record cannot be read, and
        ``interrupted`` when it says running while no process builds in it."""
        row: dict[str, Any] = {
            "run_id": self.id,
            "kind": "build",
            "task": None,
            "status": "unreadable",
            "phases_passed": 0,
            "cost_usd": None,
            "tokens": None,
            "started": id_time(self.id),
            "ended": None,
            "reason": "",
        }
        try:
            if not self.task_path.exists():
                raise RunUnreadable(self.id, "task.json", "missing (the run stopped as it began)")
            task = self.task()
            row["task"], row["started"], row["kind"] = task.task, task.created, task.run_kind
            s = self.summary()
        except RunUnreadable as exc:
            row["reason"] = exc.why
            return row
        status = self.status(s)  # no summary yet: its first phase is on
        if status == "interrupted" and (s is None or s.status == "running"):  # process gone
            row["reason"] = "its process is gone (killed); resume it with --resume"
        row["status"] = status
        if s is not None:
            row["phases_passed"] = sum(p.outcome == "passed" for p in s.phases)
            row["cost_usd"], row["started"], row["ended"] = s.cost_usd, s.started, s.ended
            row["tokens"] = s.tokens_in + s.tokens_out
            row["reason"] = row["reason"] or s.reason
        return row


def list_runs(runs_dir: Path) -> list[Run]:
    """Build runs, newest first: folders with a task.json, and folders named like a build
    that lack one (a run stopped as it began: listed as unreadable)."""
    if not runs_dir.is_dir():
        return []
    found = [
        Run(runs_dir, p.name)
        for p in runs_dir.iterdir()
        if p.is_dir() and ((p / "task.json").is_file() or BUILD_ID.fullmatch(p.name))
    ]
    return sorted(found, key=lambda r: r.id, reverse=True)
