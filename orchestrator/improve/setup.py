"""An improve cycle from what a command asks: the models, the matrix, the sandbox, the limits.

``cadillac improve`` and ``cadillac nightly`` both start cycles; :class:`CycleRequest` is
what either asks for, and :func:`make_cycle` checks everything that can be checked before
a run folder is made (the models are known, the sandbox works, the matrix loads, the
repository is a git checkout) and builds the cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from orchestrator import SOURCE_ROOT
from orchestrator.bench.tasks import DEFAULT_MATRIX
from orchestrator.home import Home
from orchestrator.improve.cycle import ImproveCycle
from orchestrator.improve.git import repo_root
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
    repeats: int = Field(default=3, ge=1)
    jobs: int = Field(default=1, ge=1)
    iterations: int = Field(default=5, ge=1)
    threshold: float = Field(default=0.05, ge=0)
    apply: bool = False
    max_seconds: float | None = Field(default=None, gt=0)
    unsafe_no_sandbox: bool = False


def make_cycle(
    home: Home,
    request: CycleRequest,
    on_event: Callable[[str], None] | None = None,
    folder: Path | None = None,
) -> ImproveCycle:
    for endpoint in [*request.builder.endpoints(), *request.improver.endpoints()]:
        check_model(endpoint.model)
    executor = ExecConfig(sandbox="none" if request.unsafe_no_sandbox else "bwrap")
    check_sandbox(executor)
    repo = repo_root(request.repo)
    runner = SandboxedMatrix(
        home,
        request.matrix.resolve(),
        request.builder,
        request.repeats,
        request.jobs,
        executor=executor,
    )  # loads the matrix: a bad one fails now, not after the baseline
    config = ImproveConfig(
        iterations=request.iterations,
        threshold=request.threshold,
        apply=request.apply,
        max_seconds=request.max_seconds,
        executor=executor,
    )
    improver = LLMClient(request.improver)
    return ImproveCycle(home, repo, runner, improver, config, on_event=on_event, folder=folder)
