"""``cadillac memory`` and ``cadillac budgets`` given what a new user types (issue 11).

Each test is named after the item of the issue it covers. A bad command line is one line
on stderr and a non-zero status, and leaves the home as it was; a result that stands is
reported as it stands.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from filelock import FileLock

import memory.jsonl
from tests.support import one_error_line, run

ROOT = Path(__file__).resolve().parents[3]


def add(capsys, trigger: str, fix: str = "the fix", *extra: str) -> tuple[int, str, str]:
    argv = ("memory", "add", "--type", "error_pattern", "--trigger", trigger, "--fix", fix)
    return run(capsys, *argv, *extra)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b""
        for p in sorted(folder.rglob("*"))
    }


# ---------------------------------------------------------------- 1: blank trigger or fix
@pytest.mark.parametrize(
    ("trigger", "fix", "flag"),
    [
        ("", "the fix", "--trigger"),
        ("   ", "the fix", "--trigger"),
        ("\t\n", "the fix", "--trigger"),
        ("a real trigger", "", "--fix"),
        ("a real trigger", "  ", "--fix"),
    ],
)
def test_1_a_blank_trigger_or_fix_is_refused_in_one_line(capsys, home, trigger, fix, flag):
    add(capsys, "a lesson already stored about flask")
    before = snapshot(home)
    code, out, err = add(capsys, trigger, fix)
    assert code == 2 and out == ""
    assert one_error_line(err) and f"argument {flag}: must not be blank" in err, err
    assert snapshot(home) == before


# ---------------------------------------------------------------- 2: text that is not UTF-8
@pytest.mark.parametrize(
    ("flag", "argv"),
    [
        ("--trigger", ("--trigger", "caf\udce9 x", "--fix", "f")),
        ("--fix", ("--trigger", "t", "--fix", "caf\udce9 x")),
        ("--tags", ("--trigger", "t", "--fix", "f", "--tags", "py,\udcff")),
        ("--source-task", ("--trigger", "t", "--fix", "f", "--source-task", "\udcff")),
    ],
)
def test_2_text_that_is_not_utf8_is_refused_naming_the_argument(capsys, home, flag, argv):
    """Python hands argv bytes that are not UTF-8 over as lone surrogates ('\\udce9')."""
    before = snapshot(home)
    code, out, err = run(capsys, "memory", "add", "--type", "dependency", *argv)
    assert code == 2 and out == ""
    assert one_error_line(err) and f"argument {flag}: " in err and "is not valid UTF-8" in err
    assert snapshot(home) == before


@pytest.mark.parametrize(
    "argv",
    [
        ("memory", "recall", "caf\udce9", "--json"),
        ("memory", "list", "--tag", "\udcff"),
        ("budgets", "--tags", "py,\udcff"),
    ],
)
def test_2_read_commands_refuse_text_that_is_not_utf8_too(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and one_error_line(err) and "is not valid UTF-8" in err


def test_2_a_real_non_utf8_argv_byte_is_one_line(home):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CADILLAC_HOME": str(home)}
    argv = [sys.executable, "-m", "orchestrator", "memory", "add", "--type", "dependency"]
    argv += ["--trigger", os.fsdecode(b"caf\xe9 x"), "--fix", "f"]
    done = subprocess.run(argv, env=env, capture_output=True, timeout=120)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.startswith(b"cadillac: error: argument --trigger: ")
    assert b"'caf\\xe9 x' is not valid UTF-8 text" in done.stderr
    assert done.stderr.count(b"\n") == 1
    assert list(home.iterdir()) == []


# ---------------------------------------------------------------- 3: a huge number in a row
def test_3_a_budget_row_with_a_huge_rounds_is_skipped_with_a_warning(capsys, home):
    path = home / "phase_budgets.jsonl"
    rows = [{"phase": "build", "rounds": r, "tags": ["python"]} for r in (40, 50, 60)]
    lines = [json.dumps(row) for row in rows]
    lines += ['{"phase": "build", "rounds": 1' + "0" * 400 + ', "tags": ["python"]}']
    lines += [json.dumps({"phase": "build", "rounds": 10**300, "tags": ["python"]})]
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "budgets", "--tags", "python", "--json")
    assert code == 0, err
    build = json.loads(out)["build"]
    assert build["samples"] == 3 and build["p90"] == 58.0
    assert f"cadillac: warning: {path}:4: invalid line skipped (rounds: " in err
    assert f"cadillac: warning: {path}:5: invalid line skipped (rounds: " in err


@pytest.mark.parametrize(
    "argv", [("memory", "list", "--json"), ("memory", "recall", "flask app", "--json")]
)
def test_3_a_lesson_with_a_huge_use_count_is_skipped_with_a_warning(capsys, home, argv):
    path = home / "memory.jsonl"
    good = {"id": "aaaaaaaa", "type": "dependency", "trigger": "flask pin", "fix": "pin it"}
    bad = '{"id": "bbbbbbbb", "type": "dependency", "trigger": "flask x", "fix": "y", "used": 1'
    path.write_text(json.dumps(good) + "\n" + bad + "0" * 400 + "}\n")
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert len(json.loads(out)) == 1
    assert f"cadillac: warning: {path}:2: invalid line skipped (used: " in err


@pytest.mark.parametrize("ts", ["1e400", "-1e400", "NaN"])
def test_3_a_lesson_with_an_infinite_time_is_skipped_and_kept_aside(capsys, home, ts):
    """Read as inf or nan, such a time would be written back as null: a line nobody reads."""
    path = home / "memory.jsonl"
    good = {"id": "aaaaaaaa", "type": "dependency", "trigger": "flask pin", "fix": "pin it"}
    bad = '{"id": "bbbbbbbb", "type": "dependency", "trigger": "x", "fix": "y", "ts": ' + ts + "}"
    path.write_text(json.dumps(good) + "\n" + bad + "\n")
    code, out, err = run(capsys, "memory", "forget", "aaaaaaaa")  # a rewrite
    assert code == 0 and f"{path}:2: invalid line skipped (ts: " in err
    assert path.read_text() == ""
    rejected = json.loads((home / "memory.jsonl.rejected.jsonl").read_text())
    assert rejected["raw"] == bad


# ---------------------------------------------------------------- 7: a Ctrl-C just after
def _interrupt_after(monkeypatch, name: str) -> None:
    """A Ctrl-C the moment ``memory.jsonl.<name>`` returns (a write that has happened)."""
    real = getattr(memory.jsonl, name)

    def then_ctrl_c(*args, **kwargs):
        result = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return result

    monkeypatch.setattr(memory.jsonl, name, then_ctrl_c)


def _interrupt_after_rename(monkeypatch) -> None:
    """A Ctrl-C the moment a rewrite's fresh file has been renamed over the old one."""
    real = memory.jsonl.replacing

    @contextlib.contextmanager
    def then_ctrl_c(*args, **kwargs):
        with real(*args, **kwargs) as fh:
            yield fh
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(memory.jsonl, "replacing", then_ctrl_c)


def test_7_a_ctrl_c_just_after_forget_rewrote_the_file_reports_the_forget(
    capsys, home, monkeypatch
):
    add(capsys, "a lesson about interrupted forgets", "f", "--json")
    lesson_id = json.loads((home / "memory.jsonl").read_text())["id"]
    _interrupt_after_rename(monkeypatch)  # the lesson is gone
    code, out, err = run(capsys, "memory", "forget", lesson_id)
    assert (home / "memory.jsonl").read_text() == ""
    assert code == 0 and out.startswith(f"forgot {lesson_id}")
    assert err == "cadillac: warning: interrupted too late: the lesson is forgotten\n"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_7_a_ctrl_c_just_after_add_wrote_the_line_reports_the_add(capsys, home, monkeypatch):
    _interrupt_after(monkeypatch, "_write_all")
    code, out, err = add(capsys, "a lesson about interrupted adds")
    stored = (home / "memory.jsonl").read_text().splitlines()
    assert len(stored) == 1
    assert code == 0 and out.startswith(f"added {json.loads(stored[0])['id']}")
    assert err == "cadillac: warning: interrupted too late: the lesson is stored\n"


def test_7_a_ctrl_c_while_another_writer_holds_the_lock_stops_with_nothing_changed(capsys, home):
    add(capsys, "a lesson about locks")
    lesson_id = json.loads((home / "memory.jsonl").read_text())["id"]
    before = snapshot(home)
    held, done = threading.Event(), threading.Event()

    def another_writer():
        with FileLock(str(home / "memory.jsonl.lock")):
            held.set()
            done.wait(30)

    writer = threading.Thread(target=another_writer)
    writer.start()
    held.wait(30)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        code, out, err = run(capsys, "memory", "forget", lesson_id)
    finally:
        timer.join()
        done.set()
        writer.join()
    assert code == 130 and out == "" and err == "cadillac: interrupted\n"
    assert snapshot(home) == before


# ---------------------------------------------------------------- 10: create nothing
@pytest.mark.parametrize(
    "argv",
    [
        ("memory", "forget", "x"),
        ("memory", "list"),
        ("memory", "show", "x"),
        ("memory", "recall", "a flask app"),
        ("memory", "stats"),
        ("budgets",),
        ("memory", "add", "--type", "dependency", "--trigger", "", "--fix", "f"),
    ],
)
def test_10_a_command_that_reads_or_fails_creates_no_home(capsys, tmp_path, argv):
    missing = tmp_path / "missing" / "home"
    code, out, err = run(capsys, *argv, "--home", str(missing))
    assert code != 0 and out == "" and one_error_line(err)
    assert not (tmp_path / "missing").exists()


def test_10_forget_in_a_missing_home_says_the_home_does_not_exist(capsys, tmp_path):
    missing = tmp_path / "nohome"
    code, _, err = run(capsys, "memory", "forget", "x", "--home", str(missing))
    assert code == 1
    assert err == f"cadillac: error: home {missing} does not exist (set --home or CADILLAC_HOME)\n"


# ---------------------------------------------------------------- 15: what a merge dropped
def test_15_a_merge_says_which_fix_it_kept_and_which_it_dropped(capsys, home):
    code, out, _ = add(
        capsys, "aiosqlite connection not closed on shutdown", "close it in lifespan"
    )
    stored_id = out.split()[1]
    code, out, err = add(capsys, "aiosqlite connection not closed at shutdown", "use async with")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"merged into {stored_id}: aiosqlite connection not closed on shutdown"
    assert "kept its fix: close it in lifespan" in out
    assert "dropped your --fix: use async with" in out
    assert f"cadillac memory forget {stored_id}" in out  # how to store the new wording instead
    stored = [json.loads(line) for line in (home / "memory.jsonl").read_text().splitlines()]
    assert [x["fix"] for x in stored] == ["close it in lifespan"]

    code, out, _ = add(
        capsys, "aiosqlite connection not closed at shutdown", "use async with", "--json"
    )
    made = json.loads(out)
    assert made["merged"] is True
    assert made["dropped"] == {
        "trigger": "aiosqlite connection not closed at shutdown",
        "fix": "use async with",
    }


def test_15_a_merge_that_dropped_nothing_says_nothing_was_dropped(capsys):
    add(capsys, "pytest fixture scope wrong for database", "use scope=function")
    code, out, _ = add(capsys, "pytest fixture scope wrong for database", "use scope=function")
    assert code == 0 and out.startswith("merged into ") and "dropped" not in out
    code, out, _ = add(
        capsys, "pytest fixture scope wrong for database", "use scope=function", "--json"
    )
    assert json.loads(out)["dropped"] == {}


# ---------------------------------------------------------------- 21: an option before the command
@pytest.mark.parametrize(
    ("argv", "example"),
    [
        (("memory", "--limit", "2"), "cadillac memory list --limit 2"),
        (("memory", "--json"), "cadillac memory list --json"),
        (("memory", "--home", ".", "--type", "dependency"), "cadillac memory list --type"),
    ],
)
def test_21_an_option_before_the_memory_command_says_to_name_the_command(capsys, argv, example):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and one_error_line(err)
    assert "memory needs a command before its options: list, show, add," in err, err
    assert example in err


def test_21_an_unknown_memory_command_still_lists_the_commands(capsys):
    code, _, err = run(capsys, "memory", "frobnicate")
    assert code == 2 and one_error_line(err) and "invalid choice: 'frobnicate'" in err


# ---------------------------------------------------------------- 22: name the home read
@pytest.mark.parametrize(
    "argv",
    [
        ("memory", "list"),
        ("memory", "list", "--json"),
        ("memory",),
        ("memory", "stats"),
        ("memory", "stats", "--json"),
        ("memory", "recall", "a flask app"),
        ("memory", "recall", "a flask app", "--json"),
    ],
)
def test_22_reading_a_home_without_memory_names_the_home(capsys, home, argv):
    code, out, err = run(capsys, *argv)
    assert code == 0
    assert err == (
        f"cadillac: warning: {home} has no memory.jsonl: no lessons yet"
        " (builds and 'cadillac memory add' write it)\n"
    )
    if "--json" in argv:
        json.loads(out)  # standard output stays JSON
    assert list(home.iterdir()) == []


def test_22_show_and_forget_without_memory_name_the_home(capsys, home):
    for action in ("show", "forget"):
        code, out, err = run(capsys, "memory", action, "abc")
        assert code == 1 and out == ""
        assert err == f"cadillac: error: no lesson with id 'abc': {home} has no memory.jsonl\n"


def test_22_tables_name_the_file_they_read(capsys, home):
    add(capsys, "a flask lesson for the tables")
    for argv in (("memory", "list"), ("memory", "recall", "a flask app"), ("memory", "stats")):
        code, out, err = run(capsys, *argv)
        assert code == 0 and err == ""
        assert str(home / "memory.jsonl") in out.replace("\n", "")


def test_22_budgets_without_history_name_the_home(capsys, home):
    code, out, err = run(capsys, "budgets", "--tags", "python")
    assert code == 0 and "plan" in out
    assert err == (
        f"cadillac: warning: {home} has no phase_budgets.jsonl: every phase gets its default\n"
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("runs", "--json"), "runs needs a command before its options: list, show, prune (e.g."),
        (("matrix", "--repeats", "2"), "matrix needs a command before its options: run (e.g."),
        (("schedule", "--at", "03:00"), "schedule needs a command before its options: print,"),
        (("--json",), "cadillac needs a command before its options: memory, budgets, skills,"),
    ],
)  # fmt: skip
def test_21_every_command_group_says_to_name_its_command_first(capsys, argv, says):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and one_error_line(err) and says in err, err
