"""scaffold: every planned file exists, and, in a Python project, every Python file compiles."""

from __future__ import annotations

from orchestrator.sandbox.files import what_is
from phases.base import CheckResult, PhaseContext, Plan, PlanPhase, python_compiles
from phases.stacks import stacks_of


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    missing = [p for p in plan.files if what_is(ctx.workspace.root / p) is not None]
    if missing:
        return CheckResult(passed=False, summary=f"planned files missing: {', '.join(missing)}")
    python = any(stack.name == "python" for stack in stacks_of(ctx, plan))
    failed = python_compiles(ctx, plan.files) if python else None
    if failed is not None:
        return failed
    return CheckResult(
        passed=True, summary=f"all {len(plan.files)} planned file(s) exist and compile"
    )


PHASE = PlanPhase("scaffold", check)
