"""plan: decide what to build; PLAN.md for people and a valid plan.json for the checks."""

from __future__ import annotations

from orchestrator.sandbox.files import what_is
from phases.base import CheckResult, PhaseContext, Plan, PlanPhase


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    if what_is(ctx.workspace.root / "PLAN.md") is not None:
        return CheckResult(passed=False, summary="PLAN.md (the plan for people) does not exist")
    return CheckResult(
        passed=True,
        summary=f"plan.json is valid: {len(plan.files)} file(s), stack {', '.join(plan.stack)}",
    )


PHASE = PlanPhase("plan", check)
