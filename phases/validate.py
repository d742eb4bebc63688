"""validate: tests and the smoke run pass again, and so do the task's acceptance checks.

Acceptance checks (from a benchmark task) are files the model never saw: they
are copied into the workspace only now, then their command runs.
"""

from __future__ import annotations

import shutil

from phases.base import CheckResult, PhaseContext, PlanError, SimplePhase, run_step
from phases.integrate import RUN_TIMEOUT_S


def check(ctx: PhaseContext) -> CheckResult:
    try:
        plan = ctx.plan()
    except PlanError as exc:
        return CheckResult(passed=False, summary=str(exc))
    failed = run_step(ctx, "the test command", plan.test_command, timeout_s=600) or run_step(
        ctx, "the run command", plan.run_command, timeout_s=RUN_TIMEOUT_S
    )
    if failed is not None:
        return failed
    acceptance = ctx.acceptance
    if acceptance is None:
        return CheckResult(passed=True, summary="tests and the smoke run pass")
    shutil.copytree(acceptance.files, ctx.workspace.root, dirs_exist_ok=True)
    failed = run_step(ctx, "the acceptance checks", acceptance.command, acceptance.timeout_s)
    if failed is not None:
        return failed
    return CheckResult(passed=True, summary="tests, the smoke run and the acceptance checks pass")


PHASE = SimplePhase("validate", check)
