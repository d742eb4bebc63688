"""integrate: the program runs end to end: the plan's smoke run exits 0 within its timeout,
and the artifact, built as a user runs it, satisfies the plan's user stories, which
cadillac drives itself (:mod:`phases.stories.gate`)."""

from __future__ import annotations

from phases.base import CheckResult, PhaseContext, Plan, PlanPhase, run_step
from phases.stories.gate import check_stories

RUN_TIMEOUT_S = 120.0


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    failed = run_step(
        ctx, "the run command", plan.run_command, timeout_s=RUN_TIMEOUT_S
    ) or check_stories(ctx, plan, "integrate")
    if failed is not None:
        return failed
    return CheckResult(passed=True, summary=f"`{plan.run_command}` exits 0; the user stories hold")


PHASE = PlanPhase("integrate", check)
