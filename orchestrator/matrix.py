"""The benchmark matrix: build every task K times, score each build by its hidden checks.

A matrix is a folder of tasks, each a folder with ``task.toml`` (id, prompt,
tags, split, weight, timeout_s) and ``acceptance/`` (test files the model
never sees). A build that reaches the validate phase is scored by copying the
acceptance folder into its workspace and running the standard-library runner
(``orchestrator/acceptance_runner.py``) with the workspace's own Python: the
score is the share of acceptance checks that pass. A build that crashes or
fails before validate scores 0. The matrix score is the weighted mean of the
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

import json
import shutil
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from orchestrator.agent import BuildConfig, Builder
from orchestrator.errors import CadillacError
from orchestrator.executor import run_command
from orchestrator.home import Home
from orchestrator.learning import DeferredLearning, HomeLearning
from orchestrator.runs import new_run_id

DEFAULT_MATRIX = Path(__file__).resolve().parent.parent / "matrices" / "default"
RUNNER = Path(__file__).resolve().parent / "acceptance_runner.py"
RUNNER_NAME = ".cadillac_acceptance.py"
ACCEPTANCE_DIR = ".acceptance"
Split = Literal["train", "holdout"]


class MatrixTask(BaseModel):
    """One task.toml."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    split: Split = "train"
    weight: float = Field(default=1.0, gt=0)
    timeout_s: float = Field(default=1800.0, gt=0)
    acceptance_command: str = f"python {RUNNER_NAME} {ACCEPTANCE_DIR}"
    """Must print the runner's JSON line last: {"passed", "failed", "total", ...}."""
    _dir: Path = PrivateAttr()

    @property
    def dir(self) -> Path:
        return self._dir


def load_matrix(folder: Path) -> list[MatrixTask]:
    """The tasks of a matrix folder, by id; CadillacError naming the file that is wrong."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CadillacError(f"matrix {folder} is not a folder")
    tasks = []
    for toml in sorted(folder.glob("*/task.toml")):
        try:
            task = MatrixTask.model_validate(tomllib.loads(toml.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, ValidationError) as exc:
            first = str(exc).splitlines()
            raise CadillacError(f"{toml}: {' '.join(first[:3])}") from None
        if task.id != toml.parent.name:
            raise CadillacError(f"{toml}: id {task.id!r} differs from its folder name")
        if not (toml.parent / "acceptance").is_dir():
            raise CadillacError(f"{toml.parent}: no acceptance/ folder")
        task._dir = toml.parent
        tasks.append(task)
    if not tasks:
        raise CadillacError(f"matrix {folder} holds no */task.toml")
    return tasks


class TaskRun(BaseModel):
    task_id: str
    repeat: int
    run_id: str = ""
    status: str = ""
    reached_validate: bool = False
    checks_passed: int = 0
    checks_total: int = 0
    score: float = 0.0
    failure: str = ""
    """The phase that failed and why, or the failing acceptance checks."""
    failed_phase: str | None = None
    phase_outcome: str | None = None
    """How the failed phase ended: budget_exhausted, error."""
    cost_usd: float | None = None
    tokens: int = 0
    seconds: float = 0.0


class TaskStats(BaseModel):
    task_id: str
    split: Split
    weight: float
    scores: list[float]
    mean: float
    spread: float
    """Highest minus lowest score over the repeats."""
    cost_usd: float | None
    tokens: int = 0
    """Tokens in and out, summed over the task's builds."""
    seconds: float
    """Mean seconds per build."""


class MatrixResults(BaseModel):
    v: int = 1
    id: str
    matrix: str
    model: str
    repeats: int
    split: str
    started: float
    ended: float | None = None
    runs: list[TaskRun] = Field(default_factory=list)
    tasks: list[TaskStats] = Field(default_factory=list)
    score: float | None = None
    train_score: float | None = None
    holdout_score: float | None = None
    cost_usd: float | None = None
    learning_applied: dict[str, int] = Field(default_factory=dict)

    def scores_by_task(self, split: str | None = None) -> dict[str, list[float]]:
        """task id -> scores in repeat order (optionally one split only)."""
        keep = {t.task_id for t in self.tasks if split is None or t.split == split}
        out: dict[str, list[float]] = {}
        for run in sorted(self.runs, key=lambda r: (r.task_id, r.repeat)):
            if run.task_id in keep:
                out.setdefault(run.task_id, []).append(run.score)
        return out

    def weights(self) -> dict[str, float]:
        return {t.task_id: t.weight for t in self.tasks}


def score_workspace(task: MatrixTask, workspace: Path, build: BuildConfig) -> tuple[int, int, str]:
    """Copy the hidden checks in and run them with the workspace's Python: passed, total, why."""
    shutil.copytree(task.dir / "acceptance", workspace / ACCEPTANCE_DIR, dirs_exist_ok=True)
    shutil.copy(RUNNER, workspace / RUNNER_NAME)
    venv_bin = workspace / ".venv" / "bin"
    result = run_command(
        task.acceptance_command,
        workspace,
        build.executor,
        timeout_s=600,
        path_prefix=[venv_bin],
        env={"VIRTUAL_ENV": str(venv_bin.parent)},
    )
    for line in reversed(result.output.strip().splitlines()):
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict) and "total" in report:
            failures = "; ".join(
                f"{f['check']}: {f['error'][:120]}" for f in report.get("failures", [])[:5]
            )
            return int(report.get("passed", 0)), int(report["total"]), failures
    return 0, 0, f"the acceptance runner printed no result: {result.for_model()[-300:]}"


def run_one(
    home: Home, task: MatrixTask, repeat: int, build: BuildConfig, learning: DeferredLearning
) -> TaskRun:
    """One build of one task, scored."""
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
    if out.reached_validate:
        passed, total, failures = score_workspace(task, builder.run.workspace, config)
        out.checks_passed, out.checks_total = passed, total
        out.score = passed / total if total else 0.0
        out.failure = failures
    else:
        out.failure = summary.reason
    failed = next((p for p in summary.phases if p.outcome != "passed"), None)
    if failed is not None:
        out.failed_phase, out.phase_outcome = failed.phase, failed.outcome
    out.seconds = round(time.time() - started, 3)
    return out


def summarise(results: MatrixResults, tasks: list[MatrixTask]) -> None:
    """Fill the per-task stats and the weighted scores from the runs so far."""
    stats = []
    for task in tasks:
        runs = [r for r in results.runs if r.task_id == task.id]
        if not runs:
            continue
        scores = [r.score for r in sorted(runs, key=lambda r: r.repeat)]
        costs = [r.cost_usd for r in runs if r.cost_usd is not None]
        stats.append(
            TaskStats(
                task_id=task.id,
                split=task.split,
                weight=task.weight,
                scores=scores,
                mean=float(np.mean(scores)),
                spread=float(max(scores) - min(scores)),
                cost_usd=float(sum(costs)) if costs else None,
                seconds=float(np.mean([r.seconds for r in runs])),
            )
        )
    results.tasks = stats

    def weighted(split: str | None) -> float | None:
        chosen = [t for t in stats if split is None or t.split == split]
        total = sum(t.weight for t in chosen)
        return sum(t.weight * t.mean for t in chosen) / total if chosen else None

    results.score = weighted(None)
    results.train_score = weighted("train")
    results.holdout_score = weighted("holdout")
    costs = [t.cost_usd for t in stats if t.cost_usd is not None]
    results.cost_usd = float(sum(costs)) if costs else None


def run_matrix(
    home: Home,
    build: BuildConfig,
    matrix: Path = DEFAULT_MATRIX,
    repeats: int = 1,
    split: str = "all",
    jobs: int = 1,
    learn: bool = True,
    on_result: Callable[[TaskRun], None] | None = None,
) -> MatrixResults:
    """Run the matrix (see the module docstring); results are also written to disk."""
    tasks = [t for t in load_matrix(matrix) if split == "all" or t.split == split]
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
        futures = [pool.submit(run_one, home, task, r, build, deferred) for task, r in work]
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
