"""cadillac's record of each unittest result, in every Python process of a suite's run.

cadillac runs a project's own test command with this folder first on ``PYTHONPATH`` and
``CADILLAC_TEST_LOG`` naming a file of its run's folder (see ``phases/suite/run.py``).
Python imports ``sitecustomize`` at start-up, so in each process of the run (the
project's runner script, ``unittest discover``, a parallel runner's workers) every
``unittest.TestResult`` says how each test ended, one JSON line per event: its id
(``test.id()``) and ``started``, ``passed``, ``failed`` or ``skipped``. Whatever result
class a runner uses (Django's, unittest's text runner), it reaches these methods through
``super()``. A ``sitecustomize`` that was there before this one is still run. This file
uses the standard library only and does nothing when the variable is not set.
"""

import contextlib
import os


def _install(log):
    import json
    import traceback
    import unittest.result

    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)

    def write(test, outcome, err=None):
        try:
            test_id = test.id()
        except Exception:
            test_id = str(test)
        message = ""
        if err is not None:
            try:
                message = "".join(traceback.format_exception_only(err[0], err[1]))[-600:]
            except Exception:
                message = repr(err)[:600]
        line = json.dumps({"id": str(test_id), "outcome": outcome, "message": message})
        try:
            fd = os.open(log, flags, 0o644)
            try:
                os.write(fd, (line + "\n").encode("utf-8", "replace"))
            finally:
                os.close(fd)
        except OSError:
            pass

    result = unittest.result.TestResult
    outcomes = (
        ("startTest", "started"),
        ("addSuccess", "passed"),
        ("addFailure", "failed"),
        ("addError", "failed"),
        ("addSkip", "skipped"),
        ("addExpectedFailure", "passed"),
        ("addUnexpectedSuccess", "failed"),
    )
    for name, outcome in outcomes:
        original = getattr(result, name)

        def method(self, test, *args, _original=original, _outcome=outcome, _name=name):
            err = args[0] if _name in ("addFailure", "addError") and args else None
            write(test, _outcome, err)
            return _original(self, test, *args)

        setattr(result, name, method)
    original_sub = result.addSubTest

    def add_sub_test(self, test, subtest, err):
        if err is not None:
            write(test, "failed", err)
        return original_sub(self, test, subtest, err)

    result.addSubTest = add_sub_test


def _chain():
    """Run the ``sitecustomize`` this one stands in front of, if there is one."""
    import importlib.machinery
    import importlib.util
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_LOG = os.environ.get("CADILLAC_TEST_LOG")
if _LOG:
    with contextlib.suppress(Exception):
        _install(_LOG)
with contextlib.suppress(Exception):
    _chain()
