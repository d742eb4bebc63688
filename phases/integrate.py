"""integrate: the program runs end to end: the plan's smoke run exits 0 within its timeout."""

from __future__ import annotations

from phases.base import CheckResult, PhaseContext, Plan, PlanPhase, run_step

RUN_TIMEOUT_S = 120.0


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    failed = run_step(ctx, "the run command", plan.run_command, timeout_s=RUN_TIMEOUT_S)
    if failed is not None:
        return failed
    return CheckResult(passed=True, summary=f"`{plan.run_command}` exits 0")


PHASE = PlanPhase("integrate", check)
