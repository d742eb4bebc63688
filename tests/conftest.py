"""Shared fixtures: every test runs with its home (and current directory) in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS_LESSONS = FIXTURES / "cadillac_corpus" / "lessons.jsonl"
CORPUS_BUDGETS = FIXTURES / "cadillac_corpus" / "budget_history.jsonl"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh CADILLAC_HOME for each test; the tests write nowhere else."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("CADILLAC_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def corpus_home(home: Path) -> Path:
    """The home holding copies of the earlier system's real memory and budget files."""
    (home / "memory.jsonl").write_bytes(CORPUS_LESSONS.read_bytes())
    (home / "phase_budgets.jsonl").write_bytes(CORPUS_BUDGETS.read_bytes())
    return home
