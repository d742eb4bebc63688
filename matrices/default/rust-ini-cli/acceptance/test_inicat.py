"""Hidden checks for rust-ini-cli: the binary `cargo build --release` makes, run on INI files."""

import json
import os
import subprocess
import tempfile

ROOT = os.getcwd()
BUILT = {}
SAMPLE = """; a comment
# another comment

[server]
host = example.org
port=8080
  motd = "  hello, world  "
url = http://x/?a=1&b=2 ; not a comment

[paths]
root = /srv
empty =

[server]
port = 9090
"""


def _tool():
    """The binary, built once outside the project (the build's error fails every check)."""
    if "path" not in BUILT:
        target = tempfile.mkdtemp()
        done = subprocess.run(
            ["cargo", "build", "--offline", "--release", "--target-dir", target],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=55,
        )
        path = os.path.join(target, "release", "inicat")
        BUILT["path"] = path if done.returncode == 0 and os.path.isfile(path) else None
        BUILT["error"] = done.stderr[-500:] or "no target/release/inicat"
    assert BUILT["path"], f"cargo build failed: {BUILT['error']}"
    return BUILT["path"]


def _run(args):
    return subprocess.run([_tool(), *args], capture_output=True, text=True, timeout=10, cwd=ROOT)


def _on(text, *args):
    """Run `inicat COMMAND FILE ARGS...` on a file holding `text`; (process, file's path)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "conf.ini")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return _run([args[0], path, *args[1:]]), path


def test_sections_in_order_and_merged():
    proc, _ = _on(SAMPLE, "sections")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["server", "paths"]


def test_keys_keep_their_first_place():
    proc, _ = _on(SAMPLE, "keys", "server")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["host", "port", "motd", "url"]


def test_get_trims_unquotes_and_keeps_the_last_value():
    assert _on(SAMPLE, "get", "server", "host")[0].stdout == "example.org\n"
    assert _on(SAMPLE, "get", "server", "port")[0].stdout == "9090\n"
    assert _on(SAMPLE, "get", "server", "motd")[0].stdout == "  hello, world  \n"
    proc, _ = _on(SAMPLE, "get", "server", "url")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "http://x/?a=1&b=2 ; not a comment\n"
    assert _on(SAMPLE, "get", "paths", "empty")[0].stdout == "\n"


def test_what_is_not_there_exits_1():
    for args in (("get", "server", "nope"), ("get", "nope", "host"), ("keys", "nope")):
        proc, _ = _on(SAMPLE, *args)
        assert proc.returncode == 1, args
        assert proc.stdout == "", args


def test_json_holds_everything_in_order():
    proc, _ = _on(SAMPLE, "json")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.strip().splitlines()) == 1
    data = json.loads(proc.stdout, object_pairs_hook=list)
    assert data == [
        ("server", [("host", "example.org"), ("port", "9090"), ("motd", "  hello, world  "),
                    ("url", "http://x/?a=1&b=2 ; not a comment")]),
        ("paths", [("root", "/srv"), ("empty", "")]),
    ]  # fmt: skip


def test_json_escapes_what_json_requires():
    text = '[s]\nquote = say "hi"\nslash = C:\\dir\\file\ntab = a\tb\nword = naïve\n'
    proc, _ = _on(text, "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "s": {"quote": 'say "hi"', "slash": "C:\\dir\\file", "tab": "a\tb", "word": "naïve"}
    }


def test_parse_errors_name_the_line():
    cases = [
        ("[a]\nx = 1\njust words\n", 3),
        ("key = before any section\n[a]\n", 1),
        ("[a]\n\n[]\n", 3),
        ("[a]\n[open\n", 2),
        ("[a]\n = no key\n", 2),
    ]
    for text, line in cases:
        proc, path = _on(text, "sections")
        assert proc.returncode == 2, text
        assert proc.stdout == "", text
        assert proc.stderr.startswith(f"inicat: {path}:{line}:"), (text, proc.stderr)


def test_an_unreadable_file_and_bad_usage_exit_2():
    proc = _run(["sections", os.path.join(tempfile.gettempdir(), "no-such-dir", "x.ini")])
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("inicat: ")
    for args in ([], ["frobnicate", "x.ini"], ["get", "x.ini", "only-section"]):
        proc = _run(args)
        assert proc.returncode == 2, args
        assert proc.stdout == "" and proc.stderr.strip(), args
