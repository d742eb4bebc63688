"""The benchmark matrix: build every task K times, score each build by its hidden checks.

A matrix is a folder of tasks, each a folder with ``task.toml`` (id, prompt,
tags, split, weight, timeout_s) and ``acceptance/`` (test files the model
never sees). A build that reaches the validate phase is scored outside its
workspace, in a fresh copy with a fresh environment (:mod:`orchestrator.bench.scoring`):
the score is the share of acceptance checks that pass, 0 when the scoring found the
results tampered with or could not read them. A build that crashes or fails before
validate scores 0. The matrix score is the weighted mean of the
tasks' mean scores; cost, tokens and time are reported beside it, never in it.

Builds run ``jobs`` at a time wherever the engine puts them (:mod:`orchestrator.bench.engines`:
this process for one job, a worker process per build for more, or a Ray cluster); the next
build starts when one ends, so a run holds nothing for the builds to come and stops within
seconds, and builds that never ran (a cap, a stop) are counted, not scored. A build's
learning comes back with its result and is applied by this coordinating thread alone,
after each build, so the memory and budget files have one writer whatever the engine;
with ``learn=False`` it is dropped (improve-cycle trials).
``runs/matrix-<id>/results.json`` is rewritten after every build, so an interrupted
matrix still leaves its results so far, and can be resumed: its finished builds are
kept, the rest are run.
"""

from __future__ import annotations

import queue
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from orchestrator.bench import MAX_JOBS, MAX_REPEATS
from orchestrator.bench.engines import STOP_GRACE_S, EngineConfig, engine_for
from orchestrator.bench.engines.records import write_records
from orchestrator.bench.engines.worker import BuildJob, Outcome
from orchestrator.bench.results import NOT_BUILT, MatrixResults, TaskRun, summarise
from orchestrator.bench.tasks import DEFAULT_MATRIX, MatrixTask, load_matrix
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.hooks import Hooks
from orchestrator.loop.agent import BuildConfig, Builder
from orchestrator.loop.learning import DeferredLearning, HomeLearning
from orchestrator.loop.runs import BUILD_ID, MatrixOrigin, check_run_id, new_run_id, read_record
from orchestrator.sandbox.files import replace_file

PROGRESS_EVERY_S = 30.0
"""How often a matrix run says which builds run while none ends."""


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
    engine: EngineConfig | None = None,
    task_ids: Sequence[str] | None = None,
    on_warning: Callable[[str], None] | None = None,
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

    ``engine`` says where the builds run (:mod:`orchestrator.bench.engines`; None: this
    machine, ``jobs`` at once). ``task_ids`` builds only those tasks of the matrix (a
    resumed run keeps its own). ``on_warning`` hears what the engine refused (a Ray node
    running other code), a line each.
    """
    if resume is not None:
        results = load_results(home, resume)
        matrix, repeats, split = Path(results.matrix), results.repeats, results.split
        seed, learn, score = results.seed, results.learn, not results.build_only
        task_ids = results.task_ids
        if build.llm.model != results.model:
            raise CadillacError(
                f"matrix run {results.id} was built with the model {results.model}: resume "
                f"it with --model {results.model} (not {build.llm.model})"
            )
    check_bounds(repeats, jobs if engine is None else engine.jobs)
    engine = engine or EngineConfig(jobs=jobs)
    tasks = [
        t for t in load_matrix(matrix, require_checks=score) if split == "all" or t.split == split
    ]
    if task_ids:
        tasks = _chosen(tasks, task_ids, matrix, split)
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
            task_ids=list(task_ids) if task_ids else None,
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
            home, build, tasks, results, folder, engine, learn, on_result, score,
            _Spend(max_cost_usd, max_tokens), seed, keep_envs,
            Hooks.load() if hooks is None else hooks, on_progress, progress_every_s, on_builder,
            on_warning,
        )  # fmt: skip
    finally:
        lock.release()


def _coordinate(
    home: Home,
    build: BuildConfig,
    tasks: list[MatrixTask],
    results: MatrixResults,
    folder: Path,
    engine_config: EngineConfig,
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
    on_warning: Callable[[str], None] | None = None,
) -> MatrixResults:
    """Start builds as others end, ``jobs`` at a time, and record each as it ends."""
    target = HomeLearning(home) if learn else None
    kept = {(r.task_id, r.repeat) for r in results.runs}
    todo = ((task, r) for r in range(results.repeats) for task in tasks if (task.id, r) not in kept)
    total = len(tasks) * results.repeats
    running: dict[tuple[str, int], float] = {}
    ended: queue.Queue[Outcome] = queue.Queue()
    engine = engine_for(engine_config, ended, on_builder, hooks, home.root)
    for line in getattr(engine, "refused", ()):
        (on_warning or (lambda _: None))(line)
    plugins = hooks.loaded_from

    def job(task: MatrixTask, r: int) -> BuildJob:
        seeded = (
            build if seed is None else build.model_copy(update={"seed": build_seed(seed, task, r)})
        )
        learns = learn and task.split == "train"
        return BuildJob(
            home=home.root,
            task=task,
            repeat=r,
            build=seeded,
            score=score,
            keep_envs=keep_envs,
            origin=MatrixOrigin(
                run=folder.name, matrix=results.matrix, split=task.split, learn=learns
            ),
            keep_learning=learns,
            plugins=None if plugins is None else list(plugins[0]),
            entry_points=plugins is not None and plugins[1],
        )

    def start() -> bool:
        """Start builds up to ``jobs``; whether any was started."""
        started = False
        while len(running) < engine_config.jobs and not spend.reason:
            nxt = next(todo, None)
            if nxt is None:
                break
            task, r = nxt
            running[(task.id, r)] = time.monotonic()
            engine.submit(job(task, r))
            running[(task.id, r)] = time.monotonic()  # its time counts once it is handed over
            started = True
        return started

    def progress() -> None:
        if on_progress is not None:
            now = time.monotonic()
            rows = [(t, r, now - since) for (t, r), since in running.items()]
            on_progress(Progress(results.id, rows, len(results.runs), total))

    def record(outcome: Outcome, learn_now: bool = True) -> bool:
        """Record a build that ended; False for one that never began (a stop came first:
        it is counted as not started, not a result)."""
        run = outcome.run
        if (run.task_id, run.repeat) not in running:
            return False  # reported twice (a killed worker's second word): the first stands
        running.pop((run.task_id, run.repeat), None)
        if outcome.files:
            write_records(home.runs_dir, run.run_id, outcome.files)
        built = run.status not in NOT_BUILT
        if built:
            results.runs.append(run)
        if target is not None and learn_now and outcome.ops:  # the coordinator alone writes
            learning = DeferredLearning(ops=list(outcome.ops))
            for op, n in learning.apply(target).items():
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
                outcome = ended.get(timeout=progress_every_s)
            except queue.Empty:
                progress()
                continue
            spend.add(outcome.run)
            if record(outcome) and on_result is not None:
                on_result(outcome.run)
            start()
    except KeyboardInterrupt:
        engine.stop()  # running builds kill their commands and end, saying "interrupted"
        _drain(ended, running, record, STOP_GRACE_S)
        if running:
            engine.kill()  # a worker still in a model call: ended now
            _drain(ended, running, record, KILL_GRACE_S)
        for task_id, r in list(running):  # a thread in a model call that ends only when it does
            left = "still running when the matrix run was stopped (left to end with it)"
            run = TaskRun(task_id=task_id, repeat=r, status="interrupted", failure=left)
            record(Outcome(run=run), False)
        results.stopped_because = "interrupted"
        results.ended = time.time()
        _write(folder, results)
        raise
    finally:
        engine.close()
    results.ended = time.time()
    _write(folder, results)
    ended_record = results.model_dump(mode="json")
    ended_record["folder"] = str(folder)
    hooks.report(hooks.call("matrix_end", results=ended_record), None)
    return results


KILL_GRACE_S = 5.0
"""How long a stopped run waits for the workers it killed to be reported."""


def _drain(ended: queue.Queue, running: dict, record, seconds: float) -> None:
    """Record the builds that end within ``seconds`` (without their learning: stopped)."""
    deadline = time.monotonic() + seconds
    while running and time.monotonic() < deadline:
        try:
            outcome = ended.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        record(outcome, learn_now=False)


def _chosen(
    tasks: list[MatrixTask], ids: Sequence[str], matrix: Path, split: str
) -> list[MatrixTask]:
    """The tasks ``ids`` names, in the matrix's order; CadillacError for an id it has not."""
    known = {t.id for t in tasks}
    unknown = [i for i in dict.fromkeys(ids) if i not in known]
    if unknown:
        where = "" if split == "all" else f" {split}"
        raise CadillacError(
            f"matrix {matrix} has no{where} task {', '.join(map(repr, unknown))} "
            f"(its tasks: {', '.join(sorted(known)) or 'none'})"
        )
    wanted = set(ids)
    return [t for t in tasks if t.id in wanted]


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
