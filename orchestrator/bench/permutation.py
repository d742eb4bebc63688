"""A one-sided permutation test of a weighted sum of sums, within strata.

Each stratum (in the decision: one task's builds) holds values of which the first ``k``
are one side's (the candidate's); the statistic is ``sum over strata of coef * (the sum of
that side's values)``, which is how a weighted mean difference moves when labels move.
Under "the sides do not differ" every choice of which ``k`` of a stratum's values are the
side's is as likely as the observed one, independently per stratum.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import numpy as np

EXACT_SPLITS = 1 << 14
"""Up to this many splits of the values into sides the test enumerates them all."""
PERMUTATIONS = 1 << 13
"""Above, it samples this many splits (fixed seed)."""
_SEED = 20261201
_STEP = 7919  # columns between two strata's samples of one bank: odd, so coprime with it


@functools.cache
def _bank(n: int, k: int) -> np.ndarray:
    """PERMUTATIONS fixed-seed columns, each a uniform choice of k of n positions (0/1)."""
    rng = np.random.default_rng([_SEED, n, k])
    order = rng.random((PERMUTATIONS, n)).argsort(axis=1)
    return np.ascontiguousarray((order < k).astype(float).T)


def _splits(values: np.ndarray, k: int) -> np.ndarray:
    """The sum of every choice of k of the values."""
    return np.array([values[list(c)].sum() for c in itertools.combinations(range(len(values)), k)])


def permutation_p(strata: Sequence[tuple[np.ndarray, int]], coef: Sequence[float]) -> float:
    """One-sided p-value of ``sum(coef[s] * sum(values_s[:k_s]))`` (each stratum is
    ``(values_s, k_s)``, its first ``k_s`` values the side's), against every way to choose
    which ``k_s`` of each stratum's values are the side's: the share of splits whose
    statistic is at least the observed one (ties count), 1 when nothing can move.

    Exact when there are at most EXACT_SPLITS splits. Above, ``(1 + as extreme) / (1 +
    PERMUTATIONS)`` over sampled splits: the strata of one shape (n values, k the side's)
    share a fixed-seed bank of choices, each stratum reading it from its own offset, so
    within one sampled split the strata's choices are distinct draws."""
    coef = np.asarray(coef, dtype=float)
    live = [(v, k, c) for (v, k), c in zip(strata, coef, strict=True) if 0 < k < len(v) and c]
    if not live:
        return 1.0
    observed = sum(c * v[:k].sum() for v, k, c in live)
    tolerance = 1e-9 * (1.0 + abs(observed))
    if math.prod(math.comb(len(v), k) for v, k, _ in live) <= EXACT_SPLITS:
        total = np.zeros(1)
        for v, k, c in live:
            total = (total[:, None] + c * _splits(v, k)[None, :]).ravel()
        return float(np.mean(total >= observed - tolerance))
    drawn = np.zeros(PERMUTATIONS)
    shapes: dict[tuple[int, int], list[np.ndarray]] = {}
    for v, k, c in live:
        shapes.setdefault((len(v), k), []).append(c * v)
    for (n, k), members in shapes.items():
        sums = np.stack(members) @ _bank(n, k)  # (strata, PERMUTATIONS)
        for j, row in enumerate(sums):
            o = (j * _STEP) % PERMUTATIONS
            drawn[: PERMUTATIONS - o] += row[o:]
            drawn[PERMUTATIONS - o :] += row[:o]
    return float((1 + np.count_nonzero(drawn >= observed - tolerance)) / (1 + PERMUTATIONS))
