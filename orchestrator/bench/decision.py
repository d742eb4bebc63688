"""When an improve-cycle patch is kept: a lift over the threshold, credibly, across tasks.

A single build is a noisy measurement: the same code can pass a task once and fail it the
next time. So the candidate and the baseline each build every train task several times,
and the rule compares them task by task, because the *task* is the unit that varies
(repeat ``r`` of the baseline and repeat ``r`` of the candidate are not pairs):

* for each task, ``d = mean(candidate scores) - mean(baseline scores)``; the lift is the
  weighted mean of the ``d`` (the lift of the weighted matrix score);
* the test is one-sided over tasks, with the threshold as the minimum effect:
  ``H0: lift <= threshold``. Its statistic is the studentized mean of
  ``w * (d - threshold)`` (weights scaled to mean 1), and its p-value comes from the
  paired sign-flip permutation distribution: under H0 each task's difference is as likely
  to have either sign. :func:`sign_flip_p` enumerates all ``2^n`` sign vectors when there
  are at most :data:`EXACT_TASKS` tasks (exact), else draws a fixed-seed sample. No
  p-value below ``2^-n`` exists for n tasks (0.0625 for 4), so a matrix needs enough
  train tasks for a small alpha to be reachable at all (:func:`smallest_p`).

A patch goes through three stages (:func:`screen`, :func:`full`, :func:`confirm`; the
cycle runs the builds, this module only decides):

1. **screen**: one repeat per train task of both; a candidate whose lift is below
   ``screen_floor`` (clearly worse, not just unlucky) is dropped as hopeless;
2. **full**: more repeats, to ``full_repeats`` of both; dropped when the lift is below
   the threshold or its p-value above ``futility_p``;
3. **confirm**: an independent round of ``confirm_repeats`` more of both. Accepted only
   when the confirmation round's own lift is at least the threshold, the test over all
   rounds together gives ``p <= alpha`` and the holdout does not veto.

**Error control per night.** ``alpha = night_alpha / iterations`` for each iteration
(Bonferroni): whatever the night's iterations find, the chance that a night with no
real improvement keeps anything is at most ``night_alpha``. The screen and full stages
only drop candidates, so they cannot add false accepts.

**The holdout vetoes on evidence, not a point.** With the holdout tasks' differences,
the same sign-flip test asks whether the holdout's *drop* is credibly more than the
threshold (``H0: holdout lift >= -threshold``); a p-value at or below
``holdout_alpha`` rejects the patch. A small holdout cannot veto on a whim.

Everything here is arithmetic on numbers the caller measured, so the rule can be tested
on fixed inputs at its boundaries and driven by ``benchmarks/improve_power.py``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

EXACT_TASKS = 16
"""Up to this many tasks the sign-flip distribution is enumerated; above, sampled."""
SAMPLED_FLIPS = 100_000


class DecisionConfig(BaseModel):
    """The keep-or-drop rule's settings (the defaults are what benchmarks/improve_power.py
    measured against its targets on the default matrix)."""

    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(default=0.01, ge=0)
    """The least lift of the train score worth keeping: the test's minimum effect."""
    night_alpha: float = Field(default=0.05, gt=0, lt=1)
    """The chance a cycle with no real improvement keeps anything, at most."""
    screen_repeats: int = Field(default=1, ge=1)
    screen_floor: float = Field(default=-0.1, le=0)
    """The screen drops a candidate whose lift is below this: clearly worse, not unlucky."""
    full_repeats: int = Field(default=5, ge=2)
    """Repeats per task of each side after the full stage (the screen's included)."""
    confirm_repeats: int = Field(default=8, ge=1)
    futility_p: float = Field(default=0.3, gt=0, le=1)
    """The full stage drops a candidate whose p-value is above this."""
    holdout_alpha: float = Field(default=0.1, gt=0, lt=1)


Scores = Mapping[str, Sequence[float]]
"""task id -> the scores of its builds."""


class Test(BaseModel):
    """One sign-flip test over tasks: the lift, its p-value, how many tasks."""

    lift: float
    p: float
    tasks: int


class Stage(BaseModel):
    """What one stage decided."""

    stage: str
    go_on: bool
    """False: the candidate is dropped here (or, after confirm, not accepted)."""
    train: Test
    holdout: Test | None = None
    reason: str


def smallest_p(tasks: int) -> float:
    """The smallest p-value an exact sign-flip test over ``tasks`` tasks can give."""
    return 2.0**-tasks


@functools.cache
def _signs(n: int) -> np.ndarray:
    if n <= EXACT_TASKS:
        return np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    rng = np.random.default_rng(20261201)
    flips = rng.choice((1.0, -1.0), size=(SAMPLED_FLIPS, n))
    return np.vstack([np.ones(n), flips])  # the observed signs are one of them


def _studentized(x: np.ndarray) -> np.ndarray:
    """mean / (sd / sqrt(n)) of each row (a row of equal values: +-inf or 0)."""
    n = x.shape[-1]
    mean = x.mean(axis=-1)
    sd = x.std(axis=-1, ddof=1) if n > 1 else np.zeros_like(mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / np.sqrt(n))
    flat = np.where(mean > 0, np.inf, np.where(mean < 0, -np.inf, 0.0))
    return np.where(sd > 1e-12, t, flat)


def sign_flip_p(values: Sequence[float]) -> float:
    """One-sided p-value of ``mean(values) > 0`` by the sign-flip distribution of the
    studentized mean (exact up to EXACT_TASKS values). No values: 1."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return 1.0
    observed = float(_studentized(x[None, :])[0])
    flipped = _studentized(_signs(x.size) * x)
    return float(np.mean(flipped >= observed - 1e-9))


def task_differences(
    baseline: Scores, candidate: Scores, weights: Mapping[str, float]
) -> tuple[np.ndarray, np.ndarray]:
    """(per-task mean differences, weights scaled to mean 1) for the tasks both measured."""
    tasks = sorted(t for t in set(baseline) & set(candidate) if baseline[t] and candidate[t])
    d = np.array([np.mean(candidate[t]) - np.mean(baseline[t]) for t in tasks], dtype=float)
    w = np.array([weights.get(t, 1.0) for t in tasks], dtype=float)
    return d, (w * len(w) / w.sum() if len(w) else w)


def lift_test(
    baseline: Scores, candidate: Scores, weights: Mapping[str, float], shift: float = 0.0
) -> Test:
    """The weighted lift and the p-value of ``H0: lift <= shift``."""
    d, w = task_differences(baseline, candidate, weights)
    lift = float(np.mean(w * d)) if len(d) else 0.0
    return Test(lift=lift, p=sign_flip_p(w * (d - shift)), tasks=len(d))


def drop_test(baseline: Scores, candidate: Scores, weights: Mapping[str, float], margin: float):
    """The holdout lift, and the p-value of ``H0: the drop is at most margin``."""
    d, w = task_differences(baseline, candidate, weights)
    lift = float(np.mean(w * d)) if len(d) else 0.0
    return Test(lift=lift, p=sign_flip_p(w * (-d - margin)), tasks=len(d))


def screen(baseline: Scores, candidate: Scores, weights, cfg: DecisionConfig) -> Stage:
    t = lift_test(baseline, candidate, weights, cfg.threshold)
    if not t.tasks:
        return Stage(stage="screen", go_on=False, train=t, reason="no train results to compare")
    if t.lift < cfg.screen_floor:
        reason = f"screen: train lift {t.lift:+.3f} is below {cfg.screen_floor:+.3f} (hopeless)"
        return Stage(stage="screen", go_on=False, train=t, reason=reason)
    return Stage(stage="screen", go_on=True, train=t, reason=f"screen: lift {t.lift:+.3f}")


def full(baseline: Scores, candidate: Scores, weights, cfg: DecisionConfig) -> Stage:
    t = lift_test(baseline, candidate, weights, cfg.threshold)
    if t.lift < cfg.threshold:
        reason = f"full: train lift {t.lift:+.3f} is below the threshold {cfg.threshold:.3f}"
        return Stage(stage="full", go_on=False, train=t, reason=reason)
    if t.p > cfg.futility_p:
        reason = f"full: train lift {t.lift:+.3f} looks like noise (p = {t.p:.3f})"
        return Stage(stage="full", go_on=False, train=t, reason=reason)
    return Stage(stage="full", go_on=True, train=t, reason=f"full: lift {t.lift:+.3f}, p {t.p:.3f}")


def confirm(
    pooled_baseline: Scores,
    pooled_candidate: Scores,
    round_baseline: Scores,
    round_candidate: Scores,
    holdout_baseline: Scores,
    holdout_candidate: Scores,
    weights: Mapping[str, float],
    cfg: DecisionConfig,
    alpha: float,
) -> Stage:
    """The final decision: every train round pooled, the confirmation round on its own, and
    the holdout (see the module docstring)."""
    t = lift_test(pooled_baseline, pooled_candidate, weights, cfg.threshold)
    again = lift_test(round_baseline, round_candidate, weights, cfg.threshold)
    hold = drop_test(holdout_baseline, holdout_candidate, weights, cfg.threshold)
    held = hold if hold.tasks else None
    thr = cfg.threshold
    if again.lift < thr:
        reason = f"confirm: the confirmation round's lift {again.lift:+.3f} is below {thr:.3f}"
        ok = False
    elif t.lift < thr:
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
    return Stage(stage="confirm", go_on=ok, train=t, holdout=held, reason=reason)


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


Measure = Callable[[str, int, bool], Round]
"""(stage, repeats, with_holdout) -> a new round of builds of both sides, interleaved."""


def evaluate(
    measure: Measure, weights: Mapping[str, float], cfg: DecisionConfig, alpha: float
) -> list[Stage]:
    """Run the stages (see the module docstring), asking ``measure`` for each round of
    builds; the stages decided, the last one saying whether the patch is kept."""
    first = measure("screen", cfg.screen_repeats, False)
    stages = [screen(first.baseline_train, first.candidate_train, weights, cfg)]
    if not stages[-1].go_on:
        return stages
    pooled = first + measure("full", cfg.full_repeats - cfg.screen_repeats, True)
    stages.append(full(pooled.baseline_train, pooled.candidate_train, weights, cfg))
    if not stages[-1].go_on:
        return stages
    again = measure("confirm", cfg.confirm_repeats, True)
    pooled = pooled + again
    stages.append(
        confirm(
            pooled.baseline_train,
            pooled.candidate_train,
            again.baseline_train,
            again.candidate_train,
            pooled.baseline_holdout,
            pooled.candidate_holdout,
            weights,
            cfg,
            alpha,
        )
    )
    return stages


def weighted_mean(scores: Scores, weights: Mapping[str, float]) -> float | None:
    tasks = [t for t in scores if len(scores[t])]
    if not tasks:
        return None
    total = sum(weights.get(t, 1.0) for t in tasks)
    return sum(weights.get(t, 1.0) * float(np.mean(scores[t])) for t in tasks) / total
