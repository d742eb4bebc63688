"""Fixtures of the orchestrator tests: a throwaway git repository holding cadillac's code."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SMOKE = """from pathlib import Path


def test_the_builder_is_told_who_it_is():
    assert "You are the builder" in Path("phases/system.md").read_text()
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    """A git repository holding a copy of cadillac's code and a one-test suite."""
    return make_repo(tmp_path / "repo")


def make_repo(repo: Path) -> Path:
    """Make ``repo``: a git repository of cadillac's code and a one-test suite."""
    for part in ("orchestrator", "phases", "memory"):
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "examples" / "wordfreq").mkdir(parents=True)
    shutil.copy(ROOT / "examples/wordfreq/policy.py", repo / "examples/wordfreq/policy.py")
    (repo / "tests" / "fakes").mkdir(parents=True)
    for name in (
        "__init__.py",
        "fakes/__init__.py",
        "fakes/improve_policies.py",
        "fakes/policies.py",
    ):
        shutil.copy(ROOT / "tests" / name, repo / "tests" / name)
    (repo / "tests" / "test_smoke.py").write_text(SMOKE)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "cadillac")
    return repo
