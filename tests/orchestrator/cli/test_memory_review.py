"""``cadillac memory review|accept|reject``: a person decides which notes a model
proposed reach later builds."""

from __future__ import annotations

import json

from memory.notes import Notebook, NoteSource, new_note
from orchestrator.home import Home
from tests.support import one_error_line, run


def _propose(home, name: str, scope: str = "home") -> None:
    h = Home(home)
    book = Notebook(h.notes_dir, h.global_notes_dir)
    note = new_note(
        f"Proposed text of {name}.",
        name=name,
        scope=scope,
        origin="build 20261203-a",
        source=NoteSource(run="20261203-a", phase="integrate", task="a wordfreq CLI"),
    )
    book.save(note)


def test_review_lists_proposed_notes_with_their_origin_and_accept_admits_one(capsys, home):
    run(capsys, "memory", "remember", "Use uv", "--name", "uv")
    _propose(home, "counts")
    code, out, _ = run(capsys, "memory", "review")
    assert code == 0 and out.startswith("1 proposed note(s)")
    assert "counts [note, home] from run 20261203-a, phase integrate, task 'a wordfreq CLI'" in out
    assert "| Proposed text of counts." in out

    code, out, _ = run(capsys, "memory", "notes")
    table, apart = out.split("proposed note(s), seen by no build until accepted:")
    assert "uv" in table and "counts" not in table and "counts (home)" in apart

    code, out, _ = run(capsys, "memory", "accept", "counts")
    assert code == 0 and out == "accepted note counts (home scope): builds see it from now on\n"
    code, out, _ = run(capsys, "memory", "review", "--json")
    assert json.loads(out) == []
    code, out, _ = run(capsys, "memory", "notes", "--json")
    assert {r["name"]: r["status"] for r in json.loads(out)} == {
        "uv": "accepted",
        "counts": "accepted",
    }


def test_reject_deletes_and_global_is_its_own_scope(capsys, home):
    _propose(home, "shared", scope="global")
    code, _, err = run(capsys, "memory", "reject", "shared")
    assert code == 1 and "no note named 'shared' in the home scope" in one_error_line(err)
    code, out, _ = run(capsys, "memory", "reject", "shared", "--global")
    assert code == 0 and out.startswith("rejected and deleted note shared (global scope)")
    assert not (home.parent / "global" / "notes" / "shared.md").exists()


def test_unknown_or_already_accepted_names_are_one_error_line(capsys, home):
    run(capsys, "memory", "remember", "Use uv", "--name", "uv")
    code, _, err = run(capsys, "memory", "accept", "nope")
    assert code == 1 and "no note named 'nope'" in one_error_line(err)
    code, _, err = run(capsys, "memory", "accept", "uv")
    assert code == 1 and "not proposed" in one_error_line(err)
    code, _, err = run(capsys, "memory", "accept", "../x")
    assert code == 2 and "is not valid" in err
