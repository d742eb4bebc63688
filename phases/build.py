"""build: the code compiles and the plan's test command passes.

When the build changes an existing project, the project's own suite must also pass as it
was: every test it had still there, none newly skipped, its own test command green
(:func:`phases.base.suite_kept`)."""

from __future__ import annotations

from phases.base import (
    CheckResult,
    PhaseContext,
    Plan,
    PlanPhase,
    python_compiles,
    run_step,
    suite_kept,
)


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    failed = (
        python_compiles(ctx, ctx.workspace.files())
        or suite_kept(ctx)
        or run_step(ctx, "the test command", plan.test_command, timeout_s=600)
    )
    if failed is not None:
        return failed
    return CheckResult(passed=True, summary=f"compiles, and `{plan.test_command}` passes")


PHASE = PlanPhase("build", check)
