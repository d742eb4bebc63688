"""What a matrix run measured: each build's score, each task's statistics, the weighted scores.

``results.json`` of a matrix run is a :class:`MatrixResults`; :func:`summarise` fills
the per-task statistics and the weighted matrix scores (train, holdout, all) from the
builds so far, so the file is current after every build.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

from orchestrator.bench.tasks import MatrixTask, Split


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
                tokens=sum(r.tokens for r in runs),
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
