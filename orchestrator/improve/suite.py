"""The project's own tests, on the baseline and with the patch: what fails only with the patch.

A trial's sandbox has no network, no package index and none of the user's variables, so
some of the project's tests may fail there whatever the code (one that installs a
package, one that needs a server). Blaming the patch for those would reject every patch.
So the cycle runs the tests on the baseline's code first, in the same sandbox with the
same command (once per commit it starts an iteration from), and then with the patch, and
compares what failed: a test that fails on both is the environment's and does not reject
the patch; a test that fails only with the patch does, and the reason names it.

Failures are read by name from pytest's short summary (``FAILED <id>`` and ``ERROR <id>``
lines, which ``-rfE`` asks for). A run that fails but names no test (another test runner,
a crash, a time-out) is compared by that alone: it rejects the patch when the baseline's
run passed or named the tests it failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SUMMARY = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.MULTILINE)
SHOWN = 5
"""Test names a reason lists before it says how many more there are."""


def failed_tests(output: str) -> frozenset[str]:
    """The tests pytest's short summary names as failed or in error."""
    return frozenset(match.group(1).strip() for match in SUMMARY.finditer(output))


@dataclass(frozen=True)
class SuiteRun:
    """One run of the project's tests: whether it passed, what failed, and its log."""

    ok: bool
    failed: frozenset[str] = field(default_factory=frozenset)
    log: str = ""


@dataclass(frozen=True)
class SuiteVerdict:
    """The patch's tests against the baseline's: ``ok`` False rejects the patch; ``note``
    says why, or what failed on both (the environment's)."""

    ok: bool
    note: str


def names(tests: frozenset[str] | set[str]) -> str:
    shown = sorted(tests)[:SHOWN]
    more = len(tests) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def compare(baseline: SuiteRun, candidate: SuiteRun) -> SuiteVerdict:
    """Whether the patch broke a test that passes on the baseline (see the module)."""
    if candidate.ok:
        return SuiteVerdict(True, "the project's own tests pass with it")
    blamed = "the project's own tests fail with it"
    if baseline.ok:
        which = f": {names(candidate.failed)}" if candidate.failed else ""
        return SuiteVerdict(False, f"{blamed}{which} (they pass on the baseline)")
    new = candidate.failed - baseline.failed
    if new:
        return SuiteVerdict(False, f"{blamed}: {names(new)}, which pass on the baseline")
    if baseline.failed and not candidate.failed:  # a crash or a time-out, not those tests
        return SuiteVerdict(
            False, f"{blamed}, naming no test (on the baseline {names(baseline.failed)} fail)"
        )
    which = f": {names(baseline.failed)}" if baseline.failed else ""
    return SuiteVerdict(
        True,
        "the tests that fail with it fail on the baseline too, in the same sandbox "
        f"(the environment's, not the patch's){which}",
    )
