"""How often the improve cycle keeps noise, and how often it finds a real lift: by simulation.

Drives the real decision code (``orchestrator.bench.decision.evaluate`` with the default
``DecisionConfig``) on simulated matrices shaped like the default one (its train and
holdout tasks and weights), printing:

* the share of A/A nights (no patch has any effect; 8 iterations a night) that accept
  anything; target <= 5%;
* the share of iterations that accept a patch with a true lift of +0.1, +0.2, +0.3 of
  the train score; targets >= 50% at +0.1 and >= 80% at +0.2;
* the mean builds per iteration, and by stage.

The simulated builds: each task has a difficulty, drawn once per simulated matrix: the
chance a build reaches validate (mean 0.7) and the chance each of its hidden checks
passes; a build that reaches validate scores the share of its checks that pass, one that
does not scores 0. A true lift of delta raises every build's expected score by delta
(through its checks, and its chance to reach validate once the checks cannot rise).
Baseline and candidate builds are independent draws.

    .venv/bin/python benchmarks/improve_power.py [--nights 600] [--iterations 400]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.bench.decision import (  # noqa: E402
    DecisionConfig,
    Round,
    evaluate,
    smallest_p,
)
from orchestrator.bench.tasks import DEFAULT_MATRIX, load_matrix  # noqa: E402

NIGHT_ITERATIONS = 8


class Matrix:
    """A simulated matrix: per task, the chance to reach validate and per-check pass rate."""

    def __init__(self, rng: np.random.Generator, train: list[str], holdout: list[str]):
        self.rng, self.train, self.holdout = rng, train, holdout
        tasks = train + holdout
        self.reach = dict(zip(tasks, rng.uniform(0.55, 0.85, len(tasks)), strict=True))
        self.check = dict(zip(tasks, rng.uniform(0.2, 0.8, len(tasks)), strict=True))
        self.checks = dict(zip(tasks, rng.integers(6, 13, len(tasks)), strict=True))

    def lifted(self, task: str, delta: float) -> tuple[float, float]:
        """(reach, per-check pass rate) whose expected score is the task's own + delta."""
        r, p = self.reach[task], self.check[task]
        target = min(1.0, r * p + delta)
        return (r, target / r) if target <= r else (target, 1.0)

    def builds(self, task: str, repeats: int, delta: float) -> list[float]:
        r, p = self.lifted(task, delta)
        reached = self.rng.random(repeats) < r
        passed = self.rng.binomial(self.checks[task], p, repeats) / self.checks[task]
        return list(np.where(reached, passed, 0.0))


def iteration(matrix: Matrix, delta: float, cfg: DecisionConfig, alpha: float):
    """One patch through the real stages; (accepted, builds, builds by stage)."""
    spent: dict[str, int] = {}

    def measure(stage: str, repeats: int, holdout: bool) -> Round:
        tasks = matrix.train + (matrix.holdout if holdout else [])
        spent[stage] = spent.get(stage, 0) + 2 * repeats * len(tasks)
        out = Round()
        for t in matrix.train:
            out.baseline_train[t] = matrix.builds(t, repeats, 0.0)
            out.candidate_train[t] = matrix.builds(t, repeats, delta)
        if holdout:
            for t in matrix.holdout:
                out.baseline_holdout[t] = matrix.builds(t, repeats, 0.0)
                out.candidate_holdout[t] = matrix.builds(t, repeats, delta)
        return out

    weights = {t: 1.0 for t in matrix.train + matrix.holdout}
    stages = evaluate(measure, weights, cfg, alpha)
    accepted = stages[-1].stage == "confirm" and stages[-1].go_on
    return accepted, sum(spent.values()), spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=600, help="A/A nights to simulate")
    parser.add_argument("--iterations", type=int, default=400, help="iterations per lift")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="try another DecisionConfig value (e.g. --set full_repeats=6)",
    )
    args = parser.parse_args()
    tasks = load_matrix(DEFAULT_MATRIX)
    train = [t.id for t in tasks if t.split == "train"]
    holdout = [t.id for t in tasks if t.split == "holdout"]
    cfg = DecisionConfig(**dict(item.split("=", 1) for item in args.set))
    alpha = cfg.night_alpha / NIGHT_ITERATIONS
    rng = np.random.default_rng(args.seed)
    print(f"default matrix: {len(train)} train and {len(holdout)} holdout tasks")
    print(
        f"rule: threshold {cfg.threshold}, repeats {cfg.screen_repeats} (screen) / "
        f"{cfg.full_repeats} (full) / +{cfg.confirm_repeats} (confirm), "
        f"alpha {cfg.night_alpha} per night = {alpha:.5f} per iteration over "
        f"{NIGHT_ITERATIONS}; smallest p over {len(train)} tasks {smallest_p(len(train)):.2g}"
    )
    started = time.perf_counter()
    kept, builds = 0, []
    for _ in range(args.nights):
        matrix = Matrix(rng, train, holdout)
        night = [iteration(matrix, 0.0, cfg, alpha) for _ in range(NIGHT_ITERATIONS)]
        kept += any(accepted for accepted, _, _ in night)
        builds += [b for _, b, _ in night]
    share = kept / args.nights
    half = 1.96 * np.sqrt(max(share * (1 - share), 1e-9) / args.nights)
    print(
        f"A/A nights keeping anything: {share:.1%} (95% CI +-{half:.1%}) of {args.nights}; "
        f"target <= 5%; mean builds per A/A iteration {np.mean(builds):.0f}"
    )
    for delta in (0.1, 0.2, 0.3):
        results = [iteration(Matrix(rng, train, holdout), delta, cfg, alpha)
                   for _ in range(args.iterations)]  # fmt: skip
        power = np.mean([accepted for accepted, _, _ in results])
        stage_builds = {
            s: np.mean([spent.get(s, 0) for _, _, spent in results])
            for s in ("screen", "full", "confirm")
        }
        target = {0.1: " (target >= 50%)", 0.2: " (target >= 80%)"}.get(delta, "")
        by_stage = ", ".join(f"{s} {n:.0f}" for s, n in stage_builds.items())
        print(
            f"true lift +{delta:.1f}: accepted in {power:.1%} of {args.iterations} "
            f"iterations{target}; builds per iteration {np.mean([b for _, b, _ in results]):.0f}"
            f" ({by_stage})"
        )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
