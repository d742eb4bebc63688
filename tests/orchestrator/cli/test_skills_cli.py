"""``cadillac skills list|show|forget|path``, and what it says to bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memory.skills import Skill, SkillBook
from tests.support import one_error_line, run

BODY = "## When to use\nA Flask app.\n\n## Steps\n1. Write app.py.\n\n## Example\nx"


@pytest.fixture
def book(home: Path, tmp_path: Path) -> SkillBook:
    book = SkillBook(home / "skills", tmp_path / "global" / "skills")
    book.save(Skill(name="flask-app", description="Flask apps", tags=["flask"], body=BODY))
    book.save(
        Skill(
            name="flask-app", description="global flask", scope="global", tags=["flask"], body=BODY
        )
    )
    book.save(Skill(name="go-cli", description="Go CLIs", scope="global", tags=["go"], body=BODY))
    book.save(Skill(name="old", description="keeps failing", set_aside=True, tags=[], body=BODY))
    return book


def test_list_shows_both_scopes_with_shadowing(book, capsys):
    code, out, err = run(capsys, "skills", "list")
    assert code == 0 and err == ""
    assert "2 skill(s)" in out and "flask-app" in out and "go-cli" in out
    assert "global flask" not in out and "old" not in out
    code, bare, _ = run(capsys, "skills")
    assert code == 0 and bare == out


def test_list_all_global_and_json(book, capsys):
    code, out, _ = run(capsys, "skills", "list", "--all")
    assert code == 0 and "old (set aside)" in out
    code, out, _ = run(capsys, "skills", "list", "--global", "--json")
    rows = json.loads(out)
    assert [(r["name"], r["scope"]) for r in rows] == [
        ("flask-app", "global"),
        ("go-cli", "global"),
    ]
    assert rows[0]["description"] == "global flask" and rows[0]["path"].endswith("SKILL.md")
    assert {"uses", "passed", "failed", "confidence", "set_aside", "body"} <= rows[0].keys()


def test_show_prints_the_record_and_the_file(book, capsys):
    book.record_outcome(["flask-app"], passed=True)
    code, out, err = run(capsys, "skills", "show", "flask-app")
    assert code == 0 and err == ""
    assert "flask-app: home scope, in use" in out and "uses 1, passed 1, failed 0" in out
    assert "---\nname: flask-app\n" in out and "## Steps" in out
    code, out, _ = run(capsys, "skills", "show", "old", "--json")
    assert code == 0 and json.loads(out)["set_aside"] is True


def test_forget_takes_the_scope_it_is_told(book, capsys, home, tmp_path):
    code, out, _ = run(capsys, "skills", "forget", "flask-app")
    assert code == 0 and "forgot flask-app (home scope)" in out
    assert not (home / "skills" / "flask-app").exists()
    assert (tmp_path / "global" / "skills" / "flask-app" / "SKILL.md").is_file()
    code, out, err = run(capsys, "skills", "forget", "go-cli")
    assert code == 1 and out == "" and one_error_line(err)
    assert "it is a global skill: forget it with --global" in err
    code, out, _ = run(capsys, "skills", "forget", "go-cli", "--global")
    assert code == 0 and "forgot go-cli (global scope)" in out
    assert [s.name for s in book.all()] == ["flask-app"]


def test_path(capsys, home, tmp_path):
    code, out, _ = run(capsys, "skills", "path")
    assert code == 0
    assert out == f"home: {home / 'skills'}\nglobal: {tmp_path / 'global' / 'skills'}\n"


def test_an_empty_home_lists_nothing_and_a_missing_home_is_an_error(capsys, tmp_path):
    code, out, err = run(capsys, "skills", "list")
    assert code == 0 and "0 skill(s)" in out and err == ""
    code, out, err = run(capsys, "skills", "list", "--home", str(tmp_path / "nope"))
    assert code == 1 and one_error_line(err) and "does not exist" in err
    assert not (tmp_path / "nope").exists()


def test_a_skipped_file_is_a_warning(book, capsys, home, tmp_path):
    os.symlink(tmp_path / "global" / "skills" / "go-cli", home / "skills" / "linked")
    code, out, err = run(capsys, "skills", "list")
    assert code == 0 and "flask-app" in out
    assert err.startswith("cadillac: warning: skipped ") and "linked" in err


@pytest.mark.parametrize(
    ("argv", "said", "status"),
    [
        (("skills", "show", ""), "is empty: give a skill name", 2),
        (("skills", "forget", "  "), "is empty: give a skill name", 2),
        (("skills", "show", "../../etc"), "is not a skill name", 2),
        (("skills", "forget", "Flask App"), "is not a skill name", 2),
        (("skills", "show", "caf\udce9"), "is not a skill name", 2),
        (("skills", "show"), "the following arguments are required: name", 2),
        (("skills", "list", "--wide"), "unrecognized arguments", 2),
        (("skills", "--json"), "skills needs a command before its options", 2),
        (("skills", "show", "nope"), "no skill named 'nope'", 1),
        (("skills", "forget", "nope", "--global"), "no skill named 'nope' in the global scope", 1),
    ],
)
def test_bad_input_is_one_error_line(book, capsys, home, argv, said, status):
    before = sorted(str(p) for p in (home / "skills").rglob("*"))
    code, out, err = run(capsys, *argv)
    assert code == status and out == "" and one_error_line(err) and said in err, err
    assert sorted(str(p) for p in (home / "skills").rglob("*")) == before
