"""build: the code compiles and the plan's test command passes."""

from __future__ import annotations

from phases.base import CheckResult, PhaseContext, Plan, PlanPhase, python_compiles, run_step


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    failed = python_compiles(ctx, ctx.workspace.files()) or run_step(
        ctx, "the test command", plan.test_command, timeout_s=600
    )
    if failed is not None:
        return failed
    return CheckResult(passed=True, summary=f"compiles, and `{plan.test_command}` passes")


PHASE = PlanPhase("build", check)
