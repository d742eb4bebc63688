"""Shared fixtures: every test runs with its home (and current directory) in tmp_path."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS_LESSONS = FIXTURES / "cadillac_corpus" / "lessons.jsonl"
CORPUS_BUDGETS = FIXTURES / "cadillac_corpus" / "budget_history.jsonl"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh CADILLAC_HOME for each test; the tests write nowhere else.

    Temporary files (worktrees of improve trials, sandbox scratch folders) go under
    tmp_path too, in this process and in the subprocesses it starts.
    """
    home = tmp_path / "home"
    home.mkdir()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("CADILLAC_HOME", str(home))
    # the global scope of notes and skills (~/.config/cadillac) is under tmp_path too
    monkeypatch.setenv("CADILLAC_GLOBAL_DIR", str(tmp_path / "global"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def corpus_home(home: Path) -> Path:
    """The home holding copies of the earlier system's real memory and budget files."""
    (home / "memory.jsonl").write_bytes(CORPUS_LESSONS.read_bytes())
    (home / "phase_budgets.jsonl").write_bytes(CORPUS_BUDGETS.read_bytes())
    return home
