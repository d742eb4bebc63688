"""The tests of a build's checks: the plan's test command, and for a change to an existing
project its own suite, judged test by test against the project as it was.

:func:`check_tests` is what the build and validate checks ask. For a new project it runs
the plan's test command, which must pass having run at least one test. For a change to
an existing project (``cadillac enhance``, ``iterate``):

1. the project's test files must still hold every test they held, with no skip marker
   added (:mod:`phases.suite.inventory`);
2. cadillac runs the project's own test command with reports (:mod:`phases.suite.run`)
   and holds what ran to the first run, made before any change
   (:func:`phases.suite.results.judge`): every test that passed then must run and pass,
   no fewer may run, a new test must pass, 0 tests never pass;
3. a change to what decides which tests run (a ``conftest.py``, pytest's, tox's or
   setup.cfg's configuration, a Makefile, ``package.json``'s scripts, a ``load_tests``,
   a ``sitecustomize.py``) is recorded as a ``suite_collection_changed`` event and named
   in what the check says, passed or not: a reviewer should look at it;
4. the plan's own test command runs too, unless it is the project's command or that
   command with some of its test files (``python -m pytest -q tests/test_x.py``): the
   project's run has already run those tests, and its results say how they went.

This package is the judge of a change to a project, so the improve cycle never patches it
(``orchestrator/improve/proposals.py``).
"""

from __future__ import annotations

import re
import shlex
import tempfile
from pathlib import Path

from orchestrator.sandbox.files import UnsafeFile, read_regular, what_is
from phases.base import CheckResult, PhaseContext, Plan
from phases.stacks import run_tests
from phases.suite.inventory import TEST_FILE, inventory
from phases.suite.results import SuiteResults, failure_text, judge
from phases.suite.run import run_suite

MIN_TIMEOUT_S = 600.0
COLLECTION_FILES = re.compile(
    r"(^|/)(conftest\.py|pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml|noxfile\.py"
    r"|(GNU)?[Mm]akefile|package\.json|(jest|vitest|vite)\.config\.[cm]?[jt]s"
    r"|\.mocharc(\.\w+)?|runtests\.py|sitecustomize\.py|usercustomize\.py|[^/]*\.pth)$"
)
"""Files that decide which tests a runner collects and how it reports them."""
COLLECTION_CODE = re.compile(
    rb"\bdef load_tests\b|\bcollect_ignore|\bpytest_(ignore_)?collect|\b__test__\s*="
    rb"|\bpytest_collection_modifyitems\b|\bpytest_configure\b"
)
"""What, in a test module, changes which tests run."""
QUIET = {"-q", "-qq", "-v", "-vv", "-x", "--quiet", "--verbose", "--exitfirst"}
REPORT_FOLDER = "suite-run"


def check_tests(ctx: PhaseContext, plan: Plan) -> CheckResult:
    """The tests of the module docstring, passed or not; what they said in one line."""
    base = ctx.baseline
    if base is None:
        failed = run_tests(ctx, plan.test_command)
        return failed or CheckResult(passed=True, summary=f"`{plan.test_command}` passes")
    changed = collection_changes(ctx)
    note = _note(changed)
    if changed:
        ctx.note("suite_collection_changed", files=changed)
    lost = base.suite.weakened_by(inventory(ctx.workspace.root))
    if lost:
        return CheckResult(
            passed=False,
            summary="the project's own tests were weakened: " + "; ".join(lost[:3]) + note,
            details="Every test the project had must still exist, under its name, and run: "
            "restore them (fix the code, not the tests).\n" + "\n".join(lost),
        )
    results, said = None, []
    if base.test_command:
        results = project_run(ctx, base.test_command)
        problems = judge(base.results, results)
        if problems:
            return CheckResult(
                passed=False,
                summary=f"the project's own tests `{base.test_command}`: {problems[0]}{note}",
                details=failure_text(results, problems, results.with_outcome("failed")),
            )
        ctx.note("suite_run", command=base.test_command, report=results.report, ran=results.ran())
        said.append(f"the project's own tests pass as before ({_counts(base.results, results)})")
    tests = covered(plan.test_command, base.test_command, results)
    if tests is None or results is None:
        failed = run_tests(ctx, plan.test_command)
        if failed is not None:
            failed.summary += note
            return failed
        said.append(f"`{plan.test_command}` passes")
    else:
        before = base.results.tests if base.results else {}
        ran = [t for t in tests if results.tests[t] != "skipped"]
        bad = [t for t in tests if results.tests[t] == "failed" and before.get(t) != "failed"]
        if not ran or bad:
            what = f"{len(bad)} of its tests fail" if bad else "it ran 0 tests"
            return CheckResult(
                passed=False,
                summary=f"the test command `{plan.test_command}`: {what}{note}",
                details=failure_text(results, [what], bad),
            )
        said.append(f"`{plan.test_command}`'s {len(ran)} test(s) ran in that run and pass")
    return CheckResult(passed=True, summary="; ".join(said) + note)


def _counts(before: SuiteResults | None, after: SuiteResults) -> str:
    if not after.readable:
        return f"exit status {after.exit_code}"
    text = after.counts()
    still = [t for t in after.with_outcome("failed") if before and before.tests.get(t) == "failed"]
    return text + (f"; {len(still)} failed before the change too" if still else "")


def project_run(ctx: PhaseContext, command: str, timeout_s: float | None = None) -> SuiteResults:
    """The project's command, run with reports, within ``timeout_s`` (by default a limit
    its first run sets: three times as long, at least :data:`MIN_TIMEOUT_S`)."""
    base = ctx.baseline
    first = base.results if base is not None else None
    timeout = max(MIN_TIMEOUT_S, 3 * first.seconds) if first is not None else MIN_TIMEOUT_S
    timeout = timeout_s or timeout
    if ctx.records is not None:
        return run_suite(ctx, command, ctx.records / REPORT_FOLDER, timeout)
    with tempfile.TemporaryDirectory(prefix="cadillac-suite-") as scratch:
        return run_suite(ctx, command, Path(scratch) / REPORT_FOLDER, timeout)


def collection_changes(ctx: PhaseContext) -> list[str]:
    """The files the change touched that decide which tests run (see the module docstring)."""
    if ctx.changed is None:
        return []
    root, found = ctx.workspace.root, []
    for path in sorted(set(ctx.changed())):
        if COLLECTION_FILES.search(path):
            found.append(path)
        elif path.endswith(".py") and (TEST_FILE.search(path) or "/test" in f"/{path}"):
            if what_is(root / path) is not None:
                continue
            try:
                text = read_regular(root / path, 4 * 1024 * 1024)
            except (UnsafeFile, OSError):
                continue
            if COLLECTION_CODE.search(text):
                found.append(path)
    return found


def _note(changed: list[str]) -> str:
    if not changed:
        return ""
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return f" (the change touches what decides which tests run: {shown}; recorded)"


def covered(plan_command: str, command: str | None, results: SuiteResults | None) -> list | None:
    """The tests of the project's run that ``plan_command`` would run, when it is the
    project's ``command`` itself (``-v``, ``-q`` or ``-x`` added or not), or that command
    given some of the test files or folders its JUnit report names (pytest); None when the
    plan's command must run on its own."""
    if not command or results is None or not results.readable:
        return None
    try:
        plan, base = shlex.split(plan_command), shlex.split(command)
    except ValueError:
        return None
    if plan[: len(base)] != base:
        return None
    extra = plan[len(base) :]
    if all(w in QUIET for w in extra):  # the same run, said louder or quieter
        return sorted(results.tests)
    if results.report != "junit":
        return None
    paths = [w.removeprefix("./").rstrip("/") for w in extra if not w.startswith("-")]
    if not paths or any(w.startswith("-") and w not in QUIET for w in extra):
        return None
    if any("::" in p or not p for p in paths):
        return None
    chosen = [
        test
        for test, file in results.files.items()
        if any(file == p or file.startswith(p + "/") for p in paths)
    ]
    return sorted(chosen) or None
