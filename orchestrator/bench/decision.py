"""When an improve-cycle patch is kept: a lift beyond the threshold that is not noise.

A single build is a noisy measurement: the same code can pass a task once and
fail it the next time. So the baseline and the candidate each run every train
task K times, and the comparison is *paired*: for task t and repeat r the
difference ``candidate[t][r] - baseline[t][r]`` (weighted by the task's
weight, so the mean of the differences is the lift of the weighted matrix
score). A patch is accepted only when all three hold:

1. the train lift (the weighted mean difference) is at least the threshold;
2. it is not noise: the lower bound of the two-sided 95% Student-t interval of
   the mean difference is above zero (fewer than two differences give no
   interval, so no patch is shown to help; identical differences give a
   zero-width one);
3. the holdout mean does not fall by more than the threshold.

Everything here is plain arithmetic on numbers the caller measured, so the
rule can be tested on fixed inputs at its boundaries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel

# Two-sided 95% Student-t quantiles (t_{0.975, df}) for df = 1..30; above 30 the
# values approach 1.96 and are interpolated in 1/df, which is exact to 3 decimals.
_T975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("degrees of freedom must be at least 1")
    if df <= 30:
        return _T975[df - 1]
    return 1.960 + (2.042 - 1.960) * 30 / df


class Interval(BaseModel):
    mean: float
    low: float
    high: float
    n: int


def paired_interval(differences: Sequence[float]) -> Interval:
    """Mean of the differences and its 95% t interval (unbounded below two differences)."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    mean = float(d.mean()) if n else 0.0
    if n < 2:
        return Interval(mean=mean, low=-math.inf, high=math.inf, n=n)
    half = t975(n - 1) * float(d.std(ddof=1)) / math.sqrt(n)
    return Interval(mean=mean, low=mean - half, high=mean + half, n=n)


class Decision(BaseModel):
    accepted: bool
    train_delta: float
    holdout_delta: float | None
    interval: Interval
    reason: str


Scores = Mapping[str, Sequence[float]]
"""task id -> the scores of its repeats."""


def paired_differences(
    baseline: Scores, candidate: Scores, weights: Mapping[str, float]
) -> list[float]:
    """Per task, per repeat: weight-scaled candidate minus baseline, for shared tasks."""
    tasks = sorted(set(baseline) & set(candidate))
    total = sum(weights.get(t, 1.0) for t in tasks) or 1.0
    out = []
    for t in tasks:
        scale = weights.get(t, 1.0) * len(tasks) / total
        for b, c in zip(baseline[t], candidate[t], strict=False):
            out.append(scale * (c - b))
    return out


def weighted_mean(scores: Scores, weights: Mapping[str, float]) -> float | None:
    tasks = [t for t in scores if len(scores[t])]
    if not tasks:
        return None
    total = sum(weights.get(t, 1.0) for t in tasks)
    return sum(weights.get(t, 1.0) * float(np.mean(scores[t])) for t in tasks) / total


def decide(
    baseline_train: Scores,
    candidate_train: Scores,
    baseline_holdout: Scores,
    candidate_holdout: Scores,
    weights: Mapping[str, float],
    threshold: float = 0.05,
) -> Decision:
    """Accept or reject a candidate (see the module docstring)."""
    diffs = paired_differences(baseline_train, candidate_train, weights)
    interval = paired_interval(diffs)
    delta = interval.mean
    hb, hc = weighted_mean(baseline_holdout, weights), weighted_mean(candidate_holdout, weights)
    holdout = None if hb is None or hc is None else hc - hb
    if not diffs:
        reason, ok = "no paired train results to compare", False
    elif delta < threshold:
        reason, ok = f"train lift {delta:+.3f} is below the threshold {threshold:.3f}", False
    elif interval.low <= 0:
        reason = (
            f"train lift {delta:+.3f} is not distinguishable from noise "
            f"(95% interval {interval.low:+.3f} .. {interval.high:+.3f})"
        )
        ok = False
    elif holdout is not None and holdout < -threshold:
        reason, ok = f"holdout fell by {-holdout:.3f}, more than the threshold", False
    else:
        reason = (
            f"train lift {delta:+.3f} (95% interval {interval.low:+.3f} .. "
            f"{interval.high:+.3f})" + ("" if holdout is None else f", holdout {holdout:+.3f}")
        )
        ok = True
    return Decision(
        accepted=ok, train_delta=delta, holdout_delta=holdout, interval=interval, reason=reason
    )
