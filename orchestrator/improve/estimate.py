"""What a cycle will spend, known before the night: builds, cost and time, and the most one
iteration can spend, which the spend cap is checked against before each iteration starts.

:func:`iteration_builds` is the one bound of an iteration: every look of the decision
rule run to the end (the baseline's screen builds and the candidate's screen, full and
confirmation builds of the train tasks, each train task's baseline built afresh as a
weakness's is, then the holdout's builds), nothing reused. Reuse only lowers what is
built (:mod:`orchestrator.bench.reuse`): while no patch is kept, the baseline side builds
little more than the weakness's own tasks.

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
from orchestrator.sandbox.files import read_regular

RECORD_LIMIT = 8_000_000


def _train_task_builds(rule: DecisionConfig) -> tuple[int, int]:
    """(candidate, baseline) builds of one train task when every look runs and nothing is
    reused: the baseline's screen at its full count (or, for a task of the weakness, built
    afresh beside the candidate at every look, whichever is more), then the fresh builds
    of the later looks."""
    fresh = rule.fresh_ratio
    candidate = rule.full_repeats + rule.confirm_repeats  # the screen's, the full's rest, confirm
    later = rule.full_repeats - rule.screen_repeats + rule.confirm_repeats
    baseline = max(rule.baseline_repeats, fresh * rule.screen_repeats) + fresh * later
    return candidate, baseline


def iteration_builds(rule: DecisionConfig, tasks: Mapping[str, str]) -> dict[str, int]:
    """Per task (id -> its split), the most builds one iteration makes of it, both sides:
    every look run, the holdout built, nothing reused, every train task as if it were the
    weakness's (its baseline built afresh at every look)."""
    candidate, baseline = _train_task_builds(rule)
    holdout = 2 * rule.holdout_repeats
    return {t: candidate + baseline if split == "train" else holdout for t, split in tasks.items()}


def iteration_bound(
    rule: DecisionConfig, tasks: Mapping[str, str], per_build: Mapping[str, float]
) -> float | None:
    """The most one iteration spends of what ``per_build`` measures per task (dollars,
    tokens, seconds): each task's builds at its own figure, a task without one at the
    largest; None when nothing is measured."""
    if not per_build:
        return None
    top = max(per_build.values())
    return sum(n * per_build.get(t, top) for t, n in iteration_builds(rule, tasks).items())


def stage_builds(rule: DecisionConfig, train: int, holdout: int) -> dict[str, int]:
    """The most builds of each look, both sides (as :func:`iteration_builds` counts them)."""
    fresh = rule.fresh_ratio
    return {
        "screen": train
        * (rule.screen_repeats + max(rule.baseline_repeats, fresh * rule.screen_repeats)),
        "full": train * (rule.full_repeats - rule.screen_repeats) * (1 + fresh),
        "confirm": train * rule.confirm_repeats * (1 + fresh),
        "holdout": 2 * rule.holdout_repeats * holdout,
    }


def reusable(rule: DecisionConfig, train: int, holdout: int, weakness_tasks: int = 1) -> int:
    """The baseline builds of an iteration that earlier builds of an unchanged tip can
    serve at most: the screen's baseline of every train task but the weakness's (built
    afresh), and the holdout's baseline."""
    return rule.baseline_repeats * max(0, train - weakness_tasks) + rule.holdout_repeats * holdout


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

    rule: DecisionConfig
    tasks: dict[str, str]
    """task id -> split"""
    survey_repeats: int
    iterations: int
    jobs: int
    per_build: PerBuild
    max_cost: float | None = None
    max_tokens: int | None = None

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
        most = sum(stages.values())
        saved = reusable(self.rule, self.train, self.holdout)
        by = ", ".join(f"{name} {n:,}" for name, n in stages.items())
        out = [
            f"estimate: {self.train} train and {self.holdout} holdout task(s); the survey "
            f"builds {self.survey_builds():,}; an iteration at most {most:,} ({by}; a patch "
            f"dropped by the screen {stages['screen']:,}, by the full stage "
            f"{stages['screen'] + stages['full']:,}); while no patch is kept, earlier "
            f"builds of the baseline serve up to {saved:,} of them; {self.iterations} "
            "iteration(s) at most"
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
                    f"estimate: cost unknown (the model's builds record no price); tokens: "
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
        seconds = self.bound("seconds")
        if seconds is None:
            return "estimate: time unknown until the survey"
        survey = (self.survey("seconds") or 0.0) / self.jobs
        each = seconds / 2 / self.jobs  # both sides at once, each with --jobs builds
        return (
            f"estimate: {self.per_build.mean('seconds'):.0f} s a build: the survey about "
            f"{_duration(survey)}, an iteration at most {_duration(each)} at --jobs "
            f"{self.jobs} (both sides at once)"
        )

    def as_json(self) -> dict:
        stages = stage_builds(self.rule, self.train, self.holdout)
        return {
            "train": self.train,
            "holdout": self.holdout,
            "survey_builds": self.survey_builds(),
            "iteration_builds": stages,
            "iteration_builds_most": sum(stages.values()),
            "reusable_builds": reusable(self.rule, self.train, self.holdout),
            "iterations": self.iterations,
            "jobs": self.jobs,
            "cost_per_build": 0.0 if self.per_build.free else self.per_build.mean("cost"),
            "survey_cost": self.survey("cost"),
            "iteration_cost_most": self.bound("cost"),
            "survey_tokens": self.survey("tokens"),
            "iteration_tokens_most": self.bound("tokens"),
            "survey_seconds": None
            if self.survey("seconds") is None
            else self.survey("seconds") / self.jobs,
            "iteration_seconds_most": None
            if self.bound("seconds") is None
            else self.bound("seconds") / 2 / self.jobs,
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
    free = is_builtin(model)
    earlier = earlier_builds(home, model)
    per_build = PerBuild.of(earlier, "earlier runs in this home", free=free)
    return Estimate(rule, tasks, survey_repeats, iterations, jobs, per_build, max_cost, max_tokens)
