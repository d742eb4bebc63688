"""The records of an improve cycle: its configuration, each iteration, the cycle's summary.

``runs/improve-<id>/summary.json`` is an :class:`ImproveSummary`, rewritten after every
iteration; each ``iter-<i>/decision.json`` is an :class:`IterationRecord`, with every
stage the patch went through and the builds each stage spent.
"""

from __future__ import annotations

import sys

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.bench.decision import DecisionConfig, Stage
from orchestrator.improve.lifetime import Lifetime
from orchestrator.improve.proposals import DEFAULT_ALLOW
from orchestrator.sandbox.executor import ExecConfig


class ImproveConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    iterations: int = Field(default=5, ge=1)
    """Patches tried at most; the night's alpha is spread over them."""
    decision: DecisionConfig = Field(default_factory=DecisionConfig)
    """The keep-or-drop rule: threshold, alpha per night, repeats of each stage."""
    survey_repeats: int = Field(default=2, ge=1)
    """Repeats of the first measurement, which finds the first weakness and gives the
    night's starting score."""
    allow: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOW))
    """Path prefixes a patch may touch."""
    apply: bool = False
    """Fast-forward the checked-out branch to the last accepted commit (clean work tree only)."""
    max_seconds: float | None = Field(default=None, gt=0)
    """Time budget of the whole cycle."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """Spend cap of the whole cycle: builds and improver together."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Token cap of the whole cycle (for models without a known price)."""
    test_command: list[str] = Field(
        default_factory=lambda: [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rfE",
            "--continue-on-collection-errors",
        ]
    )
    """The project's own test suite, run in the baseline's worktree and the patch's. It
    runs to the end (no ``-x``, collection errors included) and names what failed, so
    the two runs can be compared test by test (:mod:`orchestrator.improve.suite`)."""
    executor: ExecConfig = Field(default_factory=ExecConfig)
    """The sandbox the trial's tests (and, through the runner, its builds) run in."""
    max_attempts: int = Field(default=3, ge=1)
    """Rejected patches after which a weakness is left alone."""
    good_enough: float = 0.95
    lifetime_alpha: float | None = Field(default=None, gt=0, lt=1)
    """The chance that any patch kept over the repository's life is noise, at most: every
    measured iteration spends from it (:mod:`orchestrator.improve.lifetime`). None: the
    night's bound alone. ``improve`` and ``nightly`` keep one by default
    (:data:`~orchestrator.improve.lifetime.DEFAULT_BUDGET`); a cycle made in code, none."""
    granted_alpha: float | None = Field(default=None, ge=0, le=1)
    """What the lifetime budget granted each iteration of this cycle (set when it starts;
    None: no lifetime budget)."""

    @property
    def night_share(self) -> float:
        """Each iteration's share of the night's false-accept budget (Bonferroni)."""
        return self.decision.night_alpha / self.iterations

    @property
    def alpha(self) -> float:
        """The alpha of each iteration's decision: its share of the night's budget, or less
        when the lifetime budget granted less."""
        night = self.night_share
        return night if self.granted_alpha is None else min(night, self.granted_alpha)


class IterationRecord(BaseModel):
    iteration: int
    status: str
    """accepted, rejected, no_proposal, or stopped (a cap or an interruption)."""
    weakness: str | None = None
    reason: str = ""
    train_delta: float | None = None
    p: float | None = None
    """The p-value of the last test (train lift over the threshold)."""
    interval: list[float] | None = None
    """Records of earlier versions (a t interval); None now."""
    holdout_delta: float | None = None
    stages: list[Stage] = Field(default_factory=list)
    builds: dict[str, int] = Field(default_factory=dict)
    """Builds made by each stage (both sides)."""
    reused: dict[str, int] = Field(default_factory=dict)
    """Baseline scores each stage took from earlier builds of the same tip instead of
    building (:mod:`orchestrator.bench.reuse`); not in ``builds``."""
    tests: str = ""
    """What the project's own tests said with the patch, against the baseline's run."""
    branch: str | None = None
    commit: str | None = None
    baseline_score: float | None = None
    """The baseline's train score as this iteration's rounds measured it (reused scores
    included), or, without rounds, the tip's."""
    candidate_score: float | None = None
    tip_score: float | None = None
    """The train score of the tip once the iteration ended, from the tip's own baseline
    builds (the survey's and every round's); None right after an accept: the candidate's
    scores were kept for being high, so the new tip counts once its builds measured it.
    The "good enough" stop reads this."""


class ImproveSummary(BaseModel):
    v: int = 2
    id: str
    repo: str
    base_commit: str
    tip_commit: str
    started: float
    ended: float | None = None
    status: str = ""
    """finished, failed or interrupted once the cycle ended ("" while it runs, and in the
    records of earlier versions, which said it by ``stopped_because`` alone)."""
    stopped_because: str = ""
    """Why it stopped; for a failed cycle, what failed."""
    alpha: float | None = None
    """Each iteration's alpha (the night's spread over the iterations, or less: what the
    lifetime budget granted)."""
    lifetime: Lifetime | None = None
    """The repository's lifetime error budget as the cycle left it (None: not kept)."""
    iterations: list[IterationRecord] = Field(default_factory=list)
    builds: int = 0
    cost_usd: float | None = None
    tokens: int = 0
    applied: bool = False
    apply_note: str = ""

    def state(self) -> str:
        """running, finished, failed or interrupted (as far as the record itself says: a
        killed cycle's record still says running)."""
        if self.status:
            return self.status
        if self.ended is None:
            return "running"
        return "interrupted" if self.stopped_because == "interrupted" else "finished"
