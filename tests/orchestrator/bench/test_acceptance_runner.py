"""The acceptance runner: counts per check, import failures, time limits, stdout, exit status."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

RUNNER = Path(__file__).parents[3] / "orchestrator" / "bench" / "acceptance_runner.py"

FILES = {
    "calc.py": """
        def add(a, b):
            return a + b
    """,
    "acceptance/test_cases.py": """
        import unittest

        import calc


        class TestAdd(unittest.TestCase):
            def test_small(self):
                self.assertEqual(calc.add(1, 2), 3)

            def test_negative(self):
                self.assertEqual(calc.add(-1, -2), -3)

            def test_wrong(self):
                self.assertEqual(calc.add(2, 2), 5)

            @unittest.skip("not counted")
            def test_skipped(self):
                raise AssertionError("never runs")
    """,
    "acceptance/test_plain.py": """
        import calc


        def test_passes():
            assert calc.add(1, 1) == 2


        def test_fails():
            assert calc.add(1, 1) == 3


        def helper_not_a_check():
            raise AssertionError("not collected")


        def test_needs_argument(tmp_path):
            raise AssertionError("a pytest fixture argument: not collected")
    """,
    "acceptance/test_broken.py": """
        import module_that_does_not_exist
    """,
    "acceptance/nested/test_noisy.py": """
        import sys


        def test_prints_a_lot():
            for i in range(20000):
                print("noise", i, '{"passed": 999}')
                print("more noise", file=sys.stderr)
    """,
    "acceptance/test_slow.py": """
        import time


        def test_sleeps():
            time.sleep(30)


        def test_after_the_slow_one():
            assert True
    """,
}


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for name, text in FILES.items():
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return ws


def _run(ws: Path, *args: str) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, str(RUNNER), *args],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    last = proc.stdout.strip().splitlines()[-1]
    return proc.returncode, json.loads(last), proc.stdout


def test_counts_every_kind_of_check(tmp_path: Path) -> None:
    code, report, stdout = _run(_workspace(tmp_path), "acceptance", "--check-timeout", "1")
    failed = {f["check"] for f in report["failures"]}
    assert failed == {
        "test_broken.py::import",
        "test_cases.py::TestAdd::test_wrong",
        "test_plain.py::test_fails",
        "test_slow.py::test_sleeps",
    }
    # passing: 2 unittest methods, test_passes, the noisy test, test_after_the_slow_one
    assert (report["passed"], report["failed"], report["total"]) == (5, 4, 9)
    assert len(report["passed_checks"]) == 5 and not set(report["passed_checks"]) & failed
    assert "test_plain.py::test_passes" in report["passed_checks"]
    assert code == 1
    assert stdout.strip().count("\n") == 0  # the checks' output never reaches stdout


def test_errors_say_what_failed(tmp_path: Path) -> None:
    _, report, _ = _run(_workspace(tmp_path), "acceptance", "--check-timeout", "1")
    errors = {f["check"]: f["error"] for f in report["failures"]}
    assert "module_that_does_not_exist" in errors["test_broken.py::import"]
    assert "5" in errors["test_cases.py::TestAdd::test_wrong"]
    assert "assert calc.add(1, 1) == 3" in errors["test_plain.py::test_fails"]
    assert errors["test_slow.py::test_sleeps"].startswith("CheckTimeout")
    assert all(len(text) <= 300 for text in errors.values())


def test_all_passing_exits_zero(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    for name in ("test_broken.py", "test_slow.py", "test_cases.py", "test_plain.py"):
        (ws / "acceptance" / name).unlink()
    code, report, _ = _run(ws, "acceptance")
    assert (code, report["passed"], report["total"], report["failures"]) == (0, 1, 1, [])


def test_missing_folder_exits_two(tmp_path: Path) -> None:
    code, report, _ = _run(_workspace(tmp_path), "no_such_folder")
    assert code == 2
    assert report == {"passed": 0, "failed": 0, "total": 0, "failures": [], "passed_checks": []}


def test_empty_folder_is_not_a_pass(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "acceptance").mkdir(parents=True)
    code, report, _ = _run(ws, "acceptance")
    assert (code, report["total"]) == (1, 0)


HOSTILE = """
    import os
    import subprocess
    import sys
    import threading
    import time
    import unittest


    def test_exits():
        sys.exit(3)


    def test_changes_directory():
        os.chdir("/")


    def test_runs_in_the_workspace_root():
        assert os.path.exists("acceptance")


    def test_leaves_a_thread_running():
        threading.Thread(target=time.sleep, args=(60,)).start()


    def test_child_writes_to_stdout():
        subprocess.run([sys.executable, "-c", "print('from a child')"], check=True)


    def test_sees_no_runner_arguments():
        assert sys.argv[1:] == []


    class BrokenSetup(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            raise RuntimeError("no database")

        def test_a(self):
            pass

        def test_b(self):
            pass


    class SubTests(unittest.TestCase):
        def test_each_number(self):
            for n in (1, 2, 3):
                with self.subTest(n=n):
                    self.assertLess(n, 3)
"""


def test_checks_cannot_break_the_runner(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "acceptance").mkdir(parents=True)
    (ws / "acceptance" / "test_hostile.py").write_text(textwrap.dedent(HOSTILE))
    code, report, stdout = _run(ws, "acceptance", "--check-timeout", "5")
    failed = {f["check"] for f in report["failures"]}
    assert failed == {
        "test_hostile.py::test_exits",
        "test_hostile.py::BrokenSetup::setUpClass",
        "test_hostile.py::SubTests::test_each_number",
    }
    assert (report["passed"], report["total"], code) == (5, 8, 1)
    assert "from a child" not in stdout
