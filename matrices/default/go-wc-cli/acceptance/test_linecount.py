"""Hidden checks for go-wc-cli: the binary `go build` makes, run with argv and stdin."""

import os
import subprocess
import tempfile

ROOT = os.getcwd()
BUILT = {}


def _tool():
    """The binary, built once into a temporary folder (the build's error fails every check)."""
    if "path" not in BUILT:
        out = os.path.join(tempfile.mkdtemp(), "linecount")
        done = subprocess.run(
            ["go", "build", "-o", out, "."],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=50,
        )
        BUILT["path"] = out if done.returncode == 0 else None
        BUILT["error"] = done.stderr[-500:]
    assert BUILT["path"], f"go build failed: {BUILT['error']}"
    return BUILT["path"]


def _run(args, stdin=""):
    return subprocess.run(
        [_tool(), *args], input=stdin, capture_output=True, text=True, timeout=10, cwd=ROOT
    )


def _write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def test_stdin_prints_lines_words_bytes():
    proc = _run([], stdin="one two\nthree  four five\n\nsix\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "4 6 30\n"


def test_words_are_runs_of_non_space_in_utf8():
    proc = _run([], stdin="héllo\twörld  ünïcode")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "0 3 24\n"


def test_selected_counts_keep_their_order():
    assert _run(["-l"], stdin="a\nb\nc").stdout == "2\n"
    assert _run(["-c", "-w"], stdin="ab cd\n").stdout == "2 6\n"
    assert _run(["-w", "-l"], stdin="x y z\n").stdout == "1 3\n"


def test_one_file_is_named():
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, "a.txt", "alpha beta\ngamma\n")
        proc = _run(["-l", "-w", path])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"2 3 {path}\n"


def test_several_files_and_a_total():
    with tempfile.TemporaryDirectory() as folder:
        first = _write(folder, "a.txt", "alpha beta\ngamma\n")
        second = _write(folder, "b.txt", "x\n")
        proc = _run([first, second])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"2 3 17 {first}", f"1 1 2 {second}", "3 4 19 total"]


def test_a_missing_file_is_reported_and_the_rest_counted():
    with tempfile.TemporaryDirectory() as folder:
        good = _write(folder, "good.txt", "one two\n")
        missing = os.path.join(folder, "missing.txt")
        proc = _run(["-w", missing, good])
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [f"2 {good}", "2 total"]
    assert proc.stderr.startswith("linecount: ") and "missing.txt" in proc.stderr


def test_an_unknown_flag_is_a_usage_error():
    proc = _run(["-z"], stdin="a\n")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip()
