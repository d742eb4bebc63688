"""Issue 22 item 19: where the current folder, the home or a run id is not what a command
needs, it says what is wrong in one line (never a bare OS error, never "no run" for a run
that ``runs list`` shows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import one_error_line, run

WORDS = "scripted:tests.fakes.policies:last_user_words"
"""A model that never calls a tool: a build of it fails at plan, quickly."""


@pytest.mark.parametrize(
    "argv",
    [("runs", "list"), ("memory", "list"), ("build", "a tool", "--model", WORDS)],
    ids=["runs list", "memory list", "build"],
)
def test_19_a_deleted_current_folder_is_named_as_such(tmp_path, monkeypatch, capsys, argv):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.delenv("CADILLAC_HOME")  # the home is the current folder
    monkeypatch.chdir(gone)
    gone.rmdir()
    code, _, err = run(capsys, *argv)
    line = one_error_line(err)
    assert code == 1 and "current folder no longer exists" in line and "--home" in line


@pytest.mark.parametrize(
    "argv",
    [("runs", "list"), ("memory", "list"), ("build", "a tool", "--model", WORDS)],
    ids=["runs list", "memory list", "build"],
)
def test_19_a_home_that_is_a_dangling_link_says_where_it_points(tmp_path, capsys, argv):
    home = tmp_path / "link home"
    target = tmp_path / "moved away"
    home.symlink_to(target)
    code, _, err = run(capsys, *argv, "--home", str(home))
    line = one_error_line(err)
    assert code == 1 and f"is a link to {target}, which does not exist" in line
    assert "File exists" not in line
    assert home.is_symlink() and not target.exists()  # nothing made on either side


def other_runs(home: Path) -> dict[str, Path]:
    """A matrix, an improve and a nightly run's folders, as their commands leave them."""
    runs = home / "runs"
    found = {
        "matrix": runs / "matrix-20200101-000000-aaaaaa",
        "improve": runs / "improve-20200101-000000-bbbbbb",
        "nightly": runs / "nightly-2020-01-02",
    }
    for folder in found.values():
        folder.mkdir(parents=True)
    return found


@pytest.mark.parametrize("kind", ["matrix", "improve", "nightly"])
def test_19_resume_and_iterate_of_another_kinds_run_name_its_kind(home, capsys, kind):
    run_id = other_runs(home)[kind].name
    said = f"{run_id} is {'an' if kind == 'improve' else 'a'} {kind} run, not a build"
    for argv in (
        ("build", "--resume", run_id, "--model", WORDS),
        ("iterate", run_id, "add a flag", "--model", WORDS),
    ):
        code, _, err = run(capsys, *argv)
        line = one_error_line(err)
        assert code == 1 and said in line, line
        assert f"cadillac runs show {run_id}" in line and "no run" not in line


def test_19_an_id_that_names_no_run_still_says_no_run(home, capsys):
    other_runs(home)
    (home / "runs" / "nightly-cron.log").write_text("a file, not a run\n")
    for run_id in ("matrix-20990101-000000-ffffff", "nightly-cron.log", "matrix-"):
        code, _, err = run(capsys, "build", "--resume", run_id, "--model", WORDS)
        assert code == 1 and f"no run {run_id!r}" in one_error_line(err)


def test_19_a_builds_id_still_resumes(home, capsys):
    code, out, _ = run(capsys, "build", "a tiny word counter", "--model", WORDS, "--json")
    run_id = json.loads(out)["run_id"]
    code, out, _ = run(capsys, "build", "--resume", run_id, "--model", WORDS, "--json")
    assert code == 1 and json.loads(out)["status"] == "failed"
