"""The benchmark matrix: build every task K times, score each build by its hidden checks.

A matrix is a folder of tasks, each a folder with ``task.toml`` (id, prompt,
tags, split, weight, timeout_s) and ``acceptance/`` (test files the model
never sees). A build that reaches the validate phase is scored outside its
workspace, in a fresh copy with a fresh environment (:mod:`orchestrator.bench.scoring`):
the score is the share of acceptance checks that pass, 0 when the scoring found the
results tampered with or could not read them. A build that crashes or fails before
validate scores 0. The matrix score is the weighted mean of the
tasks' mean scores; cost, tokens and time are reported beside it, never in it.

Builds run ``jobs`` at a time in threads (a build mostly waits on the model
and on commands). Their learning is queued (:class:`DeferredLearning`) and
applied by this coordinating thread alone, after each build, so the memory and
budget files have one writer whatever ``jobs`` is; with ``learn=False`` it is
dropped (improve-cycle trials). ``runs/matrix-<id>/results.json`` is
rewritten after every build, so an interrupted matrix still leaves its
results so far.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from pathlib import Path

from filelock import FileLock

from orchestrator.bench.results import MatrixResults, TaskRun, summarise
from orchestrator.bench.scoring import score_build
from orchestrator.bench.tasks import DEFAULT_MATRIX, MatrixTask, load_matrix
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.hooks import Hooks
from orchestrator.loop.agent import BuildConfig, Builder
from orchestrator.loop.learning import DeferredLearning, HomeLearning
from orchestrator.loop.runs import MatrixOrigin, new_run_id
from orchestrator.sandbox.files import replace_file
from orchestrator.sandbox.installs import remove_envs


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
) -> TaskRun:
    """One build of one task, scored (unless ``score`` is False: an improve trial's builds
    are scored by the cycle, with checks the trial never sees). Unless ``keep_envs``, the
    environments the build and its scoring installed are removed once it is scored (the
    scoring never uses the workspace's: it makes its own)."""
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


def run_matrix(
    home: Home,
    build: BuildConfig,
    matrix: Path = DEFAULT_MATRIX,
    repeats: int = 1,
    split: str = "all",
    jobs: int = 1,
    learn: bool = True,
    on_result: Callable[[TaskRun], None] | None = None,
    score: bool = True,
    max_cost_usd: float | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    keep_envs: bool = False,
    hooks: Hooks | None = None,
) -> MatrixResults:
    """Run the matrix (see the module docstring); results are also written to disk.

    Builds of holdout tasks never learn: what they teach would leak the holdout into
    later builds. ``max_cost_usd`` and ``max_tokens`` cap the whole run: once the builds
    so far spent that much, no further build starts. With a ``seed``, each build's model
    is seeded by the seed, its task and its repeat, so two runs with one seed (an improve
    cycle's baseline and candidate) draw alike. Ctrl-C (or SIGTERM, which cadillac
    turns into it) stops the run: queued builds are dropped, running ones are told to
    stop and their commands killed, and the results say so.

    ``hooks`` are the plugins every build tells, and that are told of the results when the
    run ends (``matrix_end``; not when it is interrupted); None: the installed ones.
    """
    tasks = [
        t for t in load_matrix(matrix, require_checks=score) if split == "all" or t.split == split
    ]
    if not tasks:
        raise CadillacError(f"matrix {matrix} has no {split} tasks")
    results = MatrixResults(
        id=new_run_id(),
        matrix=str(matrix),
        model=build.llm.model,
        repeats=repeats,
        split=split,
        started=time.time(),
    )
    folder = home.runs_dir / f"matrix-{results.id}"
    folder.mkdir(parents=True)
    lock = FileLock(str(folder / "run.lock"), timeout=0)
    lock.acquire()  # held while the run lives: a killed run's folder says so (runs list)
    deferred, discarded = DeferredLearning(), DeferredLearning()
    target = HomeLearning(home) if learn else None
    stop = threading.Event()
    spend = _Spend(max_cost_usd, max_tokens)
    hooks = Hooks.load() if hooks is None else hooks

    def one(task: MatrixTask, r: int) -> TaskRun:
        if spend.reason or stop.is_set():
            why = spend.reason or "the matrix run was stopped"
            return TaskRun(
                task_id=task.id, repeat=r, status="skipped", failure=f"not started: {why}"
            )
        seeded = (
            build if seed is None else build.model_copy(update={"seed": build_seed(seed, task, r)})
        )
        learning = deferred if task.split == "train" else discarded
        origin = MatrixOrigin(
            run=folder.name,
            matrix=str(matrix),
            split=task.split,
            learn=learn and task.split == "train",
        )
        run = run_one(home, task, r, seeded, learning, score, stop, keep_envs, hooks, origin)
        spend.add(run)
        return run

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    futures = [pool.submit(one, task, r) for r in range(repeats) for task in tasks]
    try:
        for future in as_completed(futures):
            run = future.result()
            results.runs.append(run)
            discarded.ops.clear()
            if target is not None:  # the coordinator is the only writer
                for op, n in deferred.apply(target).items():
                    results.learning_applied[op] = results.learning_applied.get(op, 0) + n
            summarise(results, tasks)
            if spend.reason and not results.stopped_because:
                results.stopped_because = spend.reason  # running builds finish; no more start
            _write(folder, results)
            if on_result is not None:
                on_result(run)
    except KeyboardInterrupt:
        stop.set()  # running builds kill their commands and end, saying "interrupted"
        pool.shutdown(wait=False, cancel_futures=True)
        finished, _ = wait([f for f in futures if f.running()], timeout=STOP_GRACE_S)
        for future in finished:
            if future.exception() is None and future.result() not in results.runs:
                results.runs.append(future.result())
        results.stopped_because = "interrupted"
        results.ended = time.time()
        _write(folder, results)
        raise
    else:
        if target is None:
            deferred.ops.clear()
        results.ended = time.time()
        _write(folder, results)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        lock.release()
    ended = results.model_dump(mode="json")
    ended["folder"] = str(folder)
    hooks.report(hooks.call("matrix_end", results=ended), None)
    return results


STOP_GRACE_S = 15.0
"""How long a stopped matrix run waits for its running builds to record that they were
stopped (a build waiting on a model call ends only when the call does: it is left)."""


def build_seed(seed: int, task: MatrixTask, repeat: int) -> int:
    return zlib.crc32(f"{seed}:{task.id}:{repeat}".encode()) & 0x7FFFFFFF


class _Spend:
    """What the run's builds spent, kept by the builds themselves as each ends, so a cap
    stops the next build from starting (with one worker the next build starts before the
    coordinator hears of the last). Builds running when the cap is reached finish."""

    def __init__(self, max_cost: float | None, max_tokens: int | None):
        self.max_cost, self.max_tokens = max_cost, max_tokens
        self.cost, self.tokens, self.reason = 0.0, 0, ""
        self._lock = threading.Lock()

    def add(self, run: TaskRun) -> None:
        with self._lock:
            self.cost += run.cost_usd or 0.0
            self.tokens += run.tokens
            if self.reason:
                return
            if self.max_cost is not None and self.cost >= self.max_cost:
                self.reason = (
                    f"the spend cap of {self.max_cost:g} USD was reached ({self.cost:.4f})"
                )
            elif self.max_tokens is not None and self.tokens >= self.max_tokens:
                self.reason = (
                    f"the token cap of {self.max_tokens:,} was reached ({self.tokens:,} tokens)"
                )


def _write(folder: Path, results: MatrixResults) -> None:
    replace_file(folder / "results.json", results.model_dump_json(indent=2) + "\n")
