"""What the model and sandbox options of a command line make: the build's configuration.

``build``, ``matrix run``, ``improve`` and ``nightly`` take the same options for the
model (``--model``, ``--api-base``, fallbacks) and the sandbox (``--unsafe-no-sandbox``);
:func:`build_config` turns them into one :class:`~orchestrator.build.agent.BuildConfig`,
and says on the terminal, first, when the sandbox is off.
"""

from __future__ import annotations

import argparse
import os

from orchestrator.cli import output
from orchestrator.errors import CadillacError

UNSAFE = (
    "--unsafe-no-sandbox: the model's commands run on this machine without a sandbox; "
    "they can read and change your files"
)


def build_config(args: argparse.Namespace, per_build_cost: bool = True):
    """The BuildConfig a command line asks for (model, api base, fallbacks, cost cap, sandbox).

    ``per_build_cost=False``: the command's ``--max-cost`` caps a whole run, not each build."""
    from orchestrator.build.agent import BuildConfig
    from orchestrator.llm.client import MODEL_HINT, LLMConfig
    from orchestrator.sandbox.executor import ExecConfig

    model = args.model or os.environ.get("CADILLAC_MODEL", "")
    if not model:
        raise CadillacError(f"no model given: {MODEL_HINT}")
    llm = LLMConfig(
        model=model,
        api_base=args.api_base or os.environ.get("CADILLAC_API_BASE") or None,
        fallback_models=args.fallback_model or [],
        fallback_api_bases=args.fallback_api_base or [],
    )
    if len(llm.fallback_api_bases) > len(llm.fallback_models):
        raise CadillacError("--fallback-api-base given without a --fallback-model to belong to")
    executor = ExecConfig(sandbox="none" if getattr(args, "unsafe_no_sandbox", False) else "bwrap")
    if executor.sandbox == "none":
        output.err().print(f"[bold red]warning:[/] {UNSAFE}")
    cap = getattr(args, "max_cost", None) if per_build_cost else None
    return BuildConfig(llm=llm, executor=executor, max_cost_usd=cap)
