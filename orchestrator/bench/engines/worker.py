"""One build of a matrix run, wherever it runs: what it is given and what it gives back.

:func:`run_job` is the one function every engine calls to build and score: a thread of
the coordinator, a worker process, a Ray task. It never writes the home's memory or
budgets: the learning a build makes is queued and returned in its :class:`Outcome`, and
the coordinator applies it (or drops it: holdout tasks, ``--no-learn``). Everything in a
job crosses a process (or machine) boundary, so it is plain data; the plugins are named,
not passed, and each worker loads them itself.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.bench.results import TaskRun
from orchestrator.bench.scoring import score_build
from orchestrator.bench.tasks import MatrixTask
from orchestrator.home import Home
from orchestrator.hooks import Hooks
from orchestrator.loop.agent import BuildConfig, Builder
from orchestrator.loop.learning import DeferredLearning
from orchestrator.loop.runs import MatrixOrigin
from orchestrator.sandbox.installs import remove_envs


class BuildJob(BaseModel):
    """One build of one task, as the coordinator hands it to an engine."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    home: Path
    task: MatrixTask
    repeat: int
    build: BuildConfig
    """The build's settings, its seed already set."""
    score: bool = True
    keep_envs: bool = False
    origin: MatrixOrigin
    keep_learning: bool = True
    """False: what the build learns is dropped (a holdout task, ``--no-learn``)."""
    plugins: list[str] | None = None
    """The ``--plugin`` names to load (None: no plugins at all)."""
    entry_points: bool = False
    """Load the installed plugins too."""
    env: dict[str, str] | None = None
    """The coordinator's environment, for a worker process of this machine (None: keep
    the worker's own: a Ray worker's)."""


class Outcome(BaseModel):
    """What came back from one build: its result, its learning, where it ran."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run: TaskRun
    ops: list[tuple[str, tuple[Any, ...]]] = Field(default_factory=list)
    """The learning the build made, in order (DeferredLearning's queue)."""
    files: dict[str, bytes] = Field(default_factory=dict)
    """The build's run folder's records, by relative path, when it ran where the home is
    not (a Ray node): the coordinator writes them into the home."""


def node_name() -> str:
    return socket.gethostname()


def run_job(
    job: BuildJob,
    on_builder: Callable | None = None,
    stop=None,
    hooks=None,
) -> Outcome:
    """Build and score ``job`` in ``job.home`` (see the module docstring); ``hooks`` are
    the plugins when the caller has them loaded (a thread of the coordinator)."""
    if hooks is None:
        hooks = (
            Hooks.none()
            if job.plugins is None
            else Hooks.load(job.plugins, entry_points=job.entry_points)
        )
    learning = DeferredLearning()
    run = run_one(
        Home(job.home),
        job.task,
        job.repeat,
        job.build,
        learning,
        job.score,
        stop,
        job.keep_envs,
        hooks,
        job.origin,
        on_builder,
    )
    run.node = node_name()
    return Outcome(run=run, ops=learning.ops if job.keep_learning else [])


def run_one(
    home: Home,
    task: MatrixTask,
    repeat: int,
    build: BuildConfig,
    learning: DeferredLearning,
    score: bool = True,
    stop: threading.Event | None = None,
    keep_envs: bool = False,
    hooks: Hooks | None = None,
    origin: MatrixOrigin | None = None,
    on_builder: Callable[[Builder, MatrixTask, int], None] | None = None,
) -> TaskRun:
    """One build of one task, scored (unless ``score`` is False: an improve trial's builds
    are scored by the cycle, with checks the trial never sees). Unless ``keep_envs``, the
    environments the build and its scoring installed are removed once it is scored (the
    scoring never uses the workspace's: it makes its own). ``on_builder`` is told of the
    build before it starts (``--verbose`` traces its tool calls)."""
    config = build.model_copy(update={"max_seconds": task.timeout_s})
    out = TaskRun(task_id=task.id, repeat=repeat)
    if stop is not None and stop.is_set():  # stopped or capped before this build began
        out.status, out.failure = "skipped", "not started: the matrix run was stopped"
        return out
    started = time.time()
    try:
        if task.kind == "enhance":  # a change to the task's starting project, copied
            builder = Builder.enhance(
                home,
                config,
                task.prompt,
                task.repo,
                learning=learning,
                stop=stop,
                hooks=hooks,
                matrix=origin,
            )
        else:
            builder = Builder.start(
                home,
                config,
                task.prompt,
                learning=learning,
                stop=stop,
                hooks=hooks,
                matrix=origin,
            )
        out.run_id = builder.run.id
        if on_builder is not None:
            on_builder(builder, task, repeat)
        summary = builder.build()
    except KeyboardInterrupt:  # in a worker thread: only the stop event raises it
        out.status, out.failure = "interrupted", "the matrix run was stopped during this build"
        out.seconds = round(time.time() - started, 3)
        return out
    except Exception as exc:  # a crashed build scores 0; the matrix goes on
        out.status, out.failure = "crashed", f"{type(exc).__name__}: {exc}"[:500]
        out.seconds = round(time.time() - started, 3)
        return out
    out.status = summary.status
    out.cost_usd = summary.cost_usd
    out.tokens = summary.tokens_in + summary.tokens_out
    out.reached_validate = any(p.phase == "validate" for p in summary.phases)
    if out.reached_validate and score:
        try:
            scored = score_build(
                task,
                builder.run.workspace,
                builder.run.dir / "scoring",
                config.executor,
                home.cache_dir,
            )
        except Exception as exc:  # whatever the workspace holds, it fails this task alone
            out.verdict, out.failure = "broken", f"the build could not be scored: {exc}"[:500]
        else:
            out.checks_passed, out.checks_total = scored.passed, scored.total
            out.score, out.verdict, out.failure = scored.score, scored.verdict, scored.failures
    elif not out.reached_validate:
        out.failure = summary.reason
    if not keep_envs:
        remove_envs(builder.run.workspace)
        remove_envs(builder.run.dir / "scoring" / "project")
    failed = next((p for p in summary.phases if p.outcome != "passed"), None)
    if failed is not None:
        out.failed_phase, out.phase_outcome = failed.phase, failed.outcome
    out.seconds = round(time.time() - started, 3)
    return out


def failed(job: BuildJob, status: str, why: str) -> Outcome:
    """The outcome of a build whose worker gave none (it died, it was killed, it was lost)."""
    return Outcome(run=TaskRun(task_id=job.task.id, repeat=job.repeat, status=status, failure=why))


def stop_once(*_: object) -> None:
    """A worker's SIGINT and SIGTERM: the first stops its build (KeyboardInterrupt, which
    the build turns into its ``interrupted`` record); later ones are ignored, so the
    record is written whole."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def process_main(job: BuildJob, on_builder: Callable | None, conn) -> None:
    """A local worker process: the coordinator's environment, one build, its outcome sent."""
    signal.signal(signal.SIGINT, stop_once)
    signal.signal(signal.SIGTERM, stop_once)
    if job.env is not None:
        os.environ.clear()
        os.environ.update(job.env)
    try:
        outcome = run_job(job, on_builder)
    except KeyboardInterrupt:
        outcome = failed(job, "interrupted", "the matrix run was stopped during this build")
    except BaseException as exc:  # noqa: BLE001 - a worker's end is always reported
        outcome = failed(job, "crashed", f"{type(exc).__name__}: {exc}"[:500])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    conn.send(outcome)
    conn.close()
