"""Hidden checks for access-log-stats: parsing lines, the summary and the command line."""

import json
import os
import subprocess
import sys
import tempfile

import logstats

ROOT = os.getcwd()
T = "[10/Oct/2023:13:55:36 -0700]"
LOG = "\n".join(
    [
        f'10.0.0.1 - - {T} "GET /index.html HTTP/1.1" 200 1000',
        f'10.0.0.2 - frank {T} "GET /index.html?utm=x HTTP/1.1" 200 500',
        f'10.0.0.1 - - {T} "POST /login HTTP/1.1" 302 -',
        "this line is garbage",
        f'10.0.0.3 - - {T} "GET /about HTTP/1.0" 404 120',
        "",
        f'10.0.0.2 - - {T} "GET /about HTTP/1.1" 200 80 "http://ref.example/" "Mozilla/5.0"',
        f'10.0.0.4 - - {T} "GET /index.html" 200 10',
        f'10.0.0.1 - - {T} "GET /api/items?page=2 HTTP/1.1" 500 300',
        "   ",
        f'10.0.0.5 - - {T} "GET /zeta HTTP/1.1" 200 abc',
    ]
)
LINES = LOG.split("\n")
EXPECTED = {
    "requests": 6,
    "malformed": 3,
    "bytes": 2000,
    "hosts": 3,
    "status": {"200": 3, "302": 1, "404": 1, "500": 1},
    "top_paths": [
        {"path": "/about", "count": 2},
        {"path": "/index.html", "count": 2},
        {"path": "/api/items", "count": 1},
        {"path": "/login", "count": 1},
    ],
}


def _run(args, stdin=""):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "logstats.py"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
    )


def _write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def test_parse_line_fields():
    line = f'192.168.1.9 - bob {T} "GET /a/b.html?x=1&y=2 HTTP/1.1" 203 2326\n'
    assert logstats.parse_line(line) == {
        "host": "192.168.1.9",
        "time": "10/Oct/2023:13:55:36 -0700",
        "method": "GET",
        "path": "/a/b.html",
        "status": 203,
        "bytes": 2326,
    }
    record = logstats.parse_line(f'::1 - - {T} "HEAD / HTTP/2.0" 304 -')
    assert record["bytes"] == 0 and record["path"] == "/" and record["method"] == "HEAD"


def test_parse_line_rejects_malformed_lines():
    for line in [
        "",
        "garbage",
        f'10.0.0.1 - - {T} "GET /index.html" 200 10',
        f'10.0.0.1 - - {T} "GET /x HTTP/1.1" 2000 10',
        f'10.0.0.1 - - {T} "GET /x HTTP/1.1" 200 1k',
        '10.0.0.1 - - 10/Oct/2023:13:55:36 "GET /x HTTP/1.1" 200 10',
        f'10.0.0.1 - {T} "GET /x HTTP/1.1" 200 10',
        f"10.0.0.1 - - {T} GET /x HTTP/1.1 200 10",
    ]:
        assert logstats.parse_line(line) is None, line


def test_parse_line_accepts_combined_log_format():
    line = f'1.2.3.4 - - {T} "GET /c HTTP/1.1" 200 5 "-" "curl/8.0"'
    assert logstats.parse_line(line)["path"] == "/c"
    assert logstats.parse_line(line)["bytes"] == 5


def test_summarize_counts_and_skips():
    assert logstats.summarize(LINES) == EXPECTED
    assert logstats.summarize(iter(line + "\n" for line in LINES)) == EXPECTED


def test_summarize_top_limit_and_tie_order():
    lines = [f'h{i} - - {T} "GET /{p} HTTP/1.1" 200 1' for i, p in enumerate("cbabcaddd")]
    summary = logstats.summarize(lines, top=3)
    assert summary["top_paths"] == [
        {"path": "/d", "count": 3},
        {"path": "/a", "count": 2},
        {"path": "/b", "count": 2},
    ]
    assert summary["hosts"] == 9
    empty = logstats.summarize([])
    assert empty == {
        "requests": 0,
        "malformed": 0,
        "bytes": 0,
        "hosts": 0,
        "status": {},
        "top_paths": [],
    }


def test_cli_text_output():
    with tempfile.TemporaryDirectory() as folder:
        proc = _run([_write(folder, "access.log", LOG + "\n")])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "requests: 6",
        "malformed: 3",
        "bytes: 2000",
        "hosts: 3",
        "status 200: 3",
        "status 302: 1",
        "status 404: 1",
        "status 500: 1",
        "top paths:",
        "  2 /about",
        "  2 /index.html",
        "  1 /api/items",
        "  1 /login",
    ]


def test_cli_json_output_with_top():
    proc = _run(["--json", "--top", "2"], stdin=LOG)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary == dict(EXPECTED, top_paths=EXPECTED["top_paths"][:2])


def test_cli_combines_files_and_stdin_dash():
    first = f'1.1.1.1 - - {T} "GET /x HTTP/1.1" 200 10\nbroken\n'
    second = f'2.2.2.2 - - {T} "GET /y HTTP/1.1" 404 5\n1.1.1.1 - - {T} "GET /x HTTP/1.1" 200 1\n'
    with tempfile.TemporaryDirectory() as folder:
        a = _write(folder, "a.log", first)
        b = _write(folder, "b.log", second)
        proc = _run(["--json", a, b])
        piped = _run(["--json", "-"], stdin=first + second)
    assert proc.returncode == 0, proc.stderr
    expected = {
        "requests": 3,
        "malformed": 1,
        "bytes": 16,
        "hosts": 2,
        "status": {"200": 2, "404": 1},
        "top_paths": [{"path": "/x", "count": 2}, {"path": "/y", "count": 1}],
    }
    assert json.loads(proc.stdout) == expected
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout) == expected


def test_cli_empty_input_and_undecodable_bytes():
    proc = _run([], stdin="")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "requests: 0",
        "malformed: 0",
        "bytes: 0",
        "hosts: 0",
        "top paths:",
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bin.log")
        with open(path, "wb") as handle:
            handle.write(b"9.9.9.9 - - " + T.encode() + b' "GET /ok HTTP/1.1" 200 7\n\xff\xfe\n')
        proc = _run(["--json", path])
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert (summary["requests"], summary["malformed"], summary["bytes"]) == (1, 1, 7)


def test_cli_missing_file_fails_cleanly():
    with tempfile.TemporaryDirectory() as folder:
        good = _write(folder, "good.log", LOG)
        proc = _run([good, os.path.join(folder, "missing.log")])
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.lstrip().startswith("error:")
