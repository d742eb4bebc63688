"""A note file without frontmatter (plain markdown, written by hand) is read as a note."""

from __future__ import annotations

import os
from pathlib import Path

from memory.notes import Notebook
from tests.support import run


def test_a_plain_markdown_file_is_a_note_named_after_the_file(tmp_path: Path):
    folder = tmp_path / "notes"
    folder.mkdir()
    plain = folder / "deploy.md"
    plain.write_text("# Deploy with fly.io\n\nRun `fly deploy` from the repo root.\n")
    os.utime(plain, (1_700_000_000, 1_700_000_000))
    book = Notebook(folder, tmp_path / "global")
    (note,) = book.all()
    assert book.home.problems == []
    assert (note.name, note.type, note.scope) == ("deploy", "note", "home")
    assert note.description == "Deploy with fly.io"
    assert note.body.startswith("# Deploy with fly.io") and "fly deploy" in note.body
    assert note.created == note.updated == 1_700_000_000
    assert "**deploy** (note): Deploy with fly.io" in book.home.catalog()
    assert book.relevant("deploy the app to fly.io") == [note]


def test_the_cli_lists_and_shows_a_plain_note(capsys, home):
    (home / "notes").mkdir()
    (home / "notes" / "ports.md").write_text("The API listens on 8080.\n")
    code, out, err = run(capsys, "memory", "notes")
    assert code == 0 and err == "" and "ports" in out and "listens on 8080" in out
    code, out, err = run(capsys, "memory", "show", "ports")
    assert code == 0 and "The API listens on 8080." in out, err
