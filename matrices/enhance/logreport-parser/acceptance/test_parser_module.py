"""Hidden checks for logreport-parser: the parsing now lives in parser.py."""

import importlib
import os
import subprocess
import sys
from datetime import datetime

from cadillac_judge import in_project

ROOT = os.getcwd()
NAMES = ("Entry", "ParseError", "METHODS", "parse_line", "parse_lines")


def _parser():
    return importlib.import_module("parser")


def test_parser_defines_the_parsing():
    parser = _parser()
    assert os.path.dirname(os.path.abspath(parser.__file__)) == ROOT, parser.__file__
    for name in ("Entry", "ParseError", "parse_line", "parse_lines"):
        assert getattr(parser, name).__module__ == "parser", name
    assert "GET" in parser.METHODS and "DELETE" in parser.METHODS


def test_parser_parses_as_before():
    parser = _parser()
    entry = parser.parse_line("2024-05-01T10:00:00 GET /index.html 200 12ms")
    assert entry == parser.Entry(datetime(2024, 5, 1, 10), "GET", "/index.html", 200, 12)
    assert parser.parse_line("  ") is None and parser.parse_line("# note") is None
    entries = parser.parse_lines(["", "2024-05-01T10:00:00 POST /a 201 5ms"])
    assert [(e.method, e.status, e.duration_ms) for e in entries] == [("POST", 201, 5)]


def test_parser_errors_as_before():
    parser = _parser()
    try:
        parser.parse_lines(["# header", "2024-05-01T10:00:00 GET /x 200 1s"])
    except parser.ParseError as exc:
        assert exc.line_no == 2
        assert str(exc) == "line 2: bad duration '1s'; expected a number of ms"
        assert isinstance(exc, ValueError)
    else:
        raise AssertionError("a bad duration did not raise ParseError")


def test_parser_does_not_import_logreport():
    code = "import sys, parser; print('logreport' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 0, done.stderr[-300:]
    assert done.stdout.strip() == "False", "importing parser imports logreport"


def test_the_old_import_path_gives_the_same_objects():
    parser = _parser()
    import logreport

    # identity is a matter of the project's process, where the objects live
    assert in_project("differing", logreport, parser, NAMES) == []


def test_the_parsing_tests_moved_to_tests_test_parser():
    path = os.path.join(ROOT, "tests", "test_parser.py")
    assert os.path.isfile(path), "tests/test_parser.py does not exist"
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert "from parser import" in text or "import parser" in text
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stderr[-300:]
