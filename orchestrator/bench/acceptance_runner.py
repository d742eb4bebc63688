"""Run a build's hidden acceptance checks and print one JSON line: which passed, which failed.

A benchmark task is scored by the share of its acceptance checks that pass on the built
project. The scorer (:mod:`orchestrator.bench.scoring`) runs this script from the
project's folder with the Python of a fresh environment holding the project's declared
dependencies (``python runner.py CHECKS``), because the checks must import the project
exactly as its users would.

What this module decides, and why:

* Standard library only, Python 3.9 and later: the project's environment is whatever the
  build made it, and may lack pytest. Checks are pytest-style plain ``test_*`` functions
  (passing means returning without raising, so bare ``assert`` works) or
  ``unittest.TestCase`` methods; each function and each method is one check. Skipped
  tests are left out of the total; a failing subtest fails its method.
* A test file that fails to import is one failed check, ``<file>::import``: one broken
  file costs its share and no more, and the error says why.
* Every check has a time limit (``signal`` timer, main thread on Unix; elsewhere none), so a
  hung server or an endless loop fails one check instead of the whole run.
* What the checks print goes to a buffer (and file descriptor 1 to ``/dev/null``, for the
  subprocesses they start), so the JSON line is the last line of stdout and nothing else
  writes after it. The checks see ``sys.argv`` without our arguments, so a ``main()`` that
  parses ``sys.argv`` by default sees none, and each check starts in the workspace root.
* Exit status: 0 when every check passed, 1 when one failed or none were found (an empty
  folder means a broken task, not a perfect build), 2 when the folder does not exist.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import inspect
import io
import json
import os
import signal
import sys
import threading
import traceback
import unittest
from pathlib import Path

ERROR_CHARS = 300
DEFAULT_TIMEOUT_S = 60.0


class CheckTimeout(BaseException):
    """A check ran past its time limit (a BaseException, so ``except Exception`` cannot eat it)."""


class Tally:
    """The checks run so far: how many passed and what failed."""

    def __init__(self) -> None:
        self.passed: list[str] = []
        self.failures: list[dict[str, str]] = []

    def ok(self, check: str) -> None:
        self.passed.append(check)

    def fail(self, check: str, error: str) -> None:
        self.failures.append({"check": check, "error": error[:ERROR_CHARS]})

    def report(self) -> dict:
        failed = len(self.failures)
        return {
            "passed": len(self.passed),
            "failed": failed,
            "total": len(self.passed) + failed,
            "failures": self.failures,
            "passed_checks": self.passed,
        }


class TimeLimit:
    """Arms a real-time timer that raises CheckTimeout; does nothing where signals cannot."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.enabled = (
            seconds > 0
            and hasattr(signal, "SIGALRM")
            and threading.current_thread() is threading.main_thread()
        )
        self.previous = None

    def _expired(self, signum, frame) -> None:
        raise CheckTimeout(f"the check ran past its time limit of {self.seconds:g} s")

    def __enter__(self) -> TimeLimit:
        if self.enabled:
            self.previous = signal.signal(signal.SIGALRM, self._expired)
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.disarm()
            signal.signal(signal.SIGALRM, self.previous)

    def arm(self) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def disarm(self) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, 0)


def describe(exc_info, test_file: Path) -> str:
    """``Type: message``, then the innermost line of the test file that raised it."""
    exc_type, exc, tb = exc_info
    message = str(exc).strip()
    text = f"{exc_type.__name__}: {message}" if message else exc_type.__name__
    frames = [f for f in traceback.extract_tb(tb) if f.filename == str(test_file)]
    if frames:
        text += f" [{test_file.name}:{frames[-1].lineno}: {(frames[-1].line or '').strip()}]"
    return text


class CheckResult(unittest.TestResult):
    """Records unittest outcomes per test method and re-arms the time limit around each."""

    def __init__(self, limit: TimeLimit, test_file: Path) -> None:
        super().__init__()
        self.limit, self.test_file = limit, test_file
        self.started: list[str] = []
        self.errors_by_id: dict[str, str] = {}
        self.skipped_ids: set[str] = set()

    def _record(self, test, text: str) -> None:
        test = getattr(test, "test_case", test)  # a subtest fails the method it belongs to
        self.errors_by_id.setdefault(test.id(), text)

    def startTest(self, test) -> None:
        self.limit.arm()
        self.started.append(test.id())
        super().startTest(test)

    def stopTest(self, test) -> None:
        super().stopTest(test)
        self.limit.arm()  # the stretch until the next test: class teardown and setup

    def addError(self, test, err) -> None:
        super().addError(test, err)
        self._record(test, describe(err, self.test_file))

    def addFailure(self, test, err) -> None:
        super().addFailure(test, err)
        self._record(test, describe(err, self.test_file))

    def addSubTest(self, test, subtest, err) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._record(subtest, describe(err, self.test_file))

    def addSkip(self, test, reason) -> None:
        super().addSkip(test, reason)
        self.skipped_ids.add(test.id())

    def addUnexpectedSuccess(self, test) -> None:
        super().addUnexpectedSuccess(test)
        self._record(test, "unexpected success of a test marked expectedFailure")


def import_file(path: Path, index: int):
    """Import a test file by path under a name no other test file shares."""
    name = f"_cadillac_acceptance_{index}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def takes_no_arguments(function) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return all(p.default is not p.empty or p.kind in variadic for p in parameters)


def run_function(function, name: str, test_file: Path, limit: TimeLimit, tally: Tally) -> None:
    try:
        limit.arm()
        try:
            outcome = function()
            if inspect.iscoroutine(outcome):
                asyncio.run(outcome)
        finally:
            limit.disarm()
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: B036 - a check that calls sys.exit fails; it does not end the run
        tally.fail(name, describe(sys.exc_info(), test_file))
    else:
        tally.ok(name)


def run_test_case(cls, prefix: str, test_file: Path, limit: TimeLimit, tally: Tally) -> None:
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(cls)
    result = CheckResult(limit, test_file)
    try:
        limit.arm()  # covers setUpClass before the first test starts
        suite.run(result)
    except CheckTimeout:  # in setUpClass or tearDownClass, which unittest does not guard
        tally.fail(f"{prefix}::{cls.__name__}", describe(sys.exc_info(), test_file))
    finally:
        limit.disarm()
    started = set(result.started)
    for test_id in result.started:
        method = test_id.rsplit(".", 1)[-1]
        if test_id in result.errors_by_id:
            tally.fail(f"{prefix}::{cls.__name__}::{method}", result.errors_by_id[test_id])
        elif test_id not in result.skipped_ids:
            tally.ok(f"{prefix}::{cls.__name__}::{method}")
    for test_id, text in result.errors_by_id.items():
        if test_id not in started:  # setUpClass or a class skip gone wrong: the class fails once
            tally.fail(f"{prefix}::{cls.__name__}::{test_id.rsplit(' ', 1)[0]}", text)


def run_file(path: Path, prefix: str, index: int, limit: TimeLimit, tally: Tally) -> None:
    root = os.getcwd()
    try:
        limit.arm()
        try:
            module = import_file(path, index)
        finally:
            limit.disarm()
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: B036 - an import that exits or times out is a failed check
        tally.fail(f"{prefix}::import", describe(sys.exc_info(), path))
        os.chdir(root)
        return
    for name, obj in list(vars(module).items()):
        if getattr(obj, "__module__", None) != module.__name__:
            continue  # imported from elsewhere: not this file's check
        if inspect.isclass(obj) and issubclass(obj, unittest.TestCase):
            run_test_case(obj, prefix, path, limit, tally)
        elif inspect.isfunction(obj) and name.startswith("test_") and takes_no_arguments(obj):
            run_function(obj, f"{prefix}::{name}", path, limit, tally)
        os.chdir(root)


def run_folders(folders: list[Path], timeout_s: float) -> Tally:
    """Run every ``test_*.py`` under each folder, folder after folder, in sorted order."""
    tally = Tally()
    index = 0
    with TimeLimit(timeout_s) as limit:
        for folder in folders:
            for path in sorted(folder.rglob("test_*.py")):
                prefix = path.relative_to(folder).as_posix()
                run_file(path.resolve(), prefix, index, limit, tally)
                index += 1
    return tally


@contextlib.contextmanager
def quiet_fd1():
    """Point file descriptor 1 at /dev/null; yield a stream on the original stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    real = os.fdopen(saved, "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    try:
        yield real
    finally:
        real.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run acceptance checks; print one JSON line.")
    parser.add_argument(
        "folders", nargs="+", help="folders of test_*.py files, run in the order given"
    )
    parser.add_argument(
        "--check-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help="seconds each check may take (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    folders = [Path(f) for f in args.folders]
    missing = [f for f in folders if not f.is_dir()]
    if missing:
        print(f"no such folder: {missing[0]}", file=sys.stderr, flush=True)
        print(json.dumps(Tally().report()), flush=True)
        return 2
    root = os.getcwd()
    sys.path.insert(0, root)
    sys.argv = [sys.argv[0]]
    captured = io.StringIO()
    with quiet_fd1() as real_stdout:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            tally = run_folders(folders, args.check_timeout)
        os.chdir(root)
        report = tally.report()
        real_stdout.write(json.dumps(report) + "\n")
    # Checks may leave threads that print; what they print from here on goes to the buffer.
    sys.stdout = sys.stderr = captured
    return 0 if report["total"] and not report["failed"] else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # threads or servers a check left running must not keep the process alive
