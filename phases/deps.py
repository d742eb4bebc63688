"""deps: declare the dependencies and install them into the workspace's own virtual environment.

The check makes ``.venv`` in the workspace when it is missing (with the Python
running cadillac) and runs the plan's install command with that environment
first on PATH; the install step is the one command allowed to reach the
network inside the sandbox.
"""

from __future__ import annotations

import shlex
import sys

from phases.base import CheckResult, PhaseContext, PlanError, SimplePhase, run_step

DEPENDENCY_FILES = (
    "requirements.txt",
    "pyproject.toml",
    "setup.py",
    "package.json",
    "Cargo.toml",
    "go.mod",
)


def check(ctx: PhaseContext) -> CheckResult:
    try:
        plan = ctx.plan()
    except PlanError as exc:
        return CheckResult(passed=False, summary=str(exc))
    root = ctx.workspace.root
    present = [name for name in DEPENDENCY_FILES if (root / name).is_file()]
    if not present:
        return CheckResult(
            passed=False,
            summary=f"no dependency file: write one of {', '.join(DEPENDENCY_FILES)}",
        )
    if not (root / ".venv" / "bin" / "python").exists():
        made = run_step(
            ctx,
            "making the virtual environment",
            f"{shlex.quote(sys.executable)} -m venv .venv",
            timeout_s=300,
        )
        if made is not None:
            return made
    failed = run_step(ctx, "the install command", plan.install_command, timeout_s=900, network=True)
    if failed is not None:
        return failed
    return CheckResult(passed=True, summary=f"{present[0]} installed into .venv")


PHASE = SimplePhase("deps", check, install_network=True)
