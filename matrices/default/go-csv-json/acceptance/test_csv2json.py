"""Hidden checks for go-csv-json: the binary `go build` makes, run on CSV files and stdin."""

import json
import os
import subprocess
import tempfile

ROOT = os.getcwd()
BUILT = {}


def _tool():
    """The binary, built once into a temporary folder (the build's error fails every check)."""
    if "path" not in BUILT:
        out = os.path.join(tempfile.mkdtemp(), "csv2json")
        done = subprocess.run(
            ["go", "build", "-o", out, "."], cwd=ROOT, capture_output=True, text=True, timeout=50
        )
        BUILT["path"] = out if done.returncode == 0 else None
        BUILT["error"] = done.stderr[-500:]
    assert BUILT["path"], f"go build failed: {BUILT['error']}"
    return BUILT["path"]


def _run(args, stdin=""):
    return subprocess.run(
        [_tool(), *args], input=stdin, capture_output=True, text=True, timeout=10, cwd=ROOT
    )


def _converted(args, stdin=""):
    proc = _run(args, stdin)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("\n")
    return json.loads(proc.stdout)


def _fails(args, stdin="", status=1):
    proc = _run(args, stdin)
    assert proc.returncode == status, (args, stdin, proc.returncode, proc.stderr)
    assert proc.stdout == "", (args, stdin)
    return proc.stderr


def test_a_file_becomes_an_array_of_string_objects():
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "people.csv")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("name,age,city\nAda,36,London\nLinus,21,Helsinki\n")
        rows = _converted([path])
    assert rows == [
        {"name": "Ada", "age": "36", "city": "London"},
        {"name": "Linus", "age": "21", "city": "Helsinki"},
    ]


def test_stdin_with_quotes_delimiters_and_line_breaks():
    text = 'id,note\n1,"a, b"\n2,"say ""hi"""\n3,"two\nlines"\n\n4,ünï\n'
    assert _converted([], text) == [
        {"id": "1", "note": "a, b"},
        {"id": "2", "note": 'say "hi"'},
        {"id": "3", "note": "two\nlines"},
        {"id": "4", "note": "ünï"},
    ]


def test_types_turn_fields_into_json_values():
    text = "a,b,c,d,e\n42,-7,3.25,true,\nfalse,x1,-0.5,TRUE,1.\n"
    assert _converted(["-types"], text) == [
        {"a": 42, "b": -7, "c": 3.25, "d": True, "e": None},
        {"a": False, "b": "x1", "c": -0.5, "d": "TRUE", "e": "1."},
    ]


def test_a_delimiter_of_one_character():
    assert _converted(["-d", ";", "-types"], "k;v\nx;1,5\ny;2\n") == [
        {"k": "x", "v": "1,5"},
        {"k": "y", "v": 2},
    ]


def test_no_records_print_an_empty_array():
    assert _converted([], "") == []
    assert _converted([], "only,header\n") == []


def test_a_short_or_long_record_names_its_line():
    stderr = _fails([], "a,b\n1,2\n3\n")
    assert stderr.startswith("csv2json: ") and "line 3" in stderr
    stderr = _fails([], 'a,b\n"x\ny",2\n5,6,7\n')
    assert stderr.startswith("csv2json: ") and "line 4" in stderr


def test_bad_headers_and_quotes_fail():
    for text in ("a,a\n1,2\n", "a,\n1,2\n", 'a,b\n1,x"y\n', 'a,b\n"open,2\n'):
        assert _fails([], text).startswith("csv2json: "), text


def test_a_missing_file_fails():
    missing = os.path.join(tempfile.gettempdir(), "no-such-folder", "x.csv")
    assert _fails([missing]).startswith("csv2json: ")


def test_usage_errors_exit_2():
    for args in (["-d", ";;"], ["-d", ""], ["-x"], ["a.csv", "b.csv"]):
        assert _fails(args, "a\n1\n", status=2).strip(), args
