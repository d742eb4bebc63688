"""What a cycle will spend, known before the night: builds, cost and time, and the most one
iteration can spend, which the spend cap is checked against before each iteration starts.

:func:`iteration_builds` is the one bound of an iteration: every look of the decision
rule made (:func:`orchestrator.bench.decision.evaluate`: the baseline's screen builds
and the candidate's screen, full and confirmation builds of the train tasks, each train
task's baseline built afresh as a weakness's is, then the holdout's builds), nothing
reused. Reuse only lowers what is built (:mod:`orchestrator.bench.reuse`): while no
patch is kept, the baseline side builds little more than the weakness's own tasks. A
test drives the real ``evaluate`` down its longest path and pins this count to it.

What a build costs, in dollars, tokens and seconds, is measured: from the cycle's own
builds once its survey ran, before that from earlier builds of the same model in the
home (an improve run's survey, a matrix run). A model built into cadillac (``scripted:``,
``replay:``) costs nothing. Otherwise the cost is "unknown until the survey". A model's
known price (:mod:`orchestrator.llm.prices`) is what makes its builds' costs known: a
build of a model without one records tokens only, and a cap in tokens is what can stop it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from orchestrator.bench.decision import DecisionConfig
from orchestrator.bench.results import NOT_BUILT, MatrixResults
from orchestrator.home import Home
from orchestrator.llm.backends import is_builtin
from orchestrator.llm.prices import highest_prices
from orchestrator.sandbox.files import read_regular

RECORD_LIMIT = 8_000_000


def _worst(rule: DecisionConfig) -> tuple[bool, int, int]:
    """(whether a train task's most is as a weakness's, its candidate builds, its
    baseline builds) when every look runs and nothing is reused: a task's baseline is
    either the pool's (its screen's ``baseline_repeats``, built when the pool is empty) or,
    for a task of the weakness, built afresh beside the candidate at every look
    (``fresh_ratio`` per candidate build), whichever is more."""
    candidate = rule.full_repeats + rule.confirm_repeats  # the screen's, the full's rest, confirm
    fresh = rule.fresh_ratio * candidate
    return fresh >= rule.baseline_repeats, candidate, max(fresh, rule.baseline_repeats)


def iteration_builds(
    rule: DecisionConfig, tasks: Mapping[str, str], wall: bool = False
) -> dict[str, int]:
    """Per task (id -> its split), the most builds one iteration makes of it, both sides:
    every look run, the holdout built, nothing reused (:func:`_worst`). ``wall``: the
    builds one after another, both sides building at once (each look's longer side)."""
    if wall:
        sr, later = rule.screen_repeats, rule.full_repeats - rule.screen_repeats
        later += rule.confirm_repeats
        fresh = max(sr, rule.fresh_ratio * sr) + max(1, rule.fresh_ratio) * later
        train, holdout = max(fresh, max(sr, rule.baseline_repeats) + later), rule.holdout_repeats
    else:
        _, candidate, baseline = _worst(rule)
        train, holdout = candidate + baseline, 2 * rule.holdout_repeats
    return {t: train if split == "train" else holdout for t, split in tasks.items()}


def iteration_bound(
    rule: DecisionConfig,
    tasks: Mapping[str, str],
    per_build: Mapping[str, float],
    wall: bool = False,
) -> float | None:
    """The most one iteration spends of what ``per_build`` measures per task (dollars,
    tokens, seconds; ``wall``: see :func:`iteration_builds`): each task's builds at its
    own figure, a task without one at the largest; None when nothing is measured."""
    if not per_build:
        return None
    top = max(per_build.values())
    builds = iteration_builds(rule, tasks, wall)
    return sum(n * per_build.get(t, top) for t, n in builds.items())


def stage_builds(
    rule: DecisionConfig, train: int, holdout: int, reused: bool = False, weakness_tasks: int = 1
) -> dict[str, int]:
    """The most builds of each look, both sides, adding up to :func:`iteration_builds`;
    ``reused``: while no patch is kept, once the pool serves the baseline of every train
    task but the weakness's (built afresh) and of the holdout."""
    sr, fresh = rule.screen_repeats, rule.fresh_ratio
    looks = {"screen": sr, "full": rule.full_repeats - sr, "confirm": rule.confirm_repeats}
    if reused:
        out = {look: n * (train + fresh * weakness_tasks) for look, n in looks.items()}
        return out | {"holdout": rule.holdout_repeats * holdout}
    if _worst(rule)[0]:  # every train task a weakness's: built afresh at every look
        out = {look: n * train * (1 + fresh) for look, n in looks.items()}
    else:  # every train task the pool's, which is empty
        out = {look: n * train for look, n in looks.items()}
        out["screen"] += rule.baseline_repeats * train
    return out | {"holdout": 2 * rule.holdout_repeats * holdout}


def cannot_finish(
    rule: DecisionConfig,
    tasks: Mapping[str, str],
    built: list[MatrixResults],
    caps: Mapping[str, tuple[float | None, float, float]],
) -> str:
    """Why a spend cap cannot finish another iteration at its most, or "" when it can or
    nothing measured tells. ``caps``: for "cost" and "tokens", (the cap or None, what was
    spent, what one improver call spends); an iteration's most is :func:`iteration_bound`
    at the builds' measured figures (``built``: every build so far), and one call."""
    measured = PerBuild.of(built, "")
    for name, (cap, spent, improver) in caps.items():
        each = iteration_bound(rule, tasks, getattr(measured, name))
        if cap is None or each is None or each + improver <= cap - spent:
            continue
        builds = sum(iteration_builds(rule, tasks).values())
        unit, flag = ("USD", "--max-cost") if name == "cost" else ("tokens", "--max-tokens")
        return (
            f"the spend cap cannot finish another iteration: one could spend "
            f"{each + improver:,.4g} {unit} ({builds:,} builds at their measured {name}, and "
            f"the improver), {max(0.0, cap - spent):,.4g} {unit} are left of {flag} {cap:g}"
        )
    return ""


@dataclass
class PerBuild:
    """What a build costs, per task, as measured (empty: not measured)."""

    cost: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    source: str = ""
    """Where the figures come from: "the survey", "earlier runs in this home"."""
    free: bool = False
    """A model built into cadillac: its builds cost no money."""

    @classmethod
    def of(cls, results: Iterable[MatrixResults], source: str, free: bool = False) -> PerBuild:
        runs = [r for res in results for r in res.runs if r.status not in NOT_BUILT]
        by_task: dict[str, list] = defaultdict(list)
        for run in runs:
            by_task[run.task_id].append(run)

        def mean(values: list[float]) -> float | None:
            return sum(values) / len(values) if values else None

        out = cls(source=source if runs else "", free=free)
        for task, done in by_task.items():
            figures = {
                "cost": mean([r.cost_usd for r in done if r.cost_usd is not None]),
                "tokens": mean([float(r.tokens) for r in done]),
                "seconds": mean([r.seconds for r in done if r.seconds > 0]),
            }
            for name, value in figures.items():
                if value is not None and math.isfinite(value) and value >= 0:
                    getattr(out, name)[task] = value
        return out

    def mean(self, name: str) -> float | None:
        values = list(getattr(self, name).values())
        return sum(values) / len(values) if values else None

    def priced(self, per_token: float) -> None:
        """Costs for builds that recorded tokens but no cost, at ``per_token`` (the model's
        highest known price per token: an upper bound)."""
        if self.cost or not self.tokens:
            return
        self.cost = {task: n * per_token for task, n in self.tokens.items()}
        self.source += ", its tokens at the model's known price"


def earlier_builds(home: Home, model: str) -> list[MatrixResults]:
    """Results of earlier runs in the home built by ``model``: improve surveys (a night's
    too) and matrix runs; records that cannot be read are passed over."""
    runs = home.runs_dir
    if not runs.is_dir():
        return []
    paths = [
        *runs.glob("improve-*/baseline.json"),
        *runs.glob("nightly-*/improve/baseline.json"),
        *runs.glob("matrix-*/results.json"),
    ]
    out = []
    for path in sorted(paths):
        try:
            results = MatrixResults.model_validate_json(read_regular(path, RECORD_LIMIT))
        except (OSError, ValueError):
            continue
        if results.model == model:
            out.append(results)
    return out


@dataclass
class Estimate:
    """A cycle's expected spend, from its rule, its matrix and what builds cost."""

    model: str
    """The builder model (its price, or none)."""
    rule: DecisionConfig
    tasks: dict[str, str]
    """task id -> split"""
    survey_repeats: int
    iterations: int
    jobs: int
    per_build: PerBuild
    max_cost: float | None = None
    max_tokens: int | None = None

    def measure(self, results: Iterable[MatrixResults], source: str) -> None:
        """What a build costs, from ``results`` (builds of this model)."""
        self.per_build = PerBuild.of(results, source, free=is_builtin(self.model))
        if not self.per_build.free:
            prices = highest_prices([self.model])
            if prices is not None:
                self.per_build.priced(max(prices))

    @property
    def train(self) -> int:
        return sum(1 for s in self.tasks.values() if s == "train")

    @property
    def holdout(self) -> int:
        return len(self.tasks) - self.train

    def survey_builds(self) -> int:
        return self.survey_repeats * len(self.tasks)

    def bound(self, name: str) -> float | None:
        """The most one iteration spends of ``name`` (cost, tokens, seconds of builds)."""
        if name == "cost" and self.per_build.free:
            return 0.0
        return iteration_bound(self.rule, self.tasks, getattr(self.per_build, name))

    def survey(self, name: str) -> float | None:
        """What the survey spends of ``name``, about."""
        if name == "cost" and self.per_build.free:
            return 0.0
        figures = getattr(self.per_build, name)
        if not figures:
            return None
        top = max(figures.values())
        return self.survey_repeats * sum(figures.get(t, top) for t in self.tasks)

    def fits(self) -> int | None:
        """Iterations the spend cap leaves room for after the survey, each at its most
        (None: no cap, or nothing measured to tell)."""
        out = None
        for cap, name in ((self.max_cost, "cost"), (self.max_tokens, "tokens")):
            survey, each = self.survey(name), self.bound(name)
            if cap is None or survey is None or not each:
                continue
            room = max(0, math.floor((cap - survey) / each))
            out = room if out is None else min(out, room)
        return out

    def lines(self) -> list[str]:
        stages = stage_builds(self.rule, self.train, self.holdout)
        served = stage_builds(self.rule, self.train, self.holdout, reused=True)
        by = ", ".join(f"{name} {n:,}" for name, n in stages.items())
        out = [
            f"estimate: {self.train} train and {self.holdout} holdout task(s); the survey "
            f"builds {self.survey_builds():,}; an iteration at most {sum(stages.values()):,} "
            f"({by}) with nothing reused, at most {sum(served.values()):,} once the "
            "baseline's earlier builds serve all but the weakness's task (while no patch is "
            f"kept), a patch dropped by the screen then {served['screen']:,}, by the full stage "
            f"{served['screen'] + served['full']:,}; {self.iterations} iteration(s) at most"
        ]
        out.append(self.money())
        out.append(self.timing())
        fits = self.fits()
        if fits is not None and fits < self.iterations:
            out.append(
                f"estimate: the spend cap leaves room for the survey and {fits} iteration(s) "
                "at their most; no iteration starts that the budget left cannot finish"
            )
        return out

    def money(self) -> str:
        """The line of what a build, the survey and an iteration cost."""
        pb = self.per_build
        if pb.free:
            return "estimate: cost $0: the model is built into cadillac"
        each, survey = self.bound("cost"), self.survey("cost")
        if each is None or survey is None:
            tokens = self.bound("tokens")
            if tokens is not None and pb.source:
                return (
                    f"estimate: cost unknown (no known price for {self.model}); tokens: "
                    f"the survey about {self.survey('tokens'):,.0f}, an iteration at most "
                    f"{tokens:,.0f} ({pb.source})"
                )
            return "estimate: cost unknown until the survey"
        total = survey + self.iterations * each
        return (
            f"estimate: ${pb.mean('cost'):.4f} a build ({pb.source}): the survey about "
            f"${survey:.2f}, an iteration at most ${each:.2f}; with {self.iterations} "
            f"iteration(s) at most ${total:.2f}"
        )

    def timing(self) -> str:
        """The line of how long a build, the survey and an iteration take."""
        each = self.wall()
        if each is None:
            return "estimate: time unknown until the survey"
        survey = (self.survey("seconds") or 0.0) / self.jobs
        return (
            f"estimate: {self.per_build.mean('seconds'):.0f} s a build: the survey about "
            f"{_duration(survey)}, an iteration at most {_duration(each)} at --jobs "
            f"{self.jobs} (both sides at once)"
        )

    def wall(self) -> float | None:
        """The most seconds one iteration takes at ``jobs`` (None: not measured)."""
        seconds = iteration_bound(self.rule, self.tasks, self.per_build.seconds, wall=True)
        return None if seconds is None else seconds / self.jobs

    def as_json(self) -> dict:
        stages = stage_builds(self.rule, self.train, self.holdout)
        served = stage_builds(self.rule, self.train, self.holdout, reused=True)
        survey_seconds = self.survey("seconds")
        return {
            "train": self.train,
            "holdout": self.holdout,
            "survey_builds": self.survey_builds(),
            "iteration_builds": stages,
            "iteration_builds_most": sum(stages.values()),
            "iteration_builds_reused": served,
            "iteration_builds_most_reused": sum(served.values()),
            "iterations": self.iterations,
            "jobs": self.jobs,
            "cost_per_build": 0.0 if self.per_build.free else self.per_build.mean("cost"),
            "survey_cost": self.survey("cost"),
            "iteration_cost_most": self.bound("cost"),
            "survey_tokens": self.survey("tokens"),
            "iteration_tokens_most": self.bound("tokens"),
            "survey_seconds": None if survey_seconds is None else survey_seconds / self.jobs,
            "iteration_seconds_most": self.wall(),
            "measured": self.per_build.source or None,
            "iterations_the_cap_allows": self.fits(),
        }


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def before_the_survey(
    home: Home,
    model: str,
    rule: DecisionConfig,
    tasks: dict[str, str],
    survey_repeats: int,
    iterations: int,
    jobs: int,
    max_cost: float | None = None,
    max_tokens: int | None = None,
) -> Estimate:
    """The estimate from the home's earlier builds of ``model`` (read only)."""
    estimate = Estimate(
        model, rule, tasks, survey_repeats, iterations, jobs, PerBuild(), max_cost, max_tokens
    )
    estimate.measure(earlier_builds(home, model), "earlier runs in this home")
    return estimate
