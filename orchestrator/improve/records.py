"""The records of an improve cycle: its configuration, each iteration, the cycle's summary.

``runs/improve-<id>/summary.json`` is an :class:`ImproveSummary`, rewritten after every
iteration; each ``iter-<i>/decision.json`` is an :class:`IterationRecord`.
"""

from __future__ import annotations

import sys

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.improve.proposals import DEFAULT_ALLOW
from orchestrator.sandbox.executor import ExecConfig


class ImproveConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    iterations: int = Field(default=5, ge=1)
    threshold: float = Field(default=0.05, ge=0)
    """Least train lift a patch must bring."""
    allow: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOW))
    """Path prefixes a patch may touch."""
    apply: bool = False
    """Fast-forward the checked-out branch to the last accepted commit (clean work tree only)."""
    max_seconds: float | None = Field(default=None, gt=0)
    """Time budget of the whole cycle."""
    test_command: list[str] = Field(
        default_factory=lambda: [sys.executable, "-m", "pytest", "-q", "-x"]
    )
    """The project's own test suite, run in the worktree."""
    executor: ExecConfig = Field(default_factory=ExecConfig)
    """The sandbox the trial's tests (and, through the runner, its builds) run in."""
    max_attempts: int = Field(default=3, ge=1)
    """Rejected patches after which a weakness is left alone."""
    good_enough: float = 0.95


class IterationRecord(BaseModel):
    iteration: int
    status: str
    """accepted, rejected, or no_proposal."""
    weakness: str | None = None
    reason: str = ""
    train_delta: float | None = None
    interval: list[float] | None = None
    holdout_delta: float | None = None
    branch: str | None = None
    commit: str | None = None
    baseline_score: float | None = None
    candidate_score: float | None = None


class ImproveSummary(BaseModel):
    v: int = 1
    id: str
    repo: str
    base_commit: str
    tip_commit: str
    started: float
    ended: float | None = None
    stopped_because: str = ""
    iterations: list[IterationRecord] = Field(default_factory=list)
    applied: bool = False
    apply_note: str = ""
