"""What a matrix run measured: each build's score, each task's statistics, the weighted scores.

``results.json`` of a matrix run is a :class:`MatrixResults`; :func:`summarise` fills
the per-task statistics and the weighted matrix scores (train, holdout, all) from the
builds so far, so the file is current after every build.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from pydantic import BaseModel, Field

from orchestrator.bench.tasks import Split

NOT_BUILT = ("skipped", "missing")
"""Statuses of a TaskRun that stands for a build that never ran: ``skipped`` (a cap or a
stop came first; left out of the scores) and ``missing`` (a trial did not report it; the
judge scores it 0)."""


class TaskRun(BaseModel):
    task_id: str
    repeat: int
    run_id: str = ""
    status: str = ""
    reached_validate: bool = False
    checks_passed: int = 0
    checks_total: int = 0
    score: float = 0.0
    verdict: str = "not_scored"
    """How scoring went: scored, tampered, broken, or not_scored (failed before validate)."""
    failure: str = ""
    """The phase that failed and why, or the failing acceptance checks."""
    failed_phase: str | None = None
    phase_outcome: str | None = None
    """How the failed phase ended: budget_exhausted, error."""
    cost_usd: float | None = None
    tokens: int = 0
    seconds: float = 0.0
    node: str = ""
    """The machine (a Ray node: its address and id) that built it."""


UNSCORED = ("skipped", "lost")
"""Statuses whose score is no measurement: a build that never began, and one whose worker
died twice (``lost``: recorded, never counted as a score)."""


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


class GateSpend(BaseModel):
    """What an improve trial's traffic to its model's hosts says it spent, as the egress
    gate (in cadillac's own process) counted it: the bytes, and the tokens and cost they
    stand for (the rule: :mod:`orchestrator.improve.spend`)."""

    v: int = 1
    bytes_up: int = 0
    bytes_down: int = 0
    tokens: int = 0
    cost_usd: float | None = None
    """None: no model of the trial has a known price."""


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
    tokens: int = 0
    learning_applied: dict[str, int] = Field(default_factory=dict)
    runs_dir: str | None = None
    """Where the builds' run folders are, when not the home's runs/ (an improve trial's)."""
    runs_dirs: list[str] = Field(default_factory=list)
    """Results merged from rounds made in several places (each improve trial has its own
    runs/): every such folder, the first one's first (:func:`merge_results`); empty for
    one run's results, whose builds are all in ``runs_dir``."""
    stopped_because: str = ""
    """Why builds were left unstarted (a spend cap), when some were."""
    not_started: int = 0
    """Builds of the run that never ran (a cap or a stop came first); not in ``runs``."""
    seed: int | None = None
    learn: bool = True
    build_only: bool = False
    task_ids: list[str] | None = None
    """The tasks the run was asked for (``--task``); None: all of its split."""
    """How the run was started (``--seed``, ``--no-learn``, ``--build-only``): a resumed
    run goes on the same way."""
    claimed_cost_usd: float | None = None
    claimed_tokens: int | None = None
    """An improve trial's own report of its spend (the candidate's claim), kept beside ``gate``
    when ``cost_usd`` and ``tokens`` are what the books charged."""
    gate: GateSpend | None = None
    """An improve trial's spend as its egress gate counted it (None: no gate)."""

    def scores_by_task(self, split: str | None = None) -> dict[str, list[float]]:
        """task id -> scores in repeat order (optionally one split only)."""
        keep = {t.task_id for t in self.tasks if split is None or t.split == split}
        out: dict[str, list[float]] = {}
        for run in sorted(self.runs, key=lambda r: (r.task_id, r.repeat)):
            if run.task_id in keep and run.status not in UNSCORED:
                out.setdefault(run.task_id, []).append(run.score)
        return out

    def weights(self) -> dict[str, float]:
        return {t.task_id: t.weight for t in self.tasks}


class TaskShape(Protocol):
    """What summarise needs of a task: a MatrixTask, or a result's own statistics."""

    id: str
    split: str
    weight: float


@dataclass
class _Shape:
    id: str
    split: str
    weight: float


def summarise(results: MatrixResults, tasks: Sequence[TaskShape]) -> None:
    """Fill the per-task stats and the weighted scores from the runs so far."""
    stats = []
    for task in tasks:
        runs = [r for r in results.runs if r.task_id == task.id and r.status not in UNSCORED]
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
                tokens=sum(r.tokens for r in runs),
                seconds=float(np.mean([r.seconds for r in runs])),
            )
        )
    results.tasks = stats

    def weighted(split: str | None) -> float | None:
        chosen = [t for t in stats if split is None or t.split == split]
        total = sum(t.weight for t in chosen)
        return sum(t.weight * t.mean for t in chosen) / total if chosen else None

    results.tokens = sum(r.tokens for r in results.runs)
    results.score = weighted(None)
    results.train_score = weighted("train")
    results.holdout_score = weighted("holdout")
    costs = [t.cost_usd for t in stats if t.cost_usd is not None]
    results.cost_usd = float(sum(costs)) if costs else None


def merge_results(parts: list[MatrixResults]) -> MatrixResults:
    """Rounds of one code on one matrix as one result: each task's repeats numbered on, and
    every round's runs folder kept in ``runs_dirs`` (a build's folder is in one of them)."""
    first = parts[0]
    merged = first.model_copy(deep=True, update={"runs": [], "tasks": []})
    folders = [f for p in parts for f in (p.runs_dirs or [p.runs_dir]) if f]
    merged.runs_dirs = list(dict.fromkeys(folders))
    merged.repeats = sum(p.repeats for p in parts)
    merged.ended = max((p.ended or p.started) for p in parts)
    offset: dict[str, int] = {}
    for part in parts:
        for run in sorted(part.runs, key=lambda r: (r.task_id, r.repeat)):
            base = offset.get(run.task_id, 0)
            merged.runs.append(run.model_copy(update={"repeat": base + run.repeat}))
        for task in {r.task_id for r in part.runs}:
            offset[task] = offset.get(task, 0) + part.repeats
    stats = {t.task_id: t for p in parts for t in p.tasks}
    summarise(merged, [_Shape(t.task_id, t.split, t.weight) for t in stats.values()])
    return merged
