"""The suite gate of a change to an existing project, on real runners in the sandbox.

Each test makes a small project, runs its own test command once as the first run (the
baseline), changes the project as a model might, and asks the gate
(:func:`phases.suite.gate.check_tests`) what it makes of the change. The four ways around
a suite that were each reported ``passed`` while tests failed are here, refused: a
``conftest.py`` that stops collection, a Makefile recipe that only prints, a
``load_tests`` that returns an empty suite, and a pytest suite configured only in
``tests/conftest.py`` that was run by ``unittest discover`` (0 tests, exit 0).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from orchestrator.sandbox.installs import requirement_steps
from orchestrator.sandbox.venvs import make_venv
from phases.base import Baseline, Plan
from phases.suite import discover_test_command, inventory
from phases.suite import gate as suite_gate
from phases.suite.gate import project_run
from phases.suite.results import judge
from tests.support import phase_context, write_files

CORE = """def add(a, b):
    return a + b


def sub(a, b):
    return a - b
"""
UNITTESTS = """import unittest

from core import add, sub


class CoreTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(sub(5, 3), 2)


class MoreTest(unittest.TestCase):
    def test_add_zero(self):
        self.assertEqual(add(0, 0), 0)
"""
PYTESTS = """from core import add, sub


def test_add(unit):
    assert add(unit, 2) == 3


def test_sub():
    assert sub(5, 3) == 2
"""
CONFTEST = """import pytest


@pytest.fixture
def unit():
    return 1
"""


def plan(command: str) -> Plan:
    return Plan(
        summary="s",
        stack=["python"],
        files=["core.py"],
        dependencies=[],
        test_command=command,
        run_command="true",
    )


class Gate:
    """A project with its first run made: ``check()`` asks the gate about its state now."""

    def __init__(self, ws: Path, records: Path, command: str | None = None):
        if not (ws / ".venv").exists():  # the build's environment, as deps makes it
            assert make_venv(ws / ".venv", Path(os.environ["CADILLAC_CACHE_DIR"])) is None
        self.ws, self.events, self.changed = ws, [], []
        self.command = command or discover_test_command(ws)
        assert self.command
        ctx = phase_context(ws, records=records, emit=self._emit)
        ctx.baseline = Baseline(self.command, inventory(ws), {})
        ctx.changed = lambda: list(self.changed)
        self.ctx = ctx
        ctx.baseline.results = project_run(ctx, self.command)
        self.first = ctx.baseline.results

    def _emit(self, kind, **fields):
        self.events.append((kind, fields))

    def edit(self, name: str, text: str) -> None:
        write_files(self.ws, {name: text})
        self.changed.append(name)

    def check(self, plan_command: str | None = None):
        return suite_gate.check_tests(self.ctx, plan(plan_command or self.command))


@pytest.fixture
def unittest_project(tmp_path) -> Path:
    ws = tmp_path / "ws"
    return write_files(
        ws, {"core.py": CORE, "tests/__init__.py": "", "tests/test_core.py": UNITTESTS}
    )


def test_unittest_results_are_read_test_by_test_and_an_honest_change_passes(
    unittest_project, tmp_path
):
    gate = Gate(unittest_project, tmp_path / "records")
    assert gate.command == "python -m unittest discover -s tests"
    assert gate.first.report == "unittest" and gate.first.ran() == 3
    assert gate.first.tests["test_core.CoreTest.test_add"] == "passed"
    gate.edit("core.py", CORE + "\n\ndef mul(a, b):\n    return a * b\n")
    gate.edit(
        "tests/test_mul.py",
        "import unittest\nfrom core import mul\n\n\nclass MulTest(unittest.TestCase):\n"
        "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n",
    )
    result = gate.check()
    assert result.passed, result.for_model()
    assert "4 ran: 4 passed" in result.summary
    assert not any(kind == "suite_collection_changed" for kind, _ in gate.events)


def test_load_tests_returning_an_empty_suite_is_refused(unittest_project, tmp_path):
    gate = Gate(unittest_project, tmp_path / "records")
    gate.edit(
        "tests/test_core.py",
        UNITTESTS
        + "\n\ndef load_tests(loader, tests, pattern):\n    return unittest.TestSuite()\n",
    )
    result = gate.check()
    assert not result.passed
    assert "ran 0 tests" in result.summary or "did not run" in result.summary, result.summary
    assert "tests/test_core.py" in result.summary  # what decides collection changed, named
    assert ("suite_collection_changed", {"files": ["tests/test_core.py"]}) in gate.events


def test_a_make_recipe_that_only_prints_is_refused(unittest_project, tmp_path):
    write_files(unittest_project, {"requirements.txt": "", "Makefile": MAKEFILE})
    gate = Gate(unittest_project, tmp_path / "records")
    assert gate.command == "make test"
    assert gate.first.report == "unittest" and gate.first.ran() == 3  # through make, still read
    gate.edit("Makefile", "test:\n\t@echo tests ok\n")
    result = gate.check()
    assert not result.passed
    assert "gave no per-test results" in result.summary, result.summary
    assert "Makefile" in result.summary


MAKEFILE = "test:\n\tpython -m unittest discover -s tests\n"


def test_a_test_that_passed_and_now_fails_is_refused_and_one_failing_before_may_fail(
    unittest_project, tmp_path
):
    broken = UNITTESTS.replace("self.assertEqual(add(0, 0), 0)", "self.assertEqual(add(0, 0), 1)")
    write_files(unittest_project, {"tests/test_core.py": broken})
    gate = Gate(unittest_project, tmp_path / "records")
    assert gate.first.with_outcome("failed") == ["test_core.MoreTest.test_add_zero"]
    assert gate.first.exit_code != 0
    # the change leaves the known failure failing: that is not the change's
    gate.edit("README.md", "a note\n")
    ok = gate.check()
    assert ok.passed and "1 failed before the change too" in ok.summary, ok.summary
    # a change that breaks a test that passed is refused, with what the test said
    gate.edit("core.py", CORE.replace("return a - b", "return b - a"))
    bad = gate.check()
    assert not bad.passed and "passed before fail now" in bad.summary
    assert "test_core.CoreTest.test_sub" in bad.summary
    assert "AssertionError" in bad.details
    # a new test that fails is refused too. core.py goes back to the same size within the
    # same second: a .pyc in the tree would pass for it (the run's bytecode is its own)
    gate.edit("core.py", CORE)
    gate.edit(
        "tests/test_new.py",
        "import unittest\n\n\nclass NewTest(unittest.TestCase):\n"
        "    def test_new(self):\n        self.fail('not done')\n",
    )
    new = gate.check()
    assert not new.passed and "new test(s) fail: test_new.NewTest.test_new" in new.summary


ODD_TESTS = """import unittest


class Sub(unittest.TestCase):
    def test_values(self):
        for n in range(3):
            with self.subTest(n=n):
                self.assertLess(n, 2)


class Setup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("no database")

    def test_needs_database(self):
        pass
"""
DIES = """import os
import unittest


class Dies(unittest.TestCase):
    def test_exits(self):
        os._exit(3)
"""


def test_a_subtest_failure_a_class_setup_error_and_a_dying_test_are_failures(tmp_path):
    files = {"core.py": CORE, "tests/__init__.py": "", "tests/test_odd.py": ODD_TESTS}
    ws = write_files(tmp_path / "ws", files | {"tests/test_z_dies.py": DIES})  # runs last
    first = Gate(ws, tmp_path / "records").first
    assert first.report == "unittest", first.tail
    assert first.tests["test_odd.Sub.test_values"] == "failed"
    assert first.tests["test_z_dies.Dies.test_exits"] == "failed"  # started, never ended
    setup = [t for t in first.tests if "setUpClass" in t]
    assert setup and first.tests[setup[0]] == "failed"
    assert "test_odd.Setup.test_needs_database" not in first.tests  # never ran


def test_tomlkit_shaped_pytest_configured_only_in_tests_conftest_is_run_by_pytest(tmp_path):
    ws = write_files(
        tmp_path / "ws",
        {
            "pyproject.toml": '[project]\nname = "core"\nversion = "1"\n',
            "core.py": CORE,
            "tests/conftest.py": CONFTEST,
            "tests/test_core.py": PYTESTS,
        },
    )
    assert discover_test_command(ws) == "python -m pytest -q"


def test_a_run_of_no_tests_is_never_a_pass(unittest_project, tmp_path):
    """unittest discover on a pytest suite runs 0 tests and exits 0 (tomlkit's 1,204-test
    suite, detected as unittest, once 'passed'): 0 is never a pass, first run or later."""
    ws = write_files(
        unittest_project, {"tests/test_core.py": PYTESTS, "tests/conftest.py": CONFTEST}
    )
    gate = Gate(ws, tmp_path / "records", command="python -m unittest discover -s tests")
    assert gate.first.exit_code == 0 or gate.first.ran() == 0
    assert judge(None, gate.first) == ["the suite ran 0 tests"] or not gate.first.readable
    result = gate.check()
    assert not result.passed


@pytest.fixture(scope="module")
def pytest_template(tmp_path_factory, wheel_server, shared_cache) -> Path:
    """A flat project whose tests are pytest's (configured in tests/conftest.py), with a
    .venv holding pytest, installed from the test index as cadillac's deps phase does;
    made once for the module, copied by each test (``pytest_project``)."""
    ws = write_files(
        tmp_path_factory.mktemp("pytest-template") / "ws",
        {
            "pyproject.toml": '[project]\nname = "core"\nversion = "1"\n',
            "core.py": CORE,
            "tests/conftest.py": CONFTEST,
            "tests/test_core.py": PYTESTS,
            "tests/test_more.py": "from core import add\n\n\ndef test_more():\n"
            "    assert add(1, 1) == 2\n",
        },
    )
    assert make_venv(ws / ".venv", shared_cache) is None
    steps, refused = requirement_steps(ws, "pytest", ["pytest"], "the test")
    assert not refused
    ctx = phase_context(ws, cache=shared_cache)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PIP_INDEX_URL", wheel_server)
        mp.setenv("PIP_CONFIG_FILE", "/dev/null")
        for name in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_CONSTRAINT"):
            mp.delenv(name, raising=False)
        for step in steps:
            result = ctx.run(step.command, timeout_s=300, install=step)
            assert result.ok, result.output[-2000:]
    return ws


@pytest.fixture
def pytest_project(pytest_template, tmp_path) -> Path:
    """A copy of the template (``python -m pytest`` runs from the copy's .venv)."""
    ws = tmp_path / "ws"
    shutil.copytree(pytest_template, ws, symlinks=True)
    return ws


def test_pytest_junit_is_read_and_a_conftest_that_stops_collection_is_refused(
    pytest_project, tmp_path
):
    gate = Gate(pytest_project, tmp_path / "records")
    assert gate.command == "python -m pytest -q"
    first = gate.first
    assert first.report == "junit" and first.ran() == 3
    assert first.files["tests.test_core::test_add"] == "tests/test_core.py"
    # the plan's command with one of the project's test files is covered by the same run
    covered = gate.check("python -m pytest -q tests/test_more.py")
    assert covered.passed and "1 test(s) ran in that run" in covered.summary, covered.summary
    gate.edit("tests/conftest.py", CONFTEST + '\ncollect_ignore = ["test_core.py"]\n')
    result = gate.check()
    assert not result.passed
    assert "2 test(s) that passed before did not run" in result.summary, result.summary
    assert "tests/conftest.py" in result.summary


HOSTILE_ENDS = {
    "a link in place of the report": """
def pytest_unconfigure(config):
    import os
    path = config.option.xmlpath
    os.unlink(path)
    os.symlink("/etc/passwd", path)
""",
    "an expansion bomb": """
def pytest_unconfigure(config):
    lol = '<!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">' + "".join(
        f'<!ENTITY {chr(98 + i)} "' + ("&" + chr(97 + i) + ";") * 10 + '">' for i in range(9)
    ) + ']><testsuites><testsuite><testcase classname="x" name="&j;"/></testsuite></testsuites>'
    open(config.option.xmlpath, "w").write_files(lol)
""",
    "a folder in place of the report": """
def pytest_unconfigure(config):
    import os
    os.unlink(config.option.xmlpath)
    os.mkdir(config.option.xmlpath)
""",
}


@pytest.mark.parametrize("how", sorted(HOSTILE_ENDS))
def test_a_project_that_spoils_its_report_gets_no_results_and_no_pass(
    pytest_project, tmp_path, how
):
    gate = Gate(pytest_project, tmp_path / "records")
    gate.edit("tests/conftest.py", CONFTEST + HOSTILE_ENDS[how])
    result = gate.check()
    assert not result.passed, result.summary
    said = ("no per-test results", "did not run", "ran 0 tests")
    assert any(words in result.summary for words in said), result.summary
    assert "tests/conftest.py" in result.summary
    assert not (tmp_path / "records" / "suite-run").exists()  # removed, link and all


def test_a_report_the_project_forges_is_named_as_a_change_to_collection(pytest_project, tmp_path):
    """The project's code runs in pytest's process, so a conftest can write the report
    itself; the gate cannot tell, but it names the change that did it for the reviewer."""
    gate = Gate(pytest_project, tmp_path / "records")
    forged = (
        "<testsuites><testsuite>"
        '<testcase classname="tests.test_core" name="test_add" file="tests/test_core.py"/>'
        '<testcase classname="tests.test_core" name="test_sub" file="tests/test_core.py"/>'
        '<testcase classname="tests.test_more" name="test_more" file="tests/test_more.py"/>'
        "</testsuite></testsuites>"
    )
    gate.edit(
        "tests/conftest.py",
        CONFTEST + f"\n\ndef pytest_unconfigure(config):\n"
        f"    open(config.option.xmlpath, 'w').write_files({forged!r})\n",
    )
    gate.edit("core.py", CORE.replace("return a + b", "return a * b"))
    result = gate.check()
    assert "the change touches what decides which tests run: core.py" not in result.summary
    assert "tests/conftest.py; recorded" in result.summary
    assert any(kind == "suite_collection_changed" for kind, _ in gate.events)


def test_the_plans_command_is_not_run_again_when_the_projects_run_covered_it():
    from phases.suite.gate import covered
    from phases.suite.results import SuiteResults

    run = SuiteResults(
        report="junit",
        tests={"t.test_a::x": "passed", "t.test_b::y": "passed"},
        files={"t.test_a::x": "tests/test_a.py", "t.test_b::y": "tests/test_b.py"},
    )
    base = "python -m pytest -q"
    assert covered(base, base, run) == ["t.test_a::x", "t.test_b::y"]
    assert covered("python -m pytest -q -v", base, run) == ["t.test_a::x", "t.test_b::y"]
    assert covered("python -m pytest -q ./tests/test_b.py", base, run) == ["t.test_b::y"]
    assert covered("python -m pytest -q tests/", base, run) == ["t.test_a::x", "t.test_b::y"]
    assert covered("python -m pytest -q tests/test_b.py::y", base, run) is None  # one test
    assert covered("python -m pytest -q -k y", base, run) is None  # a selection it cannot read
    assert covered("python -m pytest -q tests/test_c.py", base, run) is None  # not in the run
    assert covered("pytest", base, run) is None
    unittest = run.model_copy(update={"report": "unittest", "files": {}})
    cmd = "python -m unittest discover -s tests"
    assert covered(cmd + " -v", cmd, unittest) == ["t.test_a::x", "t.test_b::y"]
    assert covered(cmd + " -p 'test_b*'", cmd, unittest) is None
