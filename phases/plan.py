"""plan: decide what to build; PLAN.md for people, a valid plan.json for the checks, and
the user stories (stories.json) the artifact must satisfy, fixed when this phase passes
(:mod:`phases.stories.gate`). The prompt's story format is made from the story models
(:func:`phases.stories.schema.story_format`), so it says what the check reads."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.sandbox.files import what_is
from phases.base import CheckResult, PhaseContext, Plan, PlanPhase, read_prompt
from phases.stories.gate import fix
from phases.stories.schema import story_format

FORMAT_MARK = "{story_format}"


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    if what_is(ctx.workspace.root / "PLAN.md") is not None:
        return CheckResult(passed=False, summary="PLAN.md (the plan for people) does not exist")
    stories = fix(ctx)
    if not stories.passed:
        return stories
    return CheckResult(
        passed=True,
        summary=f"plan.json is valid: {len(plan.files)} file(s), stack {', '.join(plan.stack)}; "
        f"{stories.summary}",
    )


@dataclass
class StoriesPlan(PlanPhase):
    def prompt(self) -> str:
        return read_prompt(self.name).replace(FORMAT_MARK, story_format())


PHASE = StoriesPlan("plan", check)
