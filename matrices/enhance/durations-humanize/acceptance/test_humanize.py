"""Hidden checks for durations-humanize: the new function, its docstring, tests and docs."""

import os
import subprocess
import sys

import durations
from cadillac_judge import in_project

ROOT = os.getcwd()


def _humanize():
    from durations import humanize_duration

    return humanize_duration


def test_exported_from_the_package_and_defined_in_core():
    from durations import core

    humanize = _humanize()
    assert "humanize_duration" in durations.__all__
    assert core.humanize_duration is humanize


def test_words_largest_unit_first():
    humanize = _humanize()
    assert humanize(3725) == "1 hour, 2 minutes"
    assert humanize(7200) == "2 hours"
    assert humanize(59) == "59 seconds"
    assert humanize(1) == "1 second"
    assert humanize(172_800 + 120) == "2 days, 2 minutes"


def test_zero_units_are_skipped_and_the_rest_dropped_not_rounded():
    humanize = _humanize()
    assert humanize(3601) == "1 hour, 1 second"
    assert humanize(3599) == "59 minutes, 59 seconds"
    assert humanize(90_061) == "1 day, 1 hour"
    assert humanize(86_399 + 86_400) == "1 day, 23 hours"


def test_max_units():
    humanize = _humanize()
    assert humanize(90_061, max_units=4) == "1 day, 1 hour, 1 minute, 1 second"
    assert humanize(90_061, max_units=1) == "1 day"
    assert humanize(90_061, 3) == "1 day, 1 hour, 1 minute"
    assert humanize(61, max_units=10) == "1 minute, 1 second"


def test_zero_seconds():
    assert _humanize()(0) == "0 seconds"


def test_duration_strings():
    humanize = _humanize()
    assert humanize("1h30m") == "1 hour, 30 minutes"
    assert humanize("2d 4h 5s", max_units=3) == "2 days, 4 hours, 5 seconds"
    try:
        humanize("soon")
    except ValueError:
        pass
    else:
        raise AssertionError("humanize_duration('soon') did not raise ValueError")


def test_bad_arguments_raise_value_error():
    humanize = _humanize()
    for args in [(-1,), (60, 0), (60, -2)]:
        try:
            humanize(*args)
        except ValueError:
            continue
        raise AssertionError(f"humanize_duration{args} did not raise ValueError")


def test_the_docstring_has_a_passing_example():
    examples, failures = in_project("doctest", _humanize())  # run where the code lives
    assert examples >= 1, "the docstring has no >>> example"
    assert failures == 0, f"{failures} docstring example(s) fail"


def test_the_readme_documents_it():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        assert "humanize_duration" in handle.read()


def test_the_projects_own_suite_tests_it_and_passes():
    tests = os.path.join(ROOT, "tests")
    mentioned = False
    for name in sorted(os.listdir(tests)):
        if name.startswith("test") and name.endswith(".py"):
            with open(os.path.join(tests, name), encoding="utf-8") as handle:
                mentioned = mentioned or "humanize_duration" in handle.read()
    assert mentioned, "no test file under tests/ mentions humanize_duration"
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stderr[-300:]


def test_the_existing_functions_still_work():
    assert durations.parse_duration("1h30m") == 5400
    assert durations.parse_duration(" 2D 4h ") == 187_200
    assert durations.format_duration(93_784) == "1d2h3m4s"
    assert durations.format_duration(0) == "0s"
    for text in ["", "1x", "30m1h"]:
        try:
            durations.parse_duration(text)
        except ValueError:
            continue
        raise AssertionError(f"parse_duration({text!r}) did not raise ValueError")
