"""The benchmark matrix: build every task K times, score each build by its hidden checks.

A matrix is a folder of tasks, each a folder with ``task.toml`` (id, prompt,
tags, split, weight, timeout_s) and ``acceptance/`` (test files the model
never sees). A build that reaches the validate phase is scored outside its
workspace, in a fresh copy with a fresh environment (:mod:`orchestrator.bench.scoring`):
the score is the share of acceptance checks that pass, 0 when the scoring found the
results tampered with or could not read them. A build that crashes or fails before
validate scores 0. The matrix score is the weighted mean of the
tasks' mean scores; cost, tokens and time are reported beside it, never in it.

Builds run ``jobs`` at a time in threads (a build mostly waits on the model and on
commands); the next build starts when one ends, so a run holds nothing for the builds to
come and stops within seconds, and builds that never ran (a cap, a stop) are counted, not
scored. Their learning is queued (:class:`DeferredLearning`) and applied by this
coordinating thread alone, after each build, so the memory and budget files have one
writer whatever ``jobs`` is; with ``learn=False`` it is dropped (improve-cycle trials).
``runs/matrix-<id>/results.json`` is rewritten after every build, so an interrupted
matrix still leaves its results so far, and can be resumed: its finished builds are
kept, the rest are run.
"""

from __future__ import annotations

import queue
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from orchestrator.bench import MAX_JOBS, MAX_REPEATS
from orchestrator.bench.results import NOT_BUILT, MatrixResults, TaskRun, summarise
from orchestrator.bench.scoring import score_build
from orchestrator.bench.tasks import DEFAULT_MATRIX, MatrixTask, load_matrix
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.hooks import Hooks
from orchestrator.loop.agent import BuildConfig, Builder
from orchestrator.loop.learning import DeferredLearning, HomeLearning
from orchestrator.loop.runs import BUILD_ID, MatrixOrigin, check_run_id, new_run_id, read_record
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


PROGRESS_EVERY_S = 30.0
"""How often a matrix run says which builds run while none ends."""
STOP_GRACE_S = 15.0
"""How long a stopped matrix run waits for its running builds to record that they were
stopped (a build waiting on a model call ends only when the call does: it is left)."""


@dataclass
class Progress:
    """Where a matrix run stands while no build ends: what runs, for how long, what is left."""

    run_id: str
    """The matrix run's id (``--resume`` takes it)."""
    running: list[tuple[str, int, float]]
    """(task id, repeat, seconds so far) of each build running."""
    done: int
    total: int


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
    on_progress: Callable[[Progress], None] | None = None,
    progress_every_s: float = PROGRESS_EVERY_S,
    resume: str | None = None,
    on_builder: Callable[[Builder, MatrixTask, int], None] | None = None,
) -> MatrixResults:
    """Run the matrix (see the module docstring); results are also written to disk.

    Builds of holdout tasks never learn: what they teach would leak the holdout into
    later builds. ``max_cost_usd`` and ``max_tokens`` cap the whole run: once the builds
    so far spent that much, no further build starts. With a ``seed``, each build's model
    is seeded by the seed, its task and its repeat, so two runs with one seed (an improve
    cycle's baseline and candidate) draw alike. Ctrl-C (or SIGTERM, which cadillac
    turns into it) stops the run: no further build starts, running ones are told to
    stop and their commands killed, and the results say so.

    At most ``jobs`` builds are under way at once, and a build is started only when one
    ends, so the run holds nothing for builds to come. Builds that never ran are not
    results: ``not_started`` counts them. ``on_progress`` hears which builds run and for
    how long once they start and every ``progress_every_s`` while none ends.

    ``resume`` is the id of a matrix run of this home that stopped: its matrix, split,
    repeats, seed, learning and scoring are its own (the arguments for them are not read);
    its finished builds are kept and the rest are run, in its folder. The caps count what
    this run spends.

    ``hooks`` are the plugins every build tells, and that are told of the results when the
    run ends (``matrix_end``; not when it is interrupted); None: the installed ones.
    """
    if resume is not None:
        results = load_results(home, resume)
        matrix, repeats, split = Path(results.matrix), results.repeats, results.split
        seed, learn, score = results.seed, results.learn, not results.build_only
        if build.llm.model != results.model:
            raise CadillacError(
                f"matrix run {results.id} was built with the model {results.model}: resume "
                f"it with --model {results.model} (not {build.llm.model})"
            )
    check_bounds(repeats, jobs)
    tasks = [
        t for t in load_matrix(matrix, require_checks=score) if split == "all" or t.split == split
    ]
    if not tasks:
        raise CadillacError(f"matrix {matrix} has no {split} tasks")
    if resume is None:
        results = MatrixResults(
            id=new_run_id(),
            matrix=str(matrix),
            model=build.llm.model,
            repeats=repeats,
            split=split,
            started=time.time(),
            seed=seed,
            learn=learn,
            build_only=not score,
        )
    folder = home.runs_dir / f"matrix-{results.id}"
    folder.mkdir(parents=True, exist_ok=resume is not None)
    lock = FileLock(str(folder / "run.lock"), timeout=0)
    try:
        lock.acquire()  # held while the run lives: a killed run's folder says so (runs list)
    except Timeout:
        raise CadillacError(
            f"matrix run {results.id} is still running (its process holds run.lock): "
            "stop it before resuming it"
        ) from None
    try:
        if resume is not None:
            _reopen(results, tasks)
            _write(folder, results)  # running again: runs list says so
        return _coordinate(
            home, build, tasks, results, folder, jobs, learn, on_result, score,
            _Spend(max_cost_usd, max_tokens), seed, keep_envs,
            Hooks.load() if hooks is None else hooks, on_progress, progress_every_s, on_builder,
        )  # fmt: skip
    finally:
        lock.release()


def _coordinate(
    home: Home,
    build: BuildConfig,
    tasks: list[MatrixTask],
    results: MatrixResults,
    folder: Path,
    jobs: int,
    learn: bool,
    on_result: Callable[[TaskRun], None] | None,
    score: bool,
    spend: _Spend,
    seed: int | None,
    keep_envs: bool,
    hooks: Hooks,
    on_progress: Callable[[Progress], None] | None,
    progress_every_s: float,
    on_builder: Callable[[Builder, MatrixTask, int], None] | None = None,
) -> MatrixResults:
    """Start builds as others end, ``jobs`` at a time, and record each as it ends."""
    deferred, discarded = DeferredLearning(), DeferredLearning()
    target = HomeLearning(home) if learn else None
    stop = threading.Event()
    kept = {(r.task_id, r.repeat) for r in results.runs}
    todo = ((task, r) for r in range(results.repeats) for task in tasks if (task.id, r) not in kept)
    total = len(tasks) * results.repeats
    running: dict[tuple[str, int], float] = {}
    ended: queue.Queue[TaskRun] = queue.Queue()

    def one(task: MatrixTask, r: int) -> None:
        try:
            seeded = (
                build
                if seed is None
                else build.model_copy(update={"seed": build_seed(seed, task, r)})
            )
            learning = deferred if task.split == "train" else discarded
            origin = MatrixOrigin(
                run=folder.name,
                matrix=results.matrix,
                split=task.split,
                learn=learn and task.split == "train",
            )
            run = run_one(
                home, task, r, seeded, learning, score, stop, keep_envs, hooks, origin, on_builder
            )
        except BaseException as exc:  # noqa: BLE001 - a worker's end is always reported
            run = TaskRun(task_id=task.id, repeat=r, status="crashed", failure=repr(exc)[:500])
        spend.add(run)
        ended.put(run)

    def start() -> bool:
        """Start builds up to ``jobs``; whether any was started."""
        started = False
        while len(running) < jobs and not spend.reason and not stop.is_set():
            nxt = next(todo, None)
            if nxt is None:
                break
            task, r = nxt
            running[(task.id, r)] = time.monotonic()
            threading.Thread(target=one, args=(task, r), daemon=True).start()
            started = True
        return started

    def progress() -> None:
        if on_progress is not None:
            now = time.monotonic()
            rows = [(t, r, now - since) for (t, r), since in running.items()]
            on_progress(Progress(results.id, rows, len(results.runs), total))

    def record(run: TaskRun, learn_now: bool = True) -> bool:
        """Record a build that ended; False for one that never began (a stop came first:
        it is counted as not started, not a result)."""
        running.pop((run.task_id, run.repeat), None)
        built = run.status not in NOT_BUILT
        if built:
            results.runs.append(run)
        discarded.ops.clear()
        if target is not None and learn_now:  # the coordinator is the only writer
            for op, n in deferred.apply(target).items():
                results.learning_applied[op] = results.learning_applied.get(op, 0) + n
        summarise(results, tasks)
        if spend.reason and not results.stopped_because:
            results.stopped_because = spend.reason  # running builds finish; no more start
        results.not_started = total - len(results.runs) - len(running)
        _write(folder, results)
        return built

    try:
        if start():
            progress()
        while running:
            try:
                run = ended.get(timeout=progress_every_s)
            except queue.Empty:
                progress()
                continue
            if record(run) and on_result is not None:
                on_result(run)
            start()
    except KeyboardInterrupt:
        stop.set()  # running builds kill their commands and end, saying "interrupted"
        deadline = time.monotonic() + STOP_GRACE_S
        while running and time.monotonic() < deadline:
            try:
                run = ended.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            record(run, learn_now=False)
        for task_id, r in list(running):  # in a model call that ends only when it does: left
            left = "still running when the matrix run was stopped (left to end with it)"
            record(TaskRun(task_id=task_id, repeat=r, status="interrupted", failure=left), False)
        results.stopped_because = "interrupted"
        results.ended = time.time()
        _write(folder, results)
        raise
    if target is None:
        deferred.ops.clear()
    results.ended = time.time()
    _write(folder, results)
    ended_record = results.model_dump(mode="json")
    ended_record["folder"] = str(folder)
    hooks.report(hooks.call("matrix_end", results=ended_record), None)
    return results


def check_bounds(repeats: int, jobs: int) -> None:
    """CadillacError for a number of repeats or jobs out of :data:`MAX_REPEATS`/:data:`MAX_JOBS`."""
    if not 1 <= repeats <= MAX_REPEATS:
        raise CadillacError(f"repeats must be between 1 and {MAX_REPEATS} (not {repeats})")
    if not 1 <= jobs <= MAX_JOBS:
        raise CadillacError(f"jobs must be between 1 and {MAX_JOBS} (not {jobs})")


def load_results(home: Home, run_id: str) -> MatrixResults:
    """The results of matrix run ``run_id`` (``matrix-<id>`` or ``<id>``, as ``runs list``
    shows it) of ``home``; CadillacError, in one line, when it names no matrix run of the
    home: what it names instead, or why the run cannot be read."""
    check_run_id(run_id, home.runs_dir)
    name = run_id.removeprefix("matrix-")
    folder = home.runs_dir / f"matrix-{name}"
    if not BUILD_ID.fullmatch(name) or not folder.is_dir():
        raise CadillacError(_not_a_matrix_run(home, run_id))
    path = folder / "results.json"
    if not path.exists():
        raise CadillacError(
            f"matrix run {run_id} has no results: it was killed before its first build "
            "ended, so it has nothing to keep; start a new run"
        )
    return read_record(path, MatrixResults, folder.name)


def _not_a_matrix_run(home: Home, run_id: str) -> str:
    """Why ``run_id`` cannot be resumed as a matrix run: the kind of run it is, or none."""
    kind = run_id.partition("-")[0]
    if (home.runs_dir / run_id / "task.json").is_file():
        return (
            f"{run_id} is a build run, not a matrix run: go on with it with "
            f"'cadillac build --resume {run_id}'"
        )
    if kind in ("improve", "nightly") and (home.runs_dir / run_id).is_dir():
        return f"{run_id} is an {kind} run, not a matrix run: only a matrix run is resumed here"
    return f"no matrix run {run_id} in {home.runs_dir} (see 'cadillac runs list')"


def _reopen(results: MatrixResults, tasks: list[MatrixTask]) -> None:
    """A stopped run's results, ready to go on: its finished builds kept, the rest to run
    (CadillacError when it already ran to its end)."""
    wanted = {(t.id, r) for t in tasks for r in range(results.repeats)}
    kept = [
        r
        for r in results.runs
        if r.status not in (*NOT_BUILT, "interrupted") and (r.task_id, r.repeat) in wanted
    ]
    if len({(r.task_id, r.repeat) for r in kept}) == len(wanted):
        raise CadillacError(
            f"matrix run {results.id} has finished: all its {len(wanted)} build(s) ran, "
            "so there is nothing to resume"
        )
    results.runs, results.stopped_because, results.ended = kept, "", None
    results.not_started = len(wanted) - len(kept)
    summarise(results, tasks)


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
