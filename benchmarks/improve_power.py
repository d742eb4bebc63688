"""How often the improve cycle keeps noise, how often it finds a real lift, and what it costs.

Drives the product's decision (``decision.evaluate`` and ``decision.accepted``, the
default ``DecisionConfig``, alpha from ``ImproveConfig.alpha`` over the iterations a
``cadillac nightly`` runs by default) on simulated nights of the default matrix: its train
and holdout tasks and their weights from the ``task.toml`` files. Baseline builds are
reused as the cycle reuses them, through ``reuse.BaselinePool``: the survey
(``ImproveConfig.survey_repeats`` repeats, train and holdout) fills the pool, each
iteration's round takes the pool's scores it has not used and builds only the shortfall,
and an accepted patch moves the tip and empties the pool. As in the cycle, the pool never
serves the tasks of the iteration's weakness (its builds picked it): their baseline is
built afresh, ``DecisionConfig.fresh_ratio`` builds per candidate build at every look.
The weakness is what the cycle would pick (``improve.weaknesses``: the most weighted score
lost in the tip's baseline builds, or after an accept the accepted candidate's): the k
train tasks that lost most there, k drawn from 1, 2, 4, 8 and 16 alike for a patch that
changes nothing. It prints:

* the share of A/A nights (no patch changes anything) that keep anything; target <= 5%;
* per true lift (+0.1, +0.2, +0.3 of the weighted train score) and per concentration (the
  lift carried by 1, 2, 4, 8 or 16 train tasks), the share of iterations that accept the
  patch; targets, where 4 or more tasks move: >= 50% at +0.1 and >= 80% at +0.2;
* the builds per iteration (both sides, holdout included, minus what the pool served),
  by stage; targets: <= 130 per null iteration and <= 300 per +0.2 iteration.

The simulated builds: each task has a difficulty, drawn once per simulated night: the
chance a build reaches validate (0.55 to 0.85) and the chance each of its 6 to 12 hidden
checks passes (0.2 to 0.8); a build that reaches validate scores the share of its checks
that pass, one that does not scores 0. A task lifted by l has its expected score raised
by l, through its checks and, once they all pass, its chance to reach validate.

A concentrated lift: the weakness's k train tasks (as above) each rise by the same amount,
capped so no task's expected score passes 1 (what a capped task cannot take is spread over the
others, water-filling); when the k tasks together cannot carry the lift, each goes to 1
and the lift realised is smaller (the table's "realised" column). The holdout does not
move, so its veto can only cost power. A lifting patch comes at a random iteration of a
night whose other patches change nothing: what the cycle meets, with the pool as the
iterations before it left it.

    .venv/bin/python benchmarks/improve_power.py [--nights 2000] [--iterations 400]
    .venv/bin/python benchmarks/improve_power.py --quick    # a 2-second smoke run
    .venv/bin/python benchmarks/improve_power.py --reuse-weakness   # what reusing its builds leaks
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small products: threads only cost

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.bench.decision import DecisionConfig, Round, accepted, evaluate  # noqa: E402
from orchestrator.bench.reuse import BaselinePool  # noqa: E402
from orchestrator.bench.tasks import DEFAULT_MATRIX, load_matrix  # noqa: E402
from orchestrator.cli.args import cycle_options  # noqa: E402
from orchestrator.improve.records import ImproveConfig  # noqa: E402

LIFTS = (0.1, 0.2, 0.3)
CONCENTRATIONS = (1, 2, 4, 8, 16)
TARGETS = {0.1: 0.5, 0.2: 0.8}
"""Power targets where at least 4 tasks move."""
STAGES = ("screen", "full", "confirm", "holdout")


class Matrix:
    """Simulated tasks: per task the chance to reach validate, the per-check pass rate and
    the number of checks; ``lift`` is each task's current lift over them."""

    def __init__(self, rng: np.random.Generator, tasks):
        self.rng = rng
        self.train = [t.id for t in tasks if t.split == "train"]
        self.holdout = [t.id for t in tasks if t.split == "holdout"]
        self.weights = {t.id: t.weight for t in tasks}
        n = len(tasks)
        ids = [t.id for t in tasks]
        self.reach = dict(zip(ids, rng.uniform(0.55, 0.85, n), strict=True))
        self.check = dict(zip(ids, rng.uniform(0.2, 0.8, n), strict=True))
        self.checks = dict(zip(ids, rng.integers(6, 13, n), strict=True))
        self.lift = dict.fromkeys(ids, 0.0)

    def expected(self, task: str, extra: float = 0.0) -> float:
        return min(1.0, self.reach[task] * self.check[task] + self.lift[task] + extra)

    def builds(self, task: str, n: int, extra: float = 0.0) -> list[float]:
        r, p, target = self.reach[task], self.check[task], self.expected(task, extra)
        r, p = (r, target / r) if target <= r else (target, 1.0)
        reached = self.rng.random(n) < r
        passed = self.rng.binomial(self.checks[task], p, n) / self.checks[task]
        return list(np.where(reached, passed, 0.0))

    def patch(self, delta: float, moved: list[str]) -> dict[str, float]:
        """Per task, the lift of a patch whose weighted train lift is ``delta`` carried by
        the ``moved`` train tasks (water-filled under each task's headroom)."""
        if not delta:
            return {}
        room = np.array([1.0 - self.expected(t) for t in moved])
        w = np.array([self.weights[t] for t in moved])
        need = delta * sum(self.weights[t] for t in self.train)
        if w @ room <= need:
            return dict(zip(moved, room, strict=True))
        lo, hi = 0.0, float(room.max())
        for _ in range(60):  # the common level whose capped lifts carry the lift
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if w @ np.minimum(room, mid) < need else (lo, mid)
        return dict(zip(moved, np.minimum(room, hi), strict=True))

    def realised(self, lifts: dict[str, float]) -> float:
        total = sum(self.weights[t] for t in self.train)
        return sum(self.weights[t] * x for t, x in lifts.items()) / total


class Night:
    """One simulated night: the matrix, the tip commit, the pool of baseline builds, and
    the train builds the cycle reads its weaknesses from."""

    def __init__(self, matrix: Matrix, survey_repeats: int, reuse_weakness: bool = False):
        self.matrix, self.pool, self.tip = matrix, BaselinePool(), 0
        self.reuse_weakness = reuse_weakness
        """Serve the weakness's tasks from the pool too (what the cycle must not do)."""
        self.seen: dict[str, list[float]] = {t: [] for t in matrix.train}
        """Per train task, the scores the weaknesses are read from: the tip's baseline
        builds, after an accept the accepted candidate's."""
        for t in matrix.train + matrix.holdout:  # the survey: the baseline, train and holdout
            self._add(t, matrix.builds(t, survey_repeats))

    def _add(self, task: str, scores: list[float]) -> None:
        self.pool.add(str(self.tip), task, scores)
        if task in self.seen:
            self.seen[task] += scores

    def weakness(self, k: int) -> list[str]:
        """The k train tasks that lost the most weighted score in the builds the cycle
        reads (ties at random): the tasks of the weakness it would pick."""
        m = self.matrix
        lost = {t: m.weights[t] * (1 - np.mean(s)) if s else 0.0 for t, s in self.seen.items()}
        order = sorted(m.train, key=lambda t: (-lost[t], m.rng.random()))
        return order[:k]

    def iteration(
        self, lifts: dict[str, float], weakness: list[str], cfg: DecisionConfig, alpha: float
    ):
        """One patch on ``weakness``'s tasks through the real stages; (accepted, builds by
        stage)."""
        m, spent = self.matrix, dict.fromkeys(STAGES, 0)
        self.pool.start_iteration(str(self.tip))
        afresh = set() if self.reuse_weakness else set(weakness)
        measured: dict[str, list[float]] = {}

        def measure(
            stage: str, repeats: int, holdout: bool, *, tasks=None, baseline=None, fresh=None
        ):
            out = Round()
            train = m.train if tasks is None else [t for t in m.train if t in set(tasks)]
            want = repeats if baseline is None else baseline
            for split, names in (("train", train), ("holdout", m.holdout if holdout else [])):
                for t in names:
                    if t in afresh:  # as the cycle: never the pool's, all built
                        base, new = [], m.builds(t, want if fresh is None else fresh)
                    else:
                        base = self.pool.take(t, want)
                        new = m.builds(t, want - len(base))
                    self._add(t, new)
                    cand = m.builds(t, repeats, lifts.get(t, 0))
                    getattr(out, f"baseline_{split}")[t] = base + new
                    getattr(out, f"candidate_{split}")[t] = cand
                    if split == "train":
                        measured.setdefault(t, []).extend(cand)
                    spent[stage] += repeats + len(new)
            return out

        ok = accepted(evaluate(measure, m.weights, cfg, alpha))
        if ok:  # the tip moves to the candidate: its lifts are the new baseline's
            self.tip += 1
            for t, x in lifts.items():
                m.lift[t] += x
            self.seen = {t: measured.get(t, []) for t in m.train}
        return ok, spent

    def null(self, cfg: DecisionConfig, alpha: float) -> tuple[bool, dict[str, int], int]:
        """A patch that changes nothing, on a weakness of 1 to 16 tasks: (accepted, builds
        by stage, the weakness's tasks)."""
        k = int(self.matrix.rng.choice(CONCENTRATIONS))
        return *self.iteration({}, self.weakness(k), cfg, alpha), k


def wilson(hits: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a share."""
    if not n:
        return 0.0, 1.0
    z, p = 1.96, hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def by_stage(spent: list[dict[str, int]]) -> str:
    return " / ".join(f"{np.mean([s[k] for s in spent]):.0f}" for k in STAGES)


def total(spent: list[dict[str, int]]) -> float:
    return float(np.mean([sum(s.values()) for s in spent])) if spent else float("nan")


def aa_nights(
    rng, tasks, improve: ImproveConfig, nights: int, reuse_weakness: bool
) -> tuple[int, dict[int, list]]:
    """(nights that kept anything, builds of every iteration by its weakness's tasks) of
    nights where no patch changes anything."""
    kept, spent = 0, {k: [] for k in CONCENTRATIONS}
    for _ in range(nights):
        night = Night(Matrix(rng, tasks), improve.survey_repeats, reuse_weakness)
        results = [night.null(improve.decision, improve.alpha) for _ in range(improve.iterations)]
        kept += any(ok for ok, _, _ in results)
        for _, s, k in results:
            spent[k].append(s)
    return kept, spent


def lifting(rng, tasks, improve: ImproveConfig, delta: float, k: int, n: int, reuse_weakness):
    """n lifting patches, each on the weakness of k tasks at a random iteration of its own
    night after patches that change nothing: (accepted, builds of each, lifts realised,
    builds of the iteration after each accept)."""
    cfg, alpha = improve.decision, improve.alpha
    hits, spent, realised, after = 0, [], [], []
    for _ in range(n):
        night = Night(Matrix(rng, tasks), improve.survey_repeats, reuse_weakness)
        for _ in range(rng.integers(improve.iterations)):
            night.null(cfg, alpha)
        moved = night.weakness(k)
        lifts = night.matrix.patch(delta, moved)
        realised.append(night.matrix.realised(lifts))
        ok, s = night.iteration(lifts, moved, cfg, alpha)
        hits += ok
        spent.append(s)
        if ok:  # the next patch meets an empty pool
            after.append(night.null(cfg, alpha)[1])
    return hits, spent, realised, after


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=2000, help="A/A nights to simulate")
    parser.add_argument("--iterations", type=int, default=400, help="lifting patches per cell")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 10 nights, 2 per cell")
    parser.add_argument(
        "--reuse-weakness",
        action="store_true",
        help="serve the weakness's tasks from the pool too (what the cycle never does)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="try another DecisionConfig value (e.g. --set confirm_repeats=5)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.nights, args.iterations = 10, 2
    tasks = load_matrix(DEFAULT_MATRIX)
    cfg = DecisionConfig(**dict(item.split("=", 1) for item in args.set))
    night_iterations = cycle_options().parse_args([]).iterations  # what `nightly` runs
    improve = ImproveConfig(iterations=night_iterations, decision=cfg)
    rng = np.random.default_rng(args.seed)
    train = sum(t.split == "train" for t in tasks)
    print(
        f"default matrix: {train} train and {len(tasks) - train} holdout tasks, weights "
        f"{sorted({t.weight for t in tasks})}; a night: a survey of {improve.survey_repeats} "
        f"repeats, then {night_iterations} iterations (nightly's default)"
    )
    print(
        f"rule: threshold {cfg.threshold}; builds per train task: baseline "
        f"{cfg.baseline_repeats} (the weakness's: {cfg.fresh_ratio} per candidate build, "
        f"afresh{', here reused' if args.reuse_weakness else ''}), candidate "
        f"{cfg.screen_repeats} (screen), "
        f"{cfg.full_repeats} (full), +{cfg.confirm_repeats} (confirm); holdout "
        f"{cfg.holdout_repeats} a side; alpha {cfg.night_alpha} a night = "
        f"{improve.alpha:.4f} an iteration, {cfg.early_share:.0%} of it at the full stage"
    )
    started = time.perf_counter()

    kept, by_weakness = aa_nights(rng, tasks, improve, args.nights, args.reuse_weakness)
    null_spent = [s for spent in by_weakness.values() for s in spent]
    lo, hi = wilson(kept, args.nights)
    print(
        f"\nA/A nights keeping anything: {kept / args.nights:.1%} of {args.nights} "
        f"(95% CI {lo:.1%} to {hi:.1%}); target <= 5%"
    )
    print(
        f"builds per null iteration: {total(null_spent):.0f} (screen / full / confirm / "
        f"holdout {by_stage(null_spent)}); target <= 130; the survey: "
        f"{improve.survey_repeats * len(tasks)} a night"
    )
    print(
        "  by the weakness's tasks: "
        + ", ".join(f"{k}: {total(spent):.0f}" for k, spent in by_weakness.items())
    )

    print(
        f"\n{'lift':>5} {'tasks':>5} {'realised':>8} {'accepted':>9} {'95% CI':>13} "
        f"{'builds':>6}  screen / full / confirm / holdout"
    )
    worst: dict[float, float] = {}
    row: dict[float, list[float]] = {}
    after_accept: list[dict[str, int]] = []
    for delta in LIFTS:
        for k in CONCENTRATIONS:
            hits, spent, realised, after = lifting(
                rng, tasks, improve, delta, k, args.iterations, args.reuse_weakness
            )
            after_accept += after
            power = hits / args.iterations
            lo, hi = wilson(hits, args.iterations)
            if k >= 4:
                worst[delta] = min(worst.get(delta, 1.0), power)
            row.setdefault(delta, []).append(total(spent))
            print(
                f"{delta:+5.1f} {k:5d} {np.mean(realised):+8.3f} {power:9.1%} "
                f"{lo:6.1%}-{hi:6.1%} {total(spent):6.0f}  {by_stage(spent)}"
            )
    print(
        "\nlowest power where 4 or more tasks move: "
        + ", ".join(f"+{d:.1f} {worst[d]:.1%} (target {t:.0%})" for d, t in TARGETS.items())
    )
    print(
        f"builds per +0.2 iteration: at most {max(row[0.2]):.0f} (one concentration), "
        f"{np.mean(row[0.2]):.0f} over all five; target <= 300"
    )
    print(
        f"builds of the iteration after an accept (the pool emptied): {total(after_accept):.0f}"
        f" ({by_stage(after_accept)}) over {len(after_accept)}"
    )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
