"""validate: the tests and the smoke run pass again, after the model's last review (and, for
a change to an existing project, its own suite as it did: :func:`phases.suite.gate.check_tests`),
and the user stories hold: the plan's own, as it fixed them, and any added since
(:mod:`phases.stories.gate`).

A benchmark task's hidden acceptance checks are not run here: the matrix scores them
after the build (:mod:`orchestrator.bench.scoring`), out of the model's sight.
"""

from __future__ import annotations

from phases.base import CheckResult, PhaseContext, Plan, PlanPhase, run_step
from phases.integrate import RUN_TIMEOUT_S
from phases.stories.gate import check_stories
from phases.suite.gate import check_tests


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    tests = check_tests(ctx, plan)
    if not tests.passed:
        return tests
    failed = run_step(
        ctx, "the run command", plan.run_command, timeout_s=RUN_TIMEOUT_S
    ) or check_stories(ctx, plan, "validate")
    if failed is not None:
        return failed
    return CheckResult(
        passed=True, summary=f"{tests.summary}; the smoke run and the user stories pass"
    )


PHASE = PlanPhase("validate", check)
