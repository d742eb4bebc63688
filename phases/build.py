"""build: the code passes its stacks' checks (:mod:`phases.stacks`) and the plan's test
command passes, having run at least one test.

When the build changes an existing project, the project's own suite must also pass as it
did: every test it had still there, none newly skipped, and every test that passed before
the change run and passing, judged from the runners' own reports
(:func:`phases.suite.gate.check_tests`)."""

from __future__ import annotations

from phases.base import CheckResult, PhaseContext, Plan, PlanPhase
from phases.stacks import check_code, describe
from phases.suite.gate import check_tests


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    failed = check_code(ctx, plan)
    if failed is not None:
        return failed
    tests = check_tests(ctx, plan)
    if not tests.passed:
        return tests
    return CheckResult(
        passed=True, summary=f"the code checks of {describe(ctx, plan)} pass; {tests.summary}"
    )


PHASE = PlanPhase("build", check)
