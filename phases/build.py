"""build: the code passes its stacks' checks (:mod:`phases.stacks`) and the plan's test
command passes, having run at least one test.

When the build changes an existing project, the project's own suite must also pass as it
was: every test it had still there, none newly skipped, its own test command green
(:func:`phases.base.suite_kept`)."""

from __future__ import annotations

from phases.base import (
    CheckResult,
    PhaseContext,
    Plan,
    PlanPhase,
    suite_kept,
)
from phases.stacks import check_code, describe, run_tests


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    failed = check_code(ctx, plan) or suite_kept(ctx) or run_tests(ctx, plan.test_command)
    if failed is not None:
        return failed
    return CheckResult(
        passed=True,
        summary=f"the code checks of {describe(ctx, plan)} pass, and `{plan.test_command}` passes",
    )


PHASE = PlanPhase("build", check)
