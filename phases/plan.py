"""plan: decide what to build; PLAN.md for people and a valid plan.json for the checks."""

from __future__ import annotations

from phases.base import CheckResult, PhaseContext, PlanError, SimplePhase


def check(ctx: PhaseContext) -> CheckResult:
    try:
        plan = ctx.plan()
    except PlanError as exc:
        return CheckResult(passed=False, summary=str(exc))
    if not (ctx.workspace.root / "PLAN.md").is_file():
        return CheckResult(passed=False, summary="PLAN.md (the plan for people) does not exist")
    return CheckResult(
        passed=True,
        summary=f"plan.json is valid: {len(plan.files)} file(s), stack {', '.join(plan.stack)}",
    )


PHASE = SimplePhase("plan", check)
