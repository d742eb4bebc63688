"""``cadillac memory``: which scope a note command acts on, and lessons named by id prefix.

Without ``--global``, ``forget`` and ``edit`` touch the home scope only (issue 22 item 3);
``show``, ``forget`` and ``restore`` take a lesson's id or a unique prefix of it, in any
case, as git takes commits, and say where a merged-away or retired lesson went.
"""

from __future__ import annotations

from pathlib import Path

from memory import Lesson, MemoryStore
from tests.orchestrator.cli.test_bad_input_memory import snapshot
from tests.support import one_error_line, run


def _global_note(capsys, home: Path, name: str = "style") -> Path:
    code, _, _ = run(capsys, "memory", "remember", "tabs, never spaces", "--name", name, "--global")
    assert code == 0
    (home / "notes").mkdir(exist_ok=True)
    return home.parent / "global" / "notes" / f"{name}.md"


def test_forget_without_global_leaves_the_global_note_and_says_so(capsys, home):
    note = _global_note(capsys, home)
    before = snapshot(home.parent)
    for argv in (("forget", "style"), ("forget", "style", "--note")):
        code, out, err = run(capsys, "memory", *argv)
        line = one_error_line(err)
        assert code == 1 and out == "", argv
        assert "no note named 'style' in the home scope" in line and "with --global" in line
    assert note.is_file() and snapshot(home.parent) == before
    code, out, _ = run(capsys, "memory", "forget", "style", "--global")
    assert code == 0 and "global scope" in out and not note.exists()


def test_edit_without_global_leaves_the_global_note_and_says_so(
    capsys, home, tmp_path, monkeypatch
):
    note = _global_note(capsys, home)
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/tabs/spaces/' \"$1\"\n")
    editor.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(editor))
    code, out, err = run(capsys, "memory", "edit", "style")
    line = one_error_line(err)
    assert code == 1 and "in the home scope" in line and "edit it with --global" in line
    assert "tabs" in note.read_text()
    code, out, _ = run(capsys, "memory", "edit", "style", "--global")
    assert code == 0 and out == "saved note style (global scope)\n"
    assert "spaces" in note.read_text()


def _lessons(home: Path, *ids: str) -> None:
    lessons = [
        Lesson(id=i, type="error_pattern", trigger=f"trigger number {n}", fix=f"fix {n}")
        for n, i in enumerate(ids)
    ]
    MemoryStore(home / "memory.jsonl").put_many(lessons)


def test_a_lesson_is_named_by_a_unique_prefix_in_any_case(capsys, home):
    _lessons(home, "abc12345", "abd67890", "ffff0000")
    code, out, err = run(capsys, "memory", "show", "ABC", "--json")
    assert code == 0 and '"id": "abc12345"' in out, err
    code, out, err = run(capsys, "memory", "show", "ab")
    line = one_error_line(err)
    assert code == 2 and "ambiguous" in line and "abc12345" in line and "abd67890" in line
    code, out, err = run(capsys, "memory", "forget", "FfF")
    assert code == 0 and out.startswith("forgot ffff0000: "), err
    code, out, err = run(capsys, "memory", "forget", "ab")
    assert code == 2 and "ambiguous" in one_error_line(err)
    assert [x.id for x in MemoryStore(home / "memory.jsonl").all()] == ["abc12345", "abd67890"]


def test_restore_takes_a_prefix_of_a_retired_lesson(capsys, home):
    _lessons(home, "abc12345", "abd67890")
    MemoryStore(home / "memory.jsonl").retire(["abc12345", "abd67890"], "by hand")
    code, _, err = run(capsys, "memory", "restore", "a")
    line = one_error_line(err)
    assert code == 2 and "abc12345" in line and "abd67890" in line
    code, out, err = run(capsys, "memory", "restore", "ABD6")
    assert code == 0 and out.startswith("restored abd67890"), err


def test_show_of_a_merged_or_retired_lesson_says_where_it_went(capsys, home):
    store = MemoryStore(home / "memory.jsonl")
    same = {"type": "error_pattern", "trigger": "flask route returns 500", "fix": "check it"}
    store.put_many([Lesson(id="aaaa1111", **same), Lesson(id="bbbb2222", **same)])
    report = store.consolidate()
    assert report.merged == [("aaaa1111", ["bbbb2222"])]
    code, out, err = run(capsys, "memory", "show", "bbbb2222")
    line = one_error_line(err)
    assert code == 1 and "lesson bbbb2222 was merged into aaaa1111" in line, line
    assert "cadillac memory show aaaa1111" in line
    store.retire(["aaaa1111"], "by hand")
    code, out, err = run(capsys, "memory", "show", "aaaa")
    line = one_error_line(err)
    assert code == 1 and "lesson aaaa1111 is retired" in line
    assert "cadillac memory restore aaaa1111" in line


def _teammates_export(tmp_path: Path, style: str = "two spaces") -> Path:
    """An export made elsewhere: a global note 'style' and a home note 'db'."""
    from memory.markdown import export_markdown
    from memory.notes import Notebook, new_note

    mate = tmp_path / "teammate"
    book = Notebook(mate / "notes", mate / "global-notes")
    for text, name, scope in ((style, "style", "global"), ("postgres 16", "db", "home")):
        note = new_note(text, name=name, scope=scope).model_copy(update={"created": 1.0})
        book.folder(scope).save(note.model_copy(update={"updated": 1.0}), touch=False)
    out = tmp_path / f"export-{len(style)}"
    export_markdown(MemoryStore(mate / "memory.jsonl"), book, out)
    return out


def test_import_puts_notes_in_the_home_scope_and_keeps_what_it_replaces(capsys, home, tmp_path):
    mine = _global_note(capsys, home)
    kept_global = mine.read_bytes()
    code, out, err = run(capsys, "memory", "import", str(_teammates_export(tmp_path)))
    assert code == 0 and err == "", err
    assert "notes 2 added, 0 replaced, 0 unchanged (into the home scope)" in out
    assert mine.read_bytes() == kept_global  # the importer's global note is untouched
    assert "two spaces" in (home / "notes" / "style.md").read_text()
    old_home = (home / "notes" / "style.md").read_bytes()

    code, out, err = run(capsys, "memory", "import", str(_teammates_export(tmp_path, "four")))
    assert code == 0 and err == "", err
    lines = out.splitlines()
    assert "notes 0 added, 1 replaced, 1 unchanged (into the home scope)" in lines[0]
    assert lines[1].startswith("  replaced note style (home scope): the old one is kept in ")
    copy = Path(lines[1].rsplit(" kept in ", 1)[1])
    assert copy.parent == home / "notes.replaced" and copy.read_bytes() == old_home
    assert "four" in (home / "notes" / "style.md").read_text()
    assert mine.read_bytes() == kept_global


def test_import_with_global_replaces_a_global_note_only_after_keeping_it(capsys, home, tmp_path):
    mine = _global_note(capsys, home)
    old = mine.read_bytes()
    code, out, err = run(capsys, "memory", "import", str(_teammates_export(tmp_path)), "--global")
    assert code == 0 and err == "", err
    assert "notes 1 added, 1 replaced, 0 unchanged (each into its exported scope)" in out
    line = out.splitlines()[1]
    assert line.startswith("  replaced note style (global scope): the old one is kept in ")
    copy = Path(line.rsplit(" kept in ", 1)[1])
    assert copy.parent == mine.parent.with_name("notes.replaced") and copy.read_bytes() == old
    assert "two spaces" in mine.read_text() and (home / "notes" / "db.md").is_file()


def test_import_of_an_export_with_a_name_in_both_scopes_takes_the_home_note(capsys, home, tmp_path):
    src = _teammates_export(tmp_path)
    (src / "notes" / "home" / "style.md").write_text(
        (src / "notes" / "global" / "style.md").read_text().replace("two spaces", "tabs")
    )
    code, out, err = run(capsys, "memory", "import", str(src))
    assert code == 0 and "notes 2 added" in out
    assert "notes/global/style.md: not imported" in err
    assert "tabs" in (home / "notes" / "style.md").read_text()


def test_import_names_each_lesson_it_replaces_and_keeps_the_old_one(capsys, home, tmp_path):
    import json

    _lessons(home, "abc12345")
    run(capsys, "memory", "export", "--markdown", str(tmp_path / "x"))
    path = tmp_path / "x" / "lessons" / "abc12345.md"
    path.write_text(path.read_text().replace("fix: fix 0", "fix: a better fix"))
    code, out, err = run(capsys, "memory", "import", str(tmp_path / "x"))
    assert code == 0 and "lessons 0 added, 1 replaced" in out, err
    assert "(into the home scope)" in out
    kept = home / "memory.jsonl.replaced.jsonl"
    assert f"replaced lesson(s) abc12345: the old ones are kept in {kept}" in out
    (old,) = [json.loads(line) for line in kept.read_text().splitlines()]
    assert old["id"] == "abc12345" and old["fix"] == "fix 0" and "replaced_at" in old
    assert MemoryStore(home / "memory.jsonl").get("abc12345").fix == "a better fix"
