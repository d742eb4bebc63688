"""The workspace: file round trips, exact edits, listings, and paths that must not escape."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.sandbox.workspace import READ_CAP_BYTES, Workspace, WorkspaceError


@pytest.fixture
def ws(ws: Path) -> Workspace:
    return Workspace(ws)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret\n")
    return out


def test_root_is_created_and_resolved(tmp_path: Path):
    ws = Workspace(tmp_path / "a" / "b")
    assert ws.root == (tmp_path / "a" / "b").resolve()
    assert ws.root.is_dir()


def test_write_read_round_trip(ws: Workspace):
    msg = ws.write_file("src/app.py", "print('hi')\nprint('bye')\n")
    assert msg == "wrote src/app.py (25 bytes, 2 lines)"
    assert ws.read_file("src/app.py") == "print('hi')\nprint('bye')\n"
    assert (ws.root / "src" / "app.py").read_text() == "print('hi')\nprint('bye')\n"


def test_write_counts_last_line_without_newline(ws: Workspace):
    assert ws.write_file("a.txt", "one\ntwo") == "wrote a.txt (7 bytes, 2 lines)"
    assert ws.write_file("empty.txt", "") == "wrote empty.txt (0 bytes, 0 lines)"


def test_edit_replaces_the_one_match(ws: Workspace):
    ws.write_file("app.py", "x = 1\ny = 2\n")
    assert ws.edit_file("app.py", "y = 2\n", "y = 3\nz = 4\n") == (
        "edited app.py (replaced 1 lines with 2 lines)"
    )
    assert ws.read_file("app.py") == "x = 1\ny = 3\nz = 4\n"


def test_edit_with_no_match_says_zero_and_hints(ws: Workspace):
    ws.write_file("app.py", "def f():\n    return 1\n")
    with pytest.raises(WorkspaceError, match="found 0 times") as err:
        ws.edit_file("app.py", "return 2", "return 3")
    assert "read_file" in str(err.value)
    with pytest.raises(WorkspaceError, match="whitespace"):
        ws.edit_file("app.py", "  return 1  \n\n", "return 3")
    assert ws.read_file("app.py") == "def f():\n    return 1\n"


def test_edit_with_two_matches_says_two(ws: Workspace):
    ws.write_file("app.py", "a = 1\na = 1\n")
    with pytest.raises(WorkspaceError, match="found 2 times") as err:
        ws.edit_file("app.py", "a = 1", "a = 2")
    assert "surrounding lines" in str(err.value)
    assert ws.read_file("app.py") == "a = 1\na = 1\n"


def test_edit_needs_old_text_and_an_existing_file(ws: Workspace):
    ws.write_file("app.py", "a\n")
    with pytest.raises(WorkspaceError, match="write_file"):
        ws.edit_file("app.py", "", "b")
    with pytest.raises(WorkspaceError, match="no file"):
        ws.edit_file("missing.py", "a", "b")


def test_read_refuses_folders_missing_and_binary_files(ws: Workspace):
    ws.write_file("pkg/mod.py", "x\n")
    with pytest.raises(WorkspaceError, match="folder"):
        ws.read_file("pkg")
    with pytest.raises(WorkspaceError, match="no file"):
        ws.read_file("nope.py")
    (ws.root / "blob.bin").write_bytes(b"\x89PNG\r\n\x00\x00\xff\xfe")
    with pytest.raises(WorkspaceError, match="binary"):
        ws.read_file("blob.bin")


def test_read_caps_large_files_with_a_note(ws: Workspace):
    ws.write_file("big.txt", "a" + "é" * READ_CAP_BYTES)  # two bytes each: the cap splits one
    text = ws.read_file("big.txt")
    body, note = text.split("\n[... ")
    assert body == "a" + "é" * (READ_CAP_BYTES // 2 - 1)
    assert "cut at 100,000 of 200,001 bytes" in note


def test_list_files_is_recursive_and_relative(ws: Workspace):
    ws.write_file("b.py", "")
    ws.write_file("pkg/a.py", "")
    ws.write_file("pkg/sub/c.py", "")
    assert ws.list_files().splitlines() == ["b.py", "pkg/a.py", "pkg/sub/c.py"]
    assert ws.list_files("pkg/sub") == "pkg/sub/c.py"
    assert ws.list_files("b.py") == "b.py"
    (ws.root / "empty").mkdir()
    assert ws.list_files("empty") == "(no files under empty)"
    with pytest.raises(WorkspaceError, match="no folder"):
        ws.list_files("missing")


def test_list_files_caps_at_500(ws: Workspace):
    for i in range(510):
        (ws.root / f"f{i:03}.txt").touch()
    lines = ws.list_files().splitlines()
    assert len(lines) == 501
    assert lines[-1].startswith("[... 10 more files not shown")


def test_files_skips_tool_and_cache_folders(ws: Workspace):
    ws.write_file("app.py", "")
    ws.write_file("pkg/__pycache__/app.cpython-311.pyc", "")
    for skipped in (".venv/bin/python", ".git/HEAD", "node_modules/x/index.js", ".pytest_cache/v"):
        ws.write_file(skipped, "")
    ws.write_file("pkg/mod.py", "")
    assert ws.files() == ["app.py", "pkg/mod.py"]
    assert ws.list_files() == "app.py\npkg/mod.py"


@pytest.mark.parametrize(
    "path, why",
    [
        ("/etc/passwd", "absolute"),
        ("../x", r"'\.\.'"),
        ("a/../../x", r"'\.\.'"),
        ("a/..", r"'\.\.'"),
        ("", "empty"),
        ("   ", "empty"),
        ("a\0b", "NUL"),
    ],
)
def test_refused_paths(ws: Workspace, path: str, why: str):
    with pytest.raises(WorkspaceError, match=why):
        ws.resolve(path)
    with pytest.raises(WorkspaceError):
        ws.write_file(path, "x")


def test_symlink_to_a_file_outside_is_refused(ws: Workspace, outside: Path):
    (ws.root / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.read_file("link.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.write_file("link.txt", "overwritten")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.edit_file("link.txt", "top", "bottom")
    assert (outside / "secret.txt").read_text() == "top secret\n"


def test_symlinked_folder_leading_outside_is_refused(ws: Workspace, outside: Path):
    (ws.root / "data").symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError, match="outside"):
        ws.read_file("data/secret.txt")
    with pytest.raises(WorkspaceError, match="outside"):
        ws.write_file("data/new.txt", "x")  # not there yet: its parent's real path counts
    with pytest.raises(WorkspaceError, match="outside"):
        ws.write_file("data/deeper/new.txt", "x")
    with pytest.raises(WorkspaceError, match="outside"):
        ws.list_files("data")
    assert sorted(os.listdir(outside)) == ["secret.txt"]


def test_dangling_symlink_outside_is_refused(ws: Workspace, tmp_path: Path):
    (ws.root / "later.txt").symlink_to(tmp_path / "not-yet.txt")
    with pytest.raises(WorkspaceError, match="outside"):
        ws.write_file("later.txt", "x")
    assert not (tmp_path / "not-yet.txt").exists()


def test_symlinks_inside_the_workspace_are_fine(ws: Workspace):
    ws.write_file("real/a.txt", "a\n")
    (ws.root / "alias").symlink_to(ws.root / "real", target_is_directory=True)
    assert ws.read_file("alias/a.txt") == "a\n"
    assert ws.resolve("alias/a.txt") == ws.root / "real" / "a.txt"
    assert ws.resolve(".") == ws.root
