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

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from orchestrator.bench.results import MatrixResults, TaskRun, summarise
from orchestrator.bench.scoring import score_build
from orchestrator.bench.tasks import DEFAULT_MATRIX, MatrixTask, load_matrix
from orchestrator.build.agent import BuildConfig, Builder
from orchestrator.build.learning import DeferredLearning, HomeLearning
from orchestrator.build.runs import new_run_id
from orchestrator.errors import CadillacError
from orchestrator.home import Home


def run_one(
    home: Home,
    task: MatrixTask,
    repeat: int,
    build: BuildConfig,
    learning: DeferredLearning,
    score: bool = True,
) -> TaskRun:
    """One build of one task, scored (unless ``score`` is False: an improve trial's builds
    are scored by the cycle, with checks the trial never sees)."""
    config = build.model_copy(update={"max_seconds": task.timeout_s})
    out = TaskRun(task_id=task.id, repeat=repeat)
    started = time.time()
    try:
        builder = Builder.start(home, config, task.prompt, learning=learning)
        out.run_id = builder.run.id
        summary = builder.build()
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
                home.root / ".cache",
            )
        except Exception as exc:  # whatever the workspace holds, it fails this task alone
            out.verdict, out.failure = "broken", f"the build could not be scored: {exc}"[:500]
        else:
            out.checks_passed, out.checks_total = scored.passed, scored.total
            out.score, out.verdict, out.failure = scored.score, scored.verdict, scored.failures
    elif not out.reached_validate:
        out.failure = summary.reason
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
) -> MatrixResults:
    """Run the matrix (see the module docstring); results are also written to disk."""
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
    deferred, target = DeferredLearning(), HomeLearning(home) if learn else None
    work = [(task, r) for r in range(repeats) for task in tasks]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(run_one, home, task, r, build, deferred, score) for task, r in work]
        for future in as_completed(futures):
            run = future.result()
            results.runs.append(run)
            if target is not None:  # the coordinator is the only writer
                for op, n in deferred.apply(target).items():
                    results.learning_applied[op] = results.learning_applied.get(op, 0) + n
            summarise(results, tasks)
            _write(folder, results)
            if on_result is not None:
                on_result(run)
    if target is None:
        deferred.ops.clear()
    results.ended = time.time()
    _write(folder, results)
    return results


def _write(folder: Path, results: MatrixResults) -> None:
    tmp = folder / "results.json.tmp"
    tmp.write_text(results.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(folder / "results.json")
