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
from orchestrator.bench.tasks import DEFAULT_MATRIX
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.hooks import Hooks
from orchestrator.improve.carried import carry_policies
from orchestrator.improve.cycle import ImproveCycle
from orchestrator.improve.git import git, repo_root
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
    iterations: int = Field(default=5, ge=1)
    threshold: float | None = Field(default=None, ge=0)
    """The least lift worth keeping (default: the rule's)."""
    apply: bool = False
    max_seconds: float | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
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
    runner = SandboxedMatrix(
        home,
        request.matrix.resolve(),
        request.builder,
        request.jobs,
        executor=executor,
        carried=carried,
        verbose=request.verbose,
    )  # loads the matrix: a bad one fails now, not after the baseline
    rule = DecisionConfig()
    if request.repeats is not None:
        rule = _with_repeats(rule, request.repeats)
    if request.threshold is not None:
        rule = rule.model_copy(update={"threshold": request.threshold})
    config = ImproveConfig(
        iterations=request.iterations,
        decision=rule,
        apply=request.apply,
        max_seconds=request.max_seconds,
        max_cost_usd=request.max_cost_usd,
        max_tokens=request.max_tokens,
        executor=executor,
    )
    train = sum(1 for task in runner.tasks if task.split == "train")
    if least_alpha(train, rule) > config.alpha:
        raise CadillacError(
            f"{request.matrix} has {train} train task(s): with the builds the decision asks "
            f"for, its test cannot give a p-value below {smallest_p(train, rule):.3g}, so it "
            f"can keep a patch only at an alpha of {least_alpha(train, rule):.3g} per "
            f"iteration or more, not {config.alpha:.3g} ({rule.night_alpha:g} over "
            f"{config.iterations}): no patch could be kept; "
            f"{_what_would_help(train, rule, config.iterations)}"
        )
    improver = LLMClient(request.improver)
    return ImproveCycle(
        home, repo, runner, improver, config, on_event=on_event, folder=folder, hooks=hooks
    )
