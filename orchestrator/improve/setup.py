"""An improve cycle from what a command asks: the models, the matrix, the sandbox, the limits.

``cadillac improve`` and ``cadillac nightly`` both start cycles; :class:`CycleRequest` is
what either asks for, and :func:`make_cycle` checks everything that can be checked before
a run folder is made (the models are known, the sandbox works, the matrix loads, the
repository is a git checkout, a scripted builder's module can reach the trials:
:mod:`orchestrator.improve.carried`) and builds the cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from orchestrator import SOURCE_ROOT
from orchestrator.bench import MAX_REPEATS
from orchestrator.bench.decision import DecisionConfig, least_alpha, smallest_p
from orchestrator.bench.engines.config import EngineConfig
from orchestrator.bench.tasks import DEFAULT_MATRIX, MatrixTask, load_matrix
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.hooks import Hooks
from orchestrator.improve.carried import carry_policies
from orchestrator.improve.cycle import ImproveCycle
from orchestrator.improve.estimate import Estimate, before_the_survey
from orchestrator.improve.git import git, repo_root
from orchestrator.improve.lifetime import DEFAULT_BUDGET, lifetime_grant
from orchestrator.improve.ray_trials import RayTrials
from orchestrator.improve.records import ImproveConfig
from orchestrator.improve.trial import SandboxedMatrix
from orchestrator.llm.client import LLMClient, LLMConfig, check_model
from orchestrator.sandbox.executor import ExecConfig, check_sandbox


class CycleRequest(BaseModel):
    """What a command line asks of an improve cycle."""

    model_config = ConfigDict(extra="forbid")

    builder: LLMConfig
    """The model that builds the matrix (with its api base and fallbacks)."""
    improver: LLMConfig
    """The model that writes patches, with its own api base."""
    matrix: Path = DEFAULT_MATRIX
    repo: Path = SOURCE_ROOT
    repeats: int | None = Field(default=None, ge=2)
    """The candidate's builds per train task after the full stage, and as many more in the
    confirmation (default: the rule's)."""
    jobs: int = Field(default=1, ge=1)
    engine: EngineConfig | None = None
    """Where the trials run: this machine (None, or local) or a Ray cluster."""
    iterations: int = Field(default=5, ge=1)
    threshold: float | None = Field(default=None, ge=0)
    """The least lift worth keeping (default: the rule's)."""
    apply: bool = False
    max_seconds: float | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    lifetime_alpha: float | None = Field(default=DEFAULT_BUDGET, gt=0, lt=1)
    """The false-accept budget over the repository's life (None: the night's bound alone)."""
    unsafe_no_sandbox: bool = False
    verbose: bool = False
    """``--verbose``: each trial's builds trace their tool calls into its trial.log."""


def _with_repeats(rule: DecisionConfig, repeats: int) -> DecisionConfig:
    """The rule with ``--repeats``: the candidate's builds per train task after the full
    stage, and as many more in the confirmation."""
    update = {"full_repeats": repeats, "confirm_repeats": repeats}
    return DecisionConfig.model_validate(rule.model_dump() | update)


def _what_would_help(train: int, rule: DecisionConfig, iterations: int) -> str:
    """What lets the rule reach its alpha: more train tasks (how many), more repeats (how
    many), fewer iterations (how few); only those that can."""
    alpha = rule.night_alpha / iterations
    ways = []
    tasks = next((n for n in range(train + 1, train + 65) if least_alpha(n, rule) <= alpha), None)
    if tasks is not None:
        ways.append(f"add train tasks (at least {tasks})")
    low = max(rule.full_repeats + 1, 2)
    more = next(
        (
            k
            for k in range(low, MAX_REPEATS + 1)
            if least_alpha(train, _with_repeats(rule, k)) <= alpha
        ),
        None,
    )
    if more is not None:
        ways.append(f"run --repeats {more} or more")
    most = int(rule.night_alpha / least_alpha(train, rule))  # the iterations its builds carry
    if most >= 1:
        ways.append(f"run --iterations {most} or fewer")
    if not ways:
        return f"no number of train tasks, repeats or iterations lets it reach {alpha:.3g}"
    cannot = [what for what, found in (("train tasks", tasks), ("repeats", more)) if found is None]
    said = ways[0] if len(ways) == 1 else ", ".join(ways[:-1]) + ", or " + ways[-1]
    return said + (f" (more {' or '.join(cannot)} cannot help)" if cannot else "")


def make_cycle(
    home: Home,
    request: CycleRequest,
    on_event: Callable[[str], None] | None = None,
    folder: Path | None = None,
    hooks: Hooks | None = None,
) -> ImproveCycle:
    for endpoint in [*request.builder.endpoints(), *request.improver.endpoints()]:
        check_model(endpoint.model)
    executor = ExecConfig(sandbox="none" if request.unsafe_no_sandbox else "bwrap")
    check_sandbox(executor)
    repo = repo_root(request.repo)
    models = [endpoint.model for endpoint in request.builder.endpoints()]
    carried = carry_policies(models, repo, git(repo, "rev-parse", "HEAD"))
    load_matrix(request.matrix.resolve())  # a bad one fails now, before any Ray is reached
    engine = request.engine or EngineConfig(jobs=request.jobs)
    extra = {"engine": engine} if engine.kind == "ray" else {}
    runner = (RayTrials if engine.kind == "ray" else SandboxedMatrix)(
        home,
        request.matrix.resolve(),
        request.builder,
        request.jobs,
        executor=executor,
        carried=carried,
        verbose=request.verbose,
        **extra,
    )
    for line in getattr(runner, "refused", ()):
        (on_event or (lambda _: None))(f"warning: {line}")
    rule = decision_rule(request)
    config = ImproveConfig(
        iterations=request.iterations,
        decision=rule,
        apply=request.apply,
        max_seconds=request.max_seconds,
        max_cost_usd=request.max_cost_usd,
        max_tokens=request.max_tokens,
        executor=executor,
        lifetime_alpha=request.lifetime_alpha,
    )
    train = sum(1 for task in runner.tasks if task.split == "train")
    if least_alpha(train, rule) > config.night_share:
        raise CadillacError(
            f"{request.matrix} has {train} train task(s): with the builds the decision asks "
            f"for, its test cannot give a p-value below {smallest_p(train, rule):.3g}, so it "
            f"can keep a patch only at an alpha of {least_alpha(train, rule):.3g} per "
            f"iteration or more, not {config.night_share:.3g} ({rule.night_alpha:g} over "
            f"{config.iterations}): no patch could be kept; "
            f"{_what_would_help(train, rule, config.iterations)}"
        )
    granted = lifetime_grant(home, repo, config)
    if granted is not None and least_alpha(train, rule) > granted:
        raise CadillacError(
            f"{request.matrix} has {train} train task(s): the decision can keep a patch only "
            f"at an alpha of {least_alpha(train, rule):.3g} or more, above the {granted:.3g} "
            "per iteration that the repository's lifetime error budget "
            f"({config.lifetime_alpha:g}) grants now, so no patch could be kept; add train "
            "tasks, run fewer --iterations, or give a larger --lifetime-alpha (a weaker "
            "bound over the repository's life)"
        )
    improver = LLMClient(request.improver)
    cycle = ImproveCycle(
        home, repo, runner, improver, config, on_event=on_event, folder=folder, hooks=hooks
    )
    cycle.estimate = estimate_of(home, request, runner.tasks, config)
    return cycle


def decision_rule(request: CycleRequest) -> DecisionConfig:
    """The keep-or-drop rule a command asks for: the defaults, with its repeats and threshold."""
    rule = DecisionConfig()
    if request.repeats is not None:
        rule = _with_repeats(rule, request.repeats)
    if request.threshold is not None:
        rule = rule.model_copy(update={"threshold": request.threshold})
    return rule


def estimate_of(
    home: Home, request: CycleRequest, tasks: list[MatrixTask], config: ImproveConfig | None = None
) -> Estimate:
    """What a cycle of ``request`` will spend, as far as is known before its survey (from the
    home's earlier builds of its model; reads only)."""
    config = config or ImproveConfig(iterations=request.iterations, decision=decision_rule(request))
    return before_the_survey(
        home,
        request.builder.model,
        config.decision,
        {task.id: task.split for task in tasks},
        config.survey_repeats,
        config.iterations,
        request.jobs,
        request.max_cost_usd,
        request.max_tokens,
    )
