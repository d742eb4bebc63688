"""``cadillac memory remember|notes|show|forget|edit|export|import``: notes on the command line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memory import MemoryStore
from orchestrator.cli import notes as cli_notes
from tests.orchestrator.cli.test_bad_input_memory import add, snapshot
from tests.support import one_error_line, run


def _lesson_id(capsys) -> str:
    code, out, _ = add(capsys, "a flask route returns 500", "check the blueprint", "--json")
    assert code == 0
    return json.loads(out)["lesson"]["id"]


def test_the_clis_type_lists_are_the_models():
    from memory.notes import IMPORTANCE, NOTE_TYPES

    assert cli_notes.NOTE_TYPES == NOTE_TYPES and cli_notes.IMPORTANCE == IMPORTANCE


def test_remember_derives_a_name_pins_conventions_and_says_when_it_replaces(capsys, home):
    code, out, err = run(
        capsys, "memory", "remember", "Use uv for Python deps", "--type", "convention"
    )
    assert code == 0 and err == ""
    assert out == "saved note use-uv-for-python-deps (convention, home scope, pinned)\n"
    assert (home / "notes" / "use-uv-for-python-deps.md").is_file()
    code, out, _ = run(
        capsys, "memory", "remember", "Use pdm now", "--name", "use-uv-for-python-deps"
    )
    assert code == 0 and out.startswith("replaced note use-uv-for-python-deps (note, home scope)")
    code, out, _ = run(
        capsys, "memory", "remember", "I am Ann", "--name", "me", "--global", "--type",
        "identity", "--no-pin", "--importance", "high", "--description", "who I am", "--json",
    )  # fmt: skip
    made = json.loads(out)
    assert made["replaced"] is False and made["note"]["scope"] == "global"
    assert made["note"]["pinned"] is False and made["note"]["importance"] == "high"
    assert made["note"]["description"] == "who I am"
    assert (home.parent / "global" / "notes" / "me.md").is_file()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("remember", "x", "--name", "../etc"), "--name: note name '../etc' is not valid"),
        (("remember", "x", "--name", "a/b"), "is not valid"),
        (("remember", "   "), "must not be blank"),
        (("remember", "x", "--type", "fact"), "invalid choice: 'fact'"),
        (("remember", "x", "--pin", "--no-pin"), "not allowed with argument"),
        (("edit", "../x"), "is not valid"),
        (("export",), "--markdown"),
        (("import", ""), "is empty"),
    ],
)
def test_bad_note_commands_are_one_line_and_store_nothing(capsys, home, argv, says):
    before = snapshot(home)
    code, out, err = run(capsys, "memory", *argv)
    assert code == 2 and out == "" and one_error_line(err) and says in err, err
    assert snapshot(home) == before


def test_notes_lists_both_scopes_marks_the_shadowed_and_json(capsys, home):
    run(capsys, "memory", "remember", "global me", "--name", "me", "--global")
    run(capsys, "memory", "remember", "global only", "--name", "stack", "--global")
    run(capsys, "memory", "remember", "home me", "--name", "me")
    code, out, _ = run(capsys, "memory", "notes")
    assert code == 0 and out.startswith("2 note(s) in ")
    assert "global (shadowed)" in out and "stack" in out
    code, out, _ = run(capsys, "memory", "notes", "--json")
    rows = [(r["name"], r["scope"], r["shadowed"]) for r in json.loads(out)]
    assert rows == [("me", "home", False), ("stack", "global", False), ("me", "global", True)]
    code, out, _ = run(capsys, "memory", "notes", "--global", "--json")
    assert [r["name"] for r in json.loads(out)] == ["me", "stack"]


def test_notes_warns_about_a_broken_file_and_rebuilds_the_catalog(capsys, home):
    run(capsys, "memory", "remember", "kept", "--name", "kept")
    (home / "notes" / "broken.md").write_text("---\nname: [x\n---\n")
    (home / "notes" / "byhand.md").write_text("---\nname: byhand\ndescription: by hand\n---\n")
    code, out, err = run(capsys, "memory", "notes")
    assert code == 0 and "byhand" in out and "broken.md: invalid YAML" in err
    assert "**byhand**" in (home / "notes" / "MEMORY.md").read_text()


def test_show_shows_a_lesson_a_note_or_both_labelled(capsys, home):
    lesson = _lesson_id(capsys)
    run(capsys, "memory", "remember", "flask blueprints", "--name", "flask")
    code, out, _ = run(capsys, "memory", "show", "flask", "--json")
    assert code == 0 and json.loads(out)["body"] == "flask blueprints"
    code, out, _ = run(capsys, "memory", "show", lesson, "--json")
    assert json.loads(out)["id"] == lesson
    run(capsys, "memory", "remember", "same name as the lesson", "--name", lesson)
    code, out, _ = run(capsys, "memory", "show", lesson)
    assert code == 0 and f"lesson {lesson}:" in out and f"note {lesson} (home scope):" in out
    code, out, _ = run(capsys, "memory", "show", lesson, "--json")
    assert set(json.loads(out)) == {"lesson", "note"}


def test_forget_a_name_that_is_both_removes_the_lesson_and_names_the_kept_note(capsys, home):
    lesson = _lesson_id(capsys)
    run(capsys, "memory", "remember", "a note", "--name", lesson)
    code, out, _ = run(capsys, "memory", "forget", lesson)
    assert code == 0 and out.startswith(f"forgot {lesson}: ")
    assert f"kept note '{lesson}' (home scope)" in out
    assert f"cadillac memory forget {lesson} --note" in out
    assert MemoryStore(home / "memory.jsonl").get(lesson) is None
    code, out, _ = run(capsys, "memory", "forget", lesson)  # now only the note
    assert code == 0 and out.startswith(f"forgot note {lesson} (home scope)")
    assert not (home / "notes" / f"{lesson}.md").exists()


def test_forget_note_and_lesson_flags_and_the_global_scope(capsys, home):
    lesson = _lesson_id(capsys)
    run(capsys, "memory", "remember", "a note", "--name", lesson)
    run(capsys, "memory", "remember", "global", "--name", lesson, "--global")
    code, out, _ = run(capsys, "memory", "forget", lesson, "--note")
    assert code == 0 and "home scope" in out
    assert MemoryStore(home / "memory.jsonl").get(lesson) is not None
    code, out, _ = run(capsys, "memory", "forget", lesson, "--global")
    assert code == 0 and "global scope" in out
    code, out, err = run(capsys, "memory", "forget", lesson, "--note")
    assert code == 1 and one_error_line(err) and "no note named" in err
    code, out, err = run(capsys, "memory", "forget", "x", "--note", "--lesson")
    assert code == 2 and one_error_line(err)
    code, out, _ = run(capsys, "memory", "forget", lesson, "--lesson")
    assert code == 0 and out.startswith(f"forgot {lesson}")


def _editor(tmp_path: Path, script: str) -> str:
    path = tmp_path / "editor.sh"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return str(path)


def test_edit_replaces_the_note_with_the_edited_file(capsys, home, tmp_path, monkeypatch):
    run(capsys, "memory", "remember", "old body", "--name", "topic")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", _editor(tmp_path, "sed -i 's/old body/new body/' \"$1\""))
    code, out, err = run(capsys, "memory", "edit", "topic")
    assert code == 0 and out == "saved note topic (home scope)\n", err
    assert "new body" in (home / "notes" / "topic.md").read_text()
    assert not list((tmp_path / "tmp").glob("cadillac-note-*"))


def test_edit_renames_to_a_valid_new_name(capsys, home, tmp_path, monkeypatch):
    run(capsys, "memory", "remember", "body", "--name", "old")
    monkeypatch.setenv("VISUAL", _editor(tmp_path, "sed -i 's/^name: old$/name: new/' \"$1\""))
    code, out, _ = run(capsys, "memory", "edit", "old")
    assert code == 0 and "renamed from old" in out
    assert (home / "notes" / "new.md").exists() and not (home / "notes" / "old.md").exists()


@pytest.mark.parametrize(
    ("script", "says"),
    [
        ("printf -- '---\\nname: [broken\\n---\\n' > \"$1\"", "invalid YAML"),
        ("sed -i 's/^name: topic$/name: ..\\/evil/' \"$1\"", "is not valid"),
        ("sed -i 's/^type: note$/type: fact/' \"$1\"", "type 'fact'"),
        ("exit 3", "the editor exited with status 3"),
    ],
)
def test_a_bad_edit_keeps_the_note_and_the_attempt(
    capsys, home, tmp_path, monkeypatch, script, says
):
    run(capsys, "memory", "remember", "old body", "--name", "topic")
    before = snapshot(home)
    monkeypatch.setenv("VISUAL", _editor(tmp_path, script))
    code, out, err = run(capsys, "memory", "edit", "topic")
    assert code == 1 and one_error_line(err) and says in err and "unchanged" in err, err
    assert snapshot(home) == before
    kept = err.rsplit("your edit is in ", 1)[1].rstrip(")\n")
    assert os.path.isfile(kept)


def test_edit_of_a_missing_note_says_so(capsys, home):
    code, _, err = run(capsys, "memory", "edit", "nosuch")
    assert code == 1 and one_error_line(err) and "no note named 'nosuch'" in err


def test_export_and_import_print_one_line_of_counts(capsys, corpus_home, tmp_path):
    run(capsys, "memory", "remember", "use uv", "--name", "uv", "--type", "convention")
    code, out, _ = run(capsys, "memory", "export", "--markdown", str(tmp_path / "x"))
    assert code == 0 and out.startswith("exported 403 lesson(s), 1 home note(s), 0 global")
    fresh = tmp_path / "fresh"
    code, out, err = run(capsys, "memory", "import", str(tmp_path / "x"), "--home", str(fresh))
    assert code == 0 and err == "" and out.count("\n") == 1
    assert "lessons 403 added, 0 replaced, 0 unchanged; notes 1 added" in out
    code, out, _ = run(
        capsys, "memory", "import", str(tmp_path / "x"), "--home", str(fresh), "--json"
    )
    assert json.loads(out)["lessons"]["unchanged"] == 403


def test_export_into_a_busy_folder_and_import_of_a_non_export_are_one_line(capsys, home, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("mine")
    code, out, err = run(capsys, "memory", "export", "--markdown", str(busy))
    assert code == 1 and one_error_line(err) and "not empty and not an earlier export" in err
    before = snapshot(home)
    code, out, err = run(capsys, "memory", "import", str(busy))
    assert code == 1 and one_error_line(err) and "not a markdown export" in err
    code, out, err = run(capsys, "memory", "import", str(tmp_path / "missing"))
    assert code == 1 and one_error_line(err) and "is not a folder" in err
    assert snapshot(home) == before


def test_a_notes_folder_that_is_a_symlink_is_one_error_line(capsys, home, tmp_path):
    (tmp_path / "real").mkdir()
    (home / "notes").symlink_to(tmp_path / "real")
    for argv in (("notes",), ("remember", "x"), ("show", "x"), ("edit", "x")):
        code, _, err = run(capsys, "memory", *argv)
        assert code == 1 and one_error_line(err) and "is a symlink: refused" in err, argv
    assert list((tmp_path / "real").iterdir()) == []


def test_show_prints_times_as_dates_and_json_keeps_the_numbers(capsys, home):
    from datetime import datetime

    lesson = _lesson_id(capsys)
    run(capsys, "memory", "remember", "dates please", "--name", "dated")
    code, out, _ = run(capsys, "memory", "show", "dated", "--json")
    created = json.loads(out)["created"]
    assert isinstance(created, float)
    day = datetime.fromtimestamp(created).strftime("%Y-%m-%d")
    code, out, _ = run(capsys, "memory", "show", "dated")
    assert code == 0 and f"{created}" not in out
    rows = {row.split()[0]: row.split()[1:] for row in out.splitlines() if row.strip()}
    assert rows["created"][0] == day and rows["updated"][0] == day
    code, out, _ = run(capsys, "memory", "show", lesson)
    ts = json.loads(run(capsys, "memory", "show", lesson, "--json")[1])["ts"]
    rows = {row.split()[0]: row.split()[1:] for row in out.splitlines() if row.strip()}
    assert rows["ts"] == datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S").split()
    assert rows["last_used_ts"] == ["None"]
