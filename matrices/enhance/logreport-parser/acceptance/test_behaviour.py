"""Hidden checks for logreport-parser: what the project did, it still does."""

import os
import subprocess
import sys
import tempfile

import logreport

ROOT = os.getcwd()
LOG = """# a sample
2024-05-01T10:00:00 GET /index.html 200 40ms
2024-05-01T10:01:00 POST /report 201 300ms

2024-05-01T10:02:30 GET /index.html 200 40ms
2024-05-01T10:03:10 GET /health 503 25ms
2024-05-01T10:04:00 DELETE /report 404 15ms
"""
REPORT = """requests: 5
period: 2024-05-01T10:00:00 .. 2024-05-01T10:04:00
status 2xx: 3
status 4xx: 1
status 5xx: 1
mean duration: 84.0 ms
slow: /report 157.5 ms
slow: /index.html 40.0 ms
"""


def _run_on(text, *args):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "access.log")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return subprocess.run(
            [sys.executable, os.path.join(ROOT, "logreport.py"), path, *args],
            capture_output=True,
            text=True,
            timeout=20,
            cwd=ROOT,
        )


def test_the_report_is_unchanged():
    done = _run_on(LOG, "--top", "2")
    assert done.returncode == 0, done.stderr[-300:]
    assert done.stdout == REPORT


def test_a_bad_line_is_one_error_and_status_1():
    done = _run_on(LOG + "2024-05-01T10:05:00 FETCH /x 200 1ms\n")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip() == "error: line 8: unknown method 'FETCH'"


def test_a_missing_file_is_one_error_and_status_1():
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "logreport.py"), os.path.join(ROOT, "nope.log")],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: cannot read ")


def test_the_functions_still_work_through_logreport():
    entries = logreport.parse_lines(LOG.splitlines())
    summary = logreport.summarize(entries, top=1)
    assert summary["requests"] == 5 and summary["slowest"] == [("/report", 157.5)]
    assert logreport.render(logreport.summarize([])) == "requests: 0\nmean duration: 0.0 ms"
    try:
        logreport.parse_line("2024-05-01T10:00:00 GET /x 200", 4)
    except logreport.ParseError as exc:
        assert str(exc) == "line 4: expected 5 fields, found 4" and exc.line_no == 4
    else:
        raise AssertionError("a short line did not raise ParseError")
