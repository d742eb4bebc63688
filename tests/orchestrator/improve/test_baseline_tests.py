"""The project's own tests in an improve trial: the baseline's run first, then the patch's.

A test that fails on both (here: one needs a package the sandbox cannot install, one a
server it cannot reach) is the environment's and rejects no patch; a test that fails
only with the patch rejects it, by name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.improve.records import ImproveConfig
from orchestrator.improve.suite import SuiteRun, compare, failed_tests
from tests.orchestrator.conftest import git
from tests.orchestrator.improve.test_improve import ADD_SENTENCE, Lift, answer, cycle

pytestmark = pytest.mark.e2e

NEEDS_INDEX = "import a_package_only_an_index_has  # noqa: F401\n\n\ndef test_it():\n    pass\n"
NEEDS_SERVER = """import urllib.request


def test_the_server_answers():
    urllib.request.urlopen("http://127.0.0.1:9/", timeout=5)
"""
BREAKER = {"file": "phases/system.md", "search": "You are the builder", "replace": "You build"}
SMOKE_TEST = "tests/test_smoke.py::test_the_builder_is_told_who_it_is"


def test_a_test_failing_on_both_sides_is_the_environments_and_one_the_patch_breaks_rejects(
    home, repo
):
    (repo / "tests" / "test_needs_index.py").write_text(NEEDS_INDEX)
    (repo / "tests" / "test_needs_server.py").write_text(NEEDS_SERVER)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tests the sandbox cannot pass")
    improver = [
        answer([BREAKER], "a shorter system prompt"),
        answer([ADD_SENTENCE], "say how digits count"),
    ]
    default = ImproveConfig().test_command  # as `cadillac improve` runs them
    summary = cycle(
        home, repo, improver, runner=Lift(3), iterations=2, max_attempts=5, test_command=default
    ).run()

    broken, kept = summary.iterations
    assert broken.status == "rejected", broken.reason
    assert SMOKE_TEST in broken.reason and "pass on the baseline" in broken.reason
    assert "test_needs_index" not in broken.reason and "test_needs_server" not in broken.reason
    assert kept.status == "accepted", kept.reason
    assert "fail on the baseline too" in kept.tests and "environment" in kept.tests
    assert "tests/test_needs_index.py" in kept.tests
    assert "test_needs_server.py::test_the_server_answers" in kept.tests

    runs = Path(home) / "runs" / f"improve-{summary.id}"
    for i in (1, 2):  # each iteration keeps both logs; the baseline's ran once for the commit
        base_log = (runs / f"iter-{i}" / "tests-baseline.log").read_text()
        assert "a_package_only_an_index_has" in base_log
        assert (runs / f"iter-{i}" / "tests.log").is_file()
    assert SMOKE_TEST in (runs / "iter-1" / "tests.log").read_text()
    assert SMOKE_TEST not in (runs / "iter-1" / "tests-baseline.log").read_text()
    decision = json.loads((runs / "iter-1" / "decision.json").read_text())
    assert SMOKE_TEST in decision["reason"] and not (runs / "iter-1" / "rounds").exists()


def test_the_comparison_reads_failures_by_name():
    summary = (
        "=== short test summary info ===\n"
        "FAILED tests/a.py::test_x[a b] - AssertionError: no\n"
        "ERROR tests/b.py\n"
    )
    assert failed_tests(summary) == {"tests/a.py::test_x[a b]", "tests/b.py"}
    env = SuiteRun(False, frozenset({"tests/b.py"}))
    assert compare(env, SuiteRun(False, frozenset({"tests/b.py"}))).ok
    broke = compare(env, SuiteRun(False, frozenset({"tests/b.py", "tests/c.py::t"})))
    assert not broke.ok and "tests/c.py::t" in broke.note and "tests/b.py" not in broke.note
    assert not compare(SuiteRun(True), SuiteRun(False)).ok
    assert not compare(env, SuiteRun(False)).ok  # a crash that names no test is not those
    assert compare(SuiteRun(False), SuiteRun(False)).ok
