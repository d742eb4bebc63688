"""What a run of a project's own suite did, test by test, read from the runner's own report.

A suite's exit status and its file contents are not its verdict: a ``conftest.py`` can
stop tests from being collected, a ``load_tests`` can return an empty suite, a Makefile
recipe can print "tests ok", and each still exits 0 with every test in its file. What
counts is which tests ran and how each ended, so cadillac reads that from the reports the
runners themselves write, each in the folder of the run (:mod:`phases.suite.run`):

* **JUnit XML** (``junit.xml``): pytest's ``--junitxml``, given through
  ``PYTEST_ADDOPTS`` so it reaches pytest however the command starts it (``make test``,
  ``tox``, a script);
* **unittest's own results** (``unittest.jsonl``): every ``unittest`` result (Django's
  runner, ``unittest discover``, a project's own script) reports each test's end through
  the hook :mod:`phases.suite.hook` puts on ``unittest.TestResult`` in every Python
  process of the run;
* **go test's JSON** (``go test -json``, which cadillac asks for), **cargo test's lines**
  (``test a::b ... ok``) and **TAP** (``ok 3 - name``: ``node --test`` when its output is
  not a terminal, tape, many others), read from the run's whole output.

Every report is read on the host, without following a link, at most :data:`MAX_REPORT`
bytes; XML through the standard library's parser, which resolves no external entity and
refuses expansion bombs. What cannot be read gives no results, never a pass: the
judgement (:func:`judge`) fails a run whose results cannot be read when the project's
first run's could.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.sandbox.files import UnsafeFile, read_regular, what_is

Outcome = Literal["passed", "failed", "skipped"]
MAX_REPORT = 64 * 1024 * 1024
MESSAGE_CHARS = 600
"""Of each failing test's message, what is kept (for the model and the record)."""
MESSAGES = 50
"""How many failing tests keep a message."""
JUNIT, UNITTEST, OUTPUT = "junit.xml", "unittest.jsonl", "output.txt"


class SuiteResults(BaseModel):
    """One run of the project's own test command, as its reports say it went."""

    v: int = 1
    command: str = ""
    report: str = ""
    """Which report said it: ``junit``, ``unittest``, ``go``, ``cargo``, ``tap``; "" none."""
    exit_code: int = 0
    timed_out: bool = False
    seconds: float = 0.0
    tests: dict[str, Outcome] = Field(default_factory=dict)
    """Test id (``tests.test_area::test_square``, ``pkg::TestX``) -> how it ended."""
    files: dict[str, str] = Field(default_factory=dict)
    """Test id -> its file, where the report says (pytest's JUnit does)."""
    messages: dict[str, str] = Field(default_factory=dict)
    """A failing test's id -> the start of what its failure said."""
    tail: str = ""
    """The last lines of the run's output."""

    @property
    def readable(self) -> bool:
        return bool(self.report)

    def ran(self) -> int:
        return sum(1 for outcome in self.tests.values() if outcome != "skipped")

    def with_outcome(self, outcome: Outcome) -> list[str]:
        return sorted(t for t, o in self.tests.items() if o == outcome)

    def counts(self) -> str:
        """``4 ran: 3 passed, 1 failed (2 skipped)``."""
        passed, failed = len(self.with_outcome("passed")), len(self.with_outcome("failed"))
        skipped = len(self.with_outcome("skipped"))
        return f"{self.ran()} ran: {passed} passed, {failed} failed" + (
            f" ({skipped} skipped)" if skipped else ""
        )


# ---------------------------------------------------------------------------- reading
def read_results(folder: Path, output: str = "") -> SuiteResults:
    """The results the reports in ``folder`` give (``report`` "" when none could be read).
    ``output`` is the run's output as the executor kept it, used when the whole output's
    file is missing."""
    found = SuiteResults()
    junit = _read(folder / JUNIT)
    if junit and _junit(junit, found):
        found.report = "junit"
        return found
    log = _read(folder / UNITTEST)
    if log:
        _unittest(log.decode("utf-8", "replace"), found)
        if found.tests:
            found.report = "unittest"
            return found
    text = (_read(folder / OUTPUT) or output.encode()).decode("utf-8", "replace")
    for name, reader in (("go", _go), ("cargo", _cargo), ("tap", _tap)):
        reader(text, found)
        if found.tests:
            found.report = name
            return found
    return found


def _read(path: Path) -> bytes:
    if what_is(path) is not None:
        return b""  # nothing there, or a link or folder the run left: never followed
    try:
        return read_regular(path, MAX_REPORT)
    except (UnsafeFile, OSError):
        return b""


def _message(found: SuiteResults, test: str, text: str) -> None:
    if text and len(found.messages) < MESSAGES:
        found.messages[test] = text.strip()[:MESSAGE_CHARS]


def _junit(data: bytes, found: SuiteResults) -> bool:
    """Read a JUnit report into ``found``; False when it is not one (a run that collected
    nothing still writes a ``testsuite``, so an empty one is a report of 0 tests)."""
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, ValueError, RecursionError):
        return False
    if root.tag not in ("testsuites", "testsuite"):
        return False
    for case in root.iter("testcase"):
        name = case.get("name") or ""
        classname = case.get("classname") or ""
        test = f"{classname}::{name}" if classname else name
        outcome: Outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                _message(found, test, child.get("message") or (child.text or ""))
            elif child.tag == "skipped" and outcome != "failed":
                outcome = "skipped"
        if found.tests.get(test) != "failed":  # a test's error in teardown stays a failure
            found.tests[test] = outcome
        if case.get("file"):
            found.files[test] = case.get("file", "")
    return True


def _unittest(text: str, found: SuiteResults) -> None:
    started: set[str] = set()
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("id"), str):
            continue
        test, outcome = event["id"], event.get("outcome")
        if outcome == "started":
            started.add(test)
        elif outcome in ("passed", "failed", "skipped"):
            if found.tests.get(test) != "failed":
                found.tests[test] = outcome
            if outcome == "failed":
                _message(found, test, str(event.get("message", "")))
    for test in started - set(found.tests):  # began and never ended: the process died
        found.tests[test] = "failed"
        _message(found, test, "the test started and never ended (its process died)")


GO_ACTIONS = {"pass": "passed", "fail": "failed", "skip": "skipped"}


def _go(text: str, found: SuiteResults) -> None:
    outputs: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("Package"), str):
            continue
        test = event.get("Test")
        key = f"{event['Package']}::{test}" if isinstance(test, str) else ""
        action = event.get("Action")
        if action == "output" and key:
            outputs.setdefault(key, []).append(str(event.get("Output", "")))
        elif action in GO_ACTIONS and key:
            found.tests[key] = GO_ACTIONS[action]
            if action == "fail":
                _message(found, key, "".join(outputs.get(key, [])[-20:]))
        elif action == "fail" and not key:
            package = f"{event['Package']}::(package)"
            if not any(t.startswith(f"{event['Package']}::") for t in found.tests):
                found.tests[package] = "failed"  # it did not build, or died outside a test
                _message(found, package, "the package failed outside its tests (a build error?)")


MAX_LINE = 4096
"""A line of output longer than this names no test (and is never matched against a pattern)."""
CARGO_OUTCOMES = {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) <= MAX_LINE]


def _cargo(text: str, found: SuiteResults) -> None:
    """``Running unittests src/lib.rs (target/...)`` names a binary, ``Doc-tests NAME``
    the doc tests, and ``test a::b ... ok`` one of its tests."""
    binary = ""
    for line in _lines(text):
        head = line.strip()
        if head.startswith("Running "):
            binary = head.removeprefix("Running ").split(" (", 1)[0].strip()
        elif head.startswith("Doc-tests "):
            binary = head.removeprefix("Doc-tests ").strip()
        elif line.startswith("test ") and " ... " in line:
            name, _, outcome = line[5:].rpartition(" ... ")
            outcome = outcome.split()[0] if outcome.split() else ""
            if name and outcome in CARGO_OUTCOMES:
                found.tests[f"{binary}::{name}"] = CARGO_OUTCOMES[outcome]  # type: ignore[assignment]


TAP_POINT = re.compile(r"(not )?ok\b(?: \d+)?(?: -)?")
TAP_SUMMARY = ("tests", "pass", "fail", "ok", "skip", "todo", "cancelled", "suites", "duration_ms")


def _tap(text: str, found: SuiteResults) -> None:
    """TAP test points; a nested subtest is named with its parents (``suite > case``), a
    point under a tape-style ``# section`` comment with its section, and a repeated name
    with its occurrence (``#2``). Lines are read with string operations and anchored
    patterns only, so no output, however long its lines, costs more than its length."""
    lines = _lines(text)
    if not any(line.startswith("TAP version") or _plan_line(line) for line in lines):
        return
    stack: list[tuple[int, str]] = []
    section, seen = "", dict[str, int]()
    for line in lines:
        body = line.lstrip()
        indent = len(line) - len(body)
        if body.startswith("# Subtest: "):
            stack = [s for s in stack if s[0] < indent] + [(indent, body[11:].strip())]
            continue
        if line.startswith("# "):
            words = line[2:].split()
            if words and words[0] not in TAP_SUMMARY:
                section = line[2:].strip()
            continue
        point = TAP_POINT.match(body)
        if not point or body.startswith("okay"):
            continue
        rest = body[point.end() :].strip()
        name, mark, directive = rest.partition("#")
        skipped = bool(mark) and directive.strip()[:4].upper() in ("SKIP", "TODO")
        name = (name if skipped else rest).strip() or "(unnamed)"
        parents = [n for i, n in stack if i < indent]
        stack = [s for s in stack if s[0] < indent]
        key = " > ".join([*([section] if section and not parents else []), *parents, name])
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key} #{seen[key]}"
        if skipped:  # SKIP, or TODO: a known failure that does not count
            found.tests[key] = "skipped"
        else:
            found.tests[key] = "failed" if point.group(1) else "passed"


def _plan_line(line: str) -> bool:
    """A TAP plan: ``1..N``."""
    first, dots, last = line.strip().partition("..")
    return first == "1" and bool(dots) and last.isdigit()


# ---------------------------------------------------------------------------- judging
def judge(before: SuiteResults | None, after: SuiteResults) -> list[str]:
    """What makes ``after`` (a run of the changed project) not a pass, held to ``before``
    (the same command's run on the project as it was); [] when it passes.

    With per-test results before: the results after must be readable too; every test that
    passed before must run and pass; a test that is new must pass; no fewer tests may run
    than before; a test that failed before may still fail (it is not the change's). A
    non-zero exit with no failing test to show for it fails unless the first run exited
    alike. Without per-test results before, the exit status decides, and a run whose
    runner says it ran no test fails. A run of 0 tests never passes."""
    problems = []
    if after.timed_out:
        return [f"the suite did not finish within its time limit ({after.counts()} by then)"]
    if before is None or not before.readable:
        if after.readable and after.ran() == 0:
            return ["the suite ran 0 tests"]
        if after.exit_code != 0:
            return [f"the suite exited with status {after.exit_code}"]
        return []
    if not after.readable:
        return [
            f"the suite's run gave no per-test results (its first run's {before.report} "
            "report said which tests ran; this run's said nothing): the tests did not run "
            "as they did before"
        ]
    if after.ran() == 0:
        return ["the suite ran 0 tests"]
    passed_before = set(before.with_outcome("passed"))
    missing = sorted(t for t in passed_before if after.tests.get(t) in (None, "skipped"))
    broken = sorted(t for t in passed_before if after.tests.get(t) == "failed")
    new_failing = sorted(t for t in after.with_outcome("failed") if t not in before.tests)
    if broken:
        problems.append(f"{len(broken)} test(s) that passed before fail now: {_names(broken)}")
    if missing:
        problems.append(
            f"{len(missing)} test(s) that passed before did not run (or were skipped): "
            f"{_names(missing)}"
        )
    if new_failing:
        problems.append(f"{len(new_failing)} new test(s) fail: {_names(new_failing)}")
    if after.ran() < before.ran():
        problems.append(f"fewer tests ran than before: {after.ran()} against {before.ran()}")
    unexplained = after.exit_code != 0 and not after.with_outcome("failed")
    if not problems and unexplained and after.exit_code != before.exit_code:
        problems.append(
            f"the suite exited with status {after.exit_code} although no test failed "
            f"(it exited with {before.exit_code} before the change)"
        )
    return problems


def _names(tests: list[str], shown: int = 6) -> str:
    more = len(tests) - shown
    return ", ".join(tests[:shown]) + (f" and {more} more" if more > 0 else "")


def failure_text(results: SuiteResults, problems: list[str], tests: list[str]) -> str:
    """What the model is shown of a judgement that failed: the problems, what the failing
    tests said, and the end of the output."""
    parts = list(problems)
    shown = [t for t in tests if t in results.messages][:8]
    for test in shown:
        parts.append(f"--- {test}\n{results.messages[test]}")
    if results.tail:
        parts.append("--- the end of the suite's output\n" + results.tail)
    return "\n".join(parts)
