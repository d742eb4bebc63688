"""Hidden checks for colsum-errors: bad input gives one error line and status 1."""

import contextlib
import io
import os
import subprocess
import sys
import tempfile

import colsum

ROOT = os.getcwd()
SALES = "region,amount\nnorth,10\nsouth,60\n east ,\nwest,25.5\nnorth,35\n"


def _run(args, stdin=""):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "colsum.py"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
    )


def _run_file(text, column):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "data.csv")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return _run([path, "--column", column])


def _one_error_line(proc):
    tail = proc.stderr.strip()[-160:]
    assert proc.returncode == 1, f"exit status {proc.returncode}; stderr ends {tail!r}"
    assert proc.stdout == "", f"printed to stdout: {proc.stdout[:160]!r}"
    assert "Traceback" not in proc.stderr, f"a traceback: {tail!r}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def test_missing_file_names_the_file():
    name = os.path.join(tempfile.gettempdir(), "no-such-sales-file.csv")
    line = _one_error_line(_run([name, "--column", "amount"]))
    assert name in line


def test_empty_file():
    _one_error_line(_run_file("", "amount"))


def test_empty_standard_input():
    _one_error_line(_run(["-", "--column", "amount"], stdin=""))


def test_unknown_column_is_named():
    line = _one_error_line(_run_file(SALES, "price"))
    assert "price" in line


def test_a_cell_that_is_not_a_number_is_quoted():
    line = _one_error_line(_run_file("region,amount\nnorth,10\nsouth,lots\n", "amount"))
    assert "lots" in line


def test_a_column_without_values():
    _one_error_line(_run_file("region,amount\n", "amount"))
    _one_error_line(_run_file("region,amount\nnorth,\nsouth, \n", "amount"))


def test_short_rows_count_as_blank_cells():
    proc = _run_file("region,amount\nnorth,10\nsouth\nwest,5\n", "amount")
    assert proc.returncode == 0, proc.stderr[-300:]
    assert proc.stdout.splitlines()[:2] == ["count\t2", "sum\t15"]


def test_main_returns_the_status_in_process():
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = colsum.main([os.path.join(ROOT, "no-such-file.csv"), "--column", "x"])
    assert status == 1
    assert err.getvalue().startswith("error: ")


def test_valid_input_prints_what_it_did():
    proc = _run_file(SALES, "amount")
    assert proc.returncode == 0, proc.stderr[-300:]
    assert proc.stdout.splitlines() == [
        "count\t4",
        "sum\t130.5",
        "mean\t32.625",
        "min\t10",
        "max\t60",
    ]


def test_standard_input_and_delimiter_still_work():
    proc = _run(["-", "--column", "b", "--delimiter", ";"], stdin="a;b\nx;2\ny;4.5\n")
    assert proc.returncode == 0, proc.stderr[-300:]
    assert proc.stdout.splitlines() == ["count\t2", "sum\t6.5", "mean\t3.25", "min\t2", "max\t4.5"]
