"""When an improve-cycle patch is kept: a lift over the threshold, credibly, on the matrix.

A single build is a noisy measurement: the same code can pass a task once and fail it the
next time. So the candidate and the baseline each build the train tasks several times and
the rule asks whether the candidate's weighted matrix score is credibly higher.

**The unit is the build.** The matrix is a fixed set of tasks (whether a patch also helps
tasks it was not measured on is the holdout's question), so what is random in a lift is
which scores the builds happened to draw. The test permutes the side labels of the builds
*within each task*: if the patch changes nothing, every split of a task's builds into
candidate and baseline is as likely as the one observed.

* The statistic is the lift itself: the weighted mean over tasks of ``mean(candidate
  scores) - mean(baseline scores)`` (the lift of the weighted matrix score).
* ``H0: lift <= threshold`` (the threshold is the least lift worth keeping): every
  candidate score is lowered by the threshold before permuting. Under any split a task's
  difference then drops by *at most* the threshold while the observed one drops by exactly
  the threshold, so this p-value is never below the unshifted test's, which is exact when
  the patch changes nothing: an A/A comparison is accepted at most alpha of the time.
* :func:`permutation_p` is exact (every split enumerated) up to :data:`EXACT_SPLITS`
  splits, else it counts the observed split among :data:`PERMUTATIONS` fixed-seed sampled
  ones, ``(1 + as extreme) / (1 + sampled)``.

A task-level test (each task's mean difference one value, signs flipped) cannot give a
p-value below ``2^-k`` when only k tasks move, so it misses the patches the cycle makes
(one weakness fixed, a few tasks lifted); the build-level test sees each of their builds.

**Unequal sides.** Baseline builds of one commit are reused by every iteration while
nothing is accepted (:mod:`orchestrator.bench.reuse`), so the baseline is measured deeper
than the candidate: ``baseline_repeats`` builds per train task, all asked for by the
screen (the first iteration builds them, the later ones find them in the pool), against
the candidate's 1, then 3, then 9. The exception is the tasks the pool may not serve:
the weakness the patch works on was picked *because* of those tasks' baseline builds
(they failed), so reused they would lower the baseline where the patch aims. Their
baseline is built afresh beside the candidate at every look, ``fresh_ratio`` builds per
candidate build (the measure knows which tasks they are). Which tasks get more builds is
never chosen by what the builds the test reads scored: a choice by those scores biases
the comparison, and skipping tasks that looked settled would hide a patch that breaks
them.

**Three looks, one alpha** (:func:`evaluate`; the cycle runs the builds, this module only
decides):

1. **screen**: ``screen_repeats`` candidate builds per train task; dropped when the lift
   is below ``screen_floor`` or its p-value above ``screen_futility_p``;
2. **full**: to ``full_repeats``; dropped when the lift is below the threshold or its
   p-value above ``futility_p``; a p-value at or below ``early_share * alpha`` settles
   the train question (no more train builds);
3. **confirm**: ``confirm_repeats`` more (unless settled). When the lift over every build
   is at least the threshold and its p-value at most this look's alpha (the rest,
   ``(1 - early_share) * alpha``, or the early share when settled), the holdout is built
   (``holdout_repeats`` per task and side) and may veto; otherwise no holdout build is
   spent. :func:`accepted` is the product's accept predicate.

**Error control.** Alpha is each iteration's share of the night's (``night_alpha /
iterations``, Bonferroni), and within an iteration it is split between the two looks that
may accept (Bonferroni again; neither needs independence, so neither do the iterations
that share reused baseline builds). The screen and the futility stops only drop
candidates, so they cannot add false accepts.

**The holdout vetoes on evidence, not a point.** The same test, sides swapped, asks
whether the holdout's *drop* is credibly more than the threshold (``H0: holdout lift >=
-threshold``); a p-value at or below ``holdout_alpha`` rejects the patch.

Everything here is arithmetic on numbers the caller measured, so the rule can be tested
on fixed inputs at its boundaries and driven by ``benchmarks/improve_power.py``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from orchestrator.bench.permutation import EXACT_SPLITS, PERMUTATIONS, permutation_p


class DecisionConfig(BaseModel):
    """The keep-or-drop rule's settings (the defaults are what benchmarks/improve_power.py
    measured against its targets on the default matrix)."""

    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(default=0.01, ge=0)
    """The least lift of the train score worth keeping: the test's minimum effect."""
    night_alpha: float = Field(default=0.05, gt=0, lt=1)
    """The chance a cycle with no real improvement keeps anything, at most."""
    baseline_repeats: int = Field(default=10, ge=1)
    """Baseline builds per train task every look compares with, all asked for by the
    screen (reused across iterations while nothing is accepted, so cheap after the first)."""
    fresh_ratio: int = Field(default=2, ge=1)
    """Baseline builds per candidate build, at every look, of the train tasks whose
    baseline must be built afresh (the weakness's: its builds picked it), instead of
    ``baseline_repeats`` from the pool."""
    screen_repeats: int = Field(default=1, ge=1)
    """Candidate builds per train task of the screen."""
    screen_floor: float = Field(default=-0.1, le=0)
    """The screen drops a candidate whose lift is below this: clearly worse, not unlucky."""
    screen_futility_p: float = Field(default=0.5, gt=0, le=1)
    """The screen drops a candidate whose p-value is above this."""
    full_repeats: int = Field(default=3, ge=2)
    """Candidate builds per train task after the full stage (the screen's included)."""
    futility_p: float = Field(default=0.2, gt=0, le=1)
    """The full stage drops a candidate whose p-value is above this."""
    early_share: float = Field(default=0.3, ge=0, lt=1)
    """The share of alpha the full stage may accept on, settling the train question."""
    confirm_repeats: int = Field(default=6, ge=1)
    """More candidate builds per train task in the confirmation."""
    holdout_repeats: int = Field(default=3, ge=1)
    """Builds per holdout task and side, made only for a candidate the train test keeps."""
    holdout_alpha: float = Field(default=0.02, gt=0, lt=1)
    """The holdout vetoes when its drop's p-value is at or below this."""

    @model_validator(mode="after")
    def _full_adds_builds(self) -> DecisionConfig:
        if self.full_repeats <= self.screen_repeats:
            raise ValueError(
                f"full_repeats ({self.full_repeats}) must be more than screen_repeats "
                f"({self.screen_repeats}): the full stage adds candidate builds"
            )
        return self


Scores = Mapping[str, Sequence[float]]
"""task id -> the scores of its builds."""


class Test(BaseModel):
    """One permutation test: the lift, its p-value, how many tasks and builds."""

    lift: float
    p: float
    tasks: int
    builds: int = 0
    """Builds of both sides the test read."""


class Stage(BaseModel):
    """What one stage decided."""

    stage: str
    go_on: bool
    """False: the candidate is dropped here (or, after confirm, not accepted)."""
    train: Test
    holdout: Test | None = None
    reason: str
    alpha: float | None = None
    """The p-value this stage could accept at (None: a stage that only drops)."""


@dataclass
class Round:
    """The scores one round of builds measured, by side and split."""

    baseline_train: dict[str, list[float]] = field(default_factory=dict)
    candidate_train: dict[str, list[float]] = field(default_factory=dict)
    baseline_holdout: dict[str, list[float]] = field(default_factory=dict)
    candidate_holdout: dict[str, list[float]] = field(default_factory=dict)

    def __add__(self, other: Round) -> Round:
        def merge(a: dict, b: dict) -> dict:
            return {t: [*a.get(t, []), *b.get(t, [])] for t in {*a, *b}}

        return Round(
            merge(self.baseline_train, other.baseline_train),
            merge(self.candidate_train, other.candidate_train),
            merge(self.baseline_holdout, other.baseline_holdout),
            merge(self.candidate_holdout, other.candidate_holdout),
        )


class Measure(Protocol):
    """A new round of builds of both sides, interleaved: ``repeats`` candidate builds per
    train task (only of ``tasks`` when given; none for an empty collection) and, with
    ``holdout``, per holdout task; the baseline's builds per task are ``baseline`` (None:
    ``repeats``; 0: none), taken first from the cycle's pool of builds of the same commit
    that this iteration has not used (:class:`orchestrator.bench.reuse.BaselinePool`), only
    the shortfall built; except for the train tasks the pool may not serve (the measure's
    own: the weakness's, whose builds picked it), of which ``fresh`` (None: as
    ``baseline``) are built afresh."""

    def __call__(
        self,
        stage: str,
        repeats: int,
        holdout: bool,
        *,
        tasks: Collection[str] | None = None,
        baseline: int | None = None,
        fresh: int | None = None,
    ) -> Round: ...


def _test(first: Scores, second: Scores, weights: Mapping[str, float], shift: float) -> Test:
    """The weighted lift of the first side over the second, over the tasks both measured
    (each task a stratum), and the p-value of ``H0: lift <= shift``."""
    tasks = sorted(t for t in first if len(first[t]) and len(second.get(t, ())))
    if not tasks:
        return Test(lift=0.0, p=1.0, tasks=0)
    w = np.array([weights.get(t, 1.0) for t in tasks], dtype=float)
    w = w / w.sum()
    strata, coef, lift, builds = [], [], 0.0, 0
    for wt, t in zip(w, tasks, strict=True):
        a = np.asarray(first[t], dtype=float)
        b = np.asarray(second[t], dtype=float)
        lift += wt * (a.mean() - b.mean())
        strata.append((np.concatenate([a - shift, b]), len(a)))
        coef.append(wt * (1 / len(a) + 1 / len(b)))
        builds += len(a) + len(b)
    return Test(lift=float(lift), p=permutation_p(strata, coef), tasks=len(tasks), builds=builds)


def lift_test(
    baseline: Scores, candidate: Scores, weights: Mapping[str, float], shift: float = 0.0
) -> Test:
    """The weighted lift of the candidate, and the p-value of ``H0: lift <= shift``."""
    return _test(candidate, baseline, weights, shift)


def drop_test(
    baseline: Scores, candidate: Scores, weights: Mapping[str, float], margin: float
) -> Test:
    """The (holdout) lift, and the p-value of ``H0: it drops by at most margin``."""
    t = _test(baseline, candidate, weights, margin)
    return t.model_copy(update={"lift": -t.lift})


def _floor(tasks: int, cfg: DecisionConfig, candidate: int) -> float:
    """The smallest p-value of ``candidate`` builds per train task against the baseline's:
    the weakness's tasks have their baseline built afresh, the others' from the pool; at
    least one task is the weakness's, each other one whichever gives more splits."""
    if tasks < 1:
        return 1.0
    fresh = math.comb(candidate + cfg.fresh_ratio * candidate, candidate)
    pooled = math.comb(candidate + cfg.baseline_repeats, candidate)
    ways = fresh * max(fresh, pooled) ** (tasks - 1)
    return 1 / ways if ways <= EXACT_SPLITS else 1 / (1 + PERMUTATIONS)


def smallest_p(tasks: int, cfg: DecisionConfig | None = None) -> float:
    """The smallest p-value the test can give on ``tasks`` train tasks when every build the
    rule asks for is made: the lowest any patch can reach (fewer builds, a higher floor;
    see :func:`_floor` for the weakness's tasks); 1 without train tasks."""
    cfg = cfg or DecisionConfig()
    return _floor(tasks, cfg, cfg.full_repeats + cfg.confirm_repeats)


def least_alpha(tasks: int, cfg: DecisionConfig | None = None) -> float:
    """The least alpha per iteration at which the rule can still keep a patch on ``tasks``
    train tasks: a look accepts only at its share of alpha, so one of them must reach the
    smallest p-value its builds can give (the confirmation with every build, or the full
    stage settling early with its own)."""
    cfg = cfg or DecisionConfig()
    looks = [smallest_p(tasks, cfg) / (1 - cfg.early_share)]
    if cfg.early_share:
        looks.append(_floor(tasks, cfg, cfg.full_repeats) / cfg.early_share)
    return min(looks)


# -- the stages -------------------------------------------------------------------------


def screen(pooled: Round, weights: Mapping[str, float], cfg: DecisionConfig) -> Stage:
    t = lift_test(pooled.baseline_train, pooled.candidate_train, weights, cfg.threshold)
    if not t.tasks:
        return Stage(stage="screen", go_on=False, train=t, reason="no train results to compare")
    if t.lift < cfg.screen_floor:
        reason = f"screen: train lift {t.lift:+.3f} is below {cfg.screen_floor:+.3f} (hopeless)"
        return Stage(stage="screen", go_on=False, train=t, reason=reason)
    if t.p > cfg.screen_futility_p:
        reason = f"screen: train lift {t.lift:+.3f} looks like noise (p = {t.p:.3f})"
        return Stage(stage="screen", go_on=False, train=t, reason=reason)
    return Stage(
        stage="screen", go_on=True, train=t, reason=f"screen: lift {t.lift:+.3f}, p {t.p:.3f}"
    )


def full(
    pooled: Round, weights: Mapping[str, float], cfg: DecisionConfig, alpha: float = 0.0
) -> Stage:
    """The second look; given the iteration's ``alpha``, a p-value at or below
    ``early_share * alpha`` settles the train question (the stage's ``alpha``)."""
    t = lift_test(pooled.baseline_train, pooled.candidate_train, weights, cfg.threshold)
    early = cfg.early_share * alpha or None
    if t.lift < cfg.threshold:
        reason = f"full: train lift {t.lift:+.3f} is below the threshold {cfg.threshold:.3f}"
        return Stage(stage="full", go_on=False, train=t, reason=reason, alpha=early)
    if t.p > cfg.futility_p:
        reason = f"full: train lift {t.lift:+.3f} looks like noise (p = {t.p:.3f})"
        return Stage(stage="full", go_on=False, train=t, reason=reason, alpha=early)
    reason = f"full: lift {t.lift:+.3f}, p {t.p:.4f}"
    if early is not None and t.p <= early:
        reason += f" <= {early:.4f}: settled, the holdout next"
    return Stage(stage="full", go_on=True, train=t, reason=reason, alpha=early)


def settled(stage: Stage) -> bool:
    """Whether a full stage settled the train question early."""
    return stage.go_on and stage.alpha is not None and stage.train.p <= stage.alpha


def confirm(
    pooled: Round, weights: Mapping[str, float], cfg: DecisionConfig, alpha: float
) -> Stage:
    """The final decision: the train lift over every round at ``alpha`` (this look's share),
    then the holdout's veto (see the module docstring)."""
    thr = cfg.threshold
    t = lift_test(pooled.baseline_train, pooled.candidate_train, weights, thr)
    hold = drop_test(pooled.baseline_holdout, pooled.candidate_holdout, weights, thr)
    held = hold if hold.tasks else None
    if t.lift < thr:
        reason, ok = f"confirm: train lift {t.lift:+.3f} is below the threshold {thr:.3f}", False
    elif t.p > alpha:
        reason = (
            f"confirm: train lift {t.lift:+.3f} over {thr:.3f} is not credible "
            f"(p = {t.p:.4f} > alpha {alpha:.4f})"
        )
        ok = False
    elif held is not None and hold.p <= cfg.holdout_alpha:
        reason = (
            f"confirm: the holdout fell by {-hold.lift:.3f}, credibly more than {thr:.3f} "
            f"(p = {hold.p:.3f})"
        )
        ok = False
    else:
        reason = f"accepted: train lift {t.lift:+.3f} (p = {t.p:.4f} <= {alpha:.4f})" + (
            "" if held is None else f", holdout {hold.lift:+.3f}"
        )
        ok = True
    return Stage(stage="confirm", go_on=ok, train=t, holdout=held, reason=reason, alpha=alpha)


def accepted(stages: Sequence[Stage]) -> bool:
    """The product's accept predicate: the last stage is a confirmation that went on."""
    return bool(stages) and stages[-1].stage == "confirm" and stages[-1].go_on


def evaluate(
    measure: Measure, weights: Mapping[str, float], cfg: DecisionConfig, alpha: float
) -> list[Stage]:
    """Run the stages (see the module docstring), asking ``measure`` for each round of
    builds; the stages decided, the last one saying whether the patch is kept."""

    def train(stage: str, repeats: int, baseline: int) -> Round:
        return measure(stage, repeats, False, baseline=baseline, fresh=cfg.fresh_ratio * repeats)

    pooled = train("screen", cfg.screen_repeats, cfg.baseline_repeats)
    stages = [screen(pooled, weights, cfg)]
    if not stages[-1].go_on:
        return stages
    pooled += train("full", cfg.full_repeats - cfg.screen_repeats, 0)
    stages.append(full(pooled, weights, cfg, alpha))
    if not stages[-1].go_on:
        return stages
    look = cfg.early_share * alpha
    if not settled(stages[-1]):
        pooled += train("confirm", cfg.confirm_repeats, 0)
        look = alpha - look
    t = lift_test(pooled.baseline_train, pooled.candidate_train, weights, cfg.threshold)
    if t.lift >= cfg.threshold and t.p <= look:  # the holdout only for a would-be accept
        pooled += measure("holdout", cfg.holdout_repeats, True, tasks=())
    stages.append(confirm(pooled, weights, cfg, look))
    return stages


def weighted_mean(scores: Scores, weights: Mapping[str, float]) -> float | None:
    tasks = [t for t in scores if len(scores[t])]
    if not tasks:
        return None
    total = sum(weights.get(t, 1.0) for t in tasks)
    return sum(weights.get(t, 1.0) * float(np.mean(scores[t])) for t in tasks) / total
