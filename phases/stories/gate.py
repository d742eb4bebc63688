"""The stories in the phases: fixed when the plan passes, run at integrate and validate.

What this module decides, and why:

* **The plan's stories are kept where the model cannot write.** When the plan phase's
  check passes, :func:`fix` saves the validated ``stories.json`` as
  :data:`FIXED` in the run's folder (``PhaseContext.records``), on the host, outside every
  sandbox: the model can change ``stories.json`` in the workspace, never the fixed copy.
* **Later phases may add stories, never drop or change one.** :func:`in_force` is the
  fixed stories as the plan wrote them, plus those ``stories.json`` adds under new names;
  what it drops or changes (:func:`phases.stories.schema.weakened`) is not run that way:
  the plan's version runs, and :func:`watch` records the attempt as a ``stories_weakened``
  event (the build loop calls it after every later phase's check).
* **Stories run against what a user runs.** :func:`check_stories` first builds the
  artifacts of the plan's stacks (``phases.stacks.build_artifacts``, where it exists),
  then drives them (:func:`phases.stories.runner.run_stories`); each story's outcome is a
  ``stories`` event, and a failing one goes back to the model with what was sent and what
  came back.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from orchestrator.sandbox.files import read_regular, replace_file, what_is
from phases import stacks
from phases.base import CheckResult, PhaseContext, Plan
from phases.stories.runner import run_stories
from phases.stories.schema import Stories, weakened

STORIES = "stories.json"
FIXED = "stories.fixed.json"
"""The plan's stories, in the run's folder (``PhaseContext.records``)."""
MAX_BYTES = 4 * 1024**2
"""The most of ``stories.json`` cadillac reads: stories are data a person reads, not a
place for a file the model made huge."""


class StoriesError(Exception):
    pass


def load_stories(root: Path) -> Stories:
    """The validated ``stories.json`` of the workspace (StoriesError says what is wrong,
    naming the field)."""
    path = root / STORIES
    found = what_is(path)
    if found == "nothing":
        raise StoriesError(f"{STORIES} does not exist in the workspace root")
    if found is not None:
        raise StoriesError(f"{STORIES} is {found}; it must be a regular file")
    try:
        text = read_regular(path, MAX_BYTES + 1)
        if len(text) > MAX_BYTES:
            raise StoriesError(f"{STORIES} is over {MAX_BYTES // 1024**2} MB")
        return Stories.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'stories'}: {e['msg']}"
            for e in exc.errors()[:5]
        )
        raise StoriesError(f"{STORIES} is not valid: {problems}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoriesError(f"{STORIES} is not valid JSON: {exc}") from None
    except OSError as exc:
        raise StoriesError(f"{STORIES} cannot be read: {exc.strerror or exc}") from None


def fix(ctx: PhaseContext) -> CheckResult:
    """The plan phase's part: a valid ``stories.json``, saved as the fixed copy."""
    try:
        stories = load_stories(ctx.workspace.root)
    except StoriesError as exc:
        return CheckResult(passed=False, summary=str(exc))
    if ctx.records is not None:
        ctx.records.mkdir(parents=True, exist_ok=True)
        text = stories.model_dump_json(by_alias=True, indent=2)
        replace_file(ctx.records / FIXED, text.encode())
    kinds = sorted({s.kind for s in stories.stories})
    return CheckResult(
        passed=True, summary=f"{len(stories.stories)} user stories ({', '.join(kinds)})"
    )


def fixed(ctx: PhaseContext) -> Stories | None:
    """The stories the plan fixed; None when none were kept (no run folder)."""
    if ctx.records is None or what_is(ctx.records / FIXED) == "nothing":
        return None
    return Stories.model_validate_json(read_regular(ctx.records / FIXED))


def in_force(ctx: PhaseContext) -> tuple[Stories | None, list[str]]:
    """(the stories to run, what ``stories.json`` drops or changes of the plan's).

    Without a fixed copy, the workspace's own (StoriesError when they are not valid)."""
    plan = fixed(ctx)
    try:
        now = load_stories(ctx.workspace.root)
    except StoriesError as exc:
        if plan is None:
            raise
        return plan, [f"{exc}; the plan's stories run"]
    if plan is None:
        return now, []
    names = {s.name for s in plan.stories}
    added = [s for s in now.stories if s.name not in names]
    return Stories(stories=[*plan.stories, *added]), weakened(plan, now)


def watch(ctx: PhaseContext) -> list[str]:
    """Record, as a ``stories_weakened`` event, what the workspace's ``stories.json`` drops
    or changes of the plan's stories; those lines ([] when it keeps them all)."""
    if fixed(ctx) is None:
        return []
    _, problems = in_force(ctx)
    if problems:
        ctx.note("stories_weakened", problems=problems)
    return problems


def check_stories(ctx: PhaseContext, plan: Plan, phase: str) -> CheckResult | None:
    """Build the artifacts, then run the stories in force; a failing CheckResult or None."""
    build = getattr(stacks, "build_artifacts", None)
    failed = build(ctx, plan) if build is not None else None
    if failed is not None:
        return failed
    try:
        stories, problems = in_force(ctx)
    except StoriesError as exc:
        return CheckResult(passed=False, summary=str(exc))
    if stories is None:
        return None
    out = ctx.records / "stories" / phase if ctx.records is not None else None
    report = run_stories(ctx, stories, out_dir=out)
    ctx.note(
        "stories",
        passed=report.passed,
        results=[
            {"name": r.name, "kind": r.kind, "passed": r.passed}
            | ({} if r.passed else {"got": r.got[:300]})
            for r in report.results
        ],
    )
    failed = report.check()
    if failed is not None and problems:
        failed.details += (
            "\n\nstories.json drops or changes stories the plan fixed; the plan's versions "
            "ran:\n" + "\n".join(problems)
        )
    return failed
