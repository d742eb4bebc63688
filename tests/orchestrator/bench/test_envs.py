"""A scored build's installed environments are removed, and removing them never follows
what the model left there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.bench.matrix import run_matrix
from orchestrator.home import Home
from orchestrator.llm.client import LLMConfig
from orchestrator.loop.agent import BuildConfig
from orchestrator.sandbox.installs import remove_envs

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

SMALL = Path(__file__).resolve().parents[2] / "fixtures" / "matrix_small"


def build(policy: str) -> BuildConfig:
    return BuildConfig(llm=LLMConfig(model=f"scripted:tests.fakes.improve_policies:{policy}"))


def test_a_scored_build_keeps_its_sources_and_loses_its_environments(home):
    results = run_matrix(Home(home), build("sentence_builder"), SMALL, split="holdout")
    (run,) = results.runs
    assert run.verdict == "scored" and run.score == 1.0
    folder = Path(home) / "runs" / run.run_id
    assert (folder / "workspace" / "wordfreq.py").is_file()
    assert (folder / "scoring" / "project" / "wordfreq.py").is_file()
    assert not (folder / "workspace" / ".venv").exists()
    assert not (folder / "scoring" / "project" / ".venv").exists()

    kept = run_matrix(Home(home), build("sentence_builder"), SMALL, split="holdout", keep_envs=True)
    folder = Path(home) / "runs" / kept.runs[0].run_id
    assert (folder / "workspace" / ".venv" / "bin" / "python").exists()
    assert (folder / "scoring" / "project" / ".venv" / "bin" / "python").exists()


def test_removing_a_planted_environment_never_reaches_the_host(home, tmp_path, monkeypatch):
    precious = tmp_path / "precious"
    (precious / "bin").mkdir(parents=True)
    (precious / "keep.txt").write_text("the user's\n")
    monkeypatch.setenv("CADILLAC_TEST_PRECIOUS", str(precious))
    results = run_matrix(Home(home), build("env_planter"), SMALL, split="holdout")
    (run,) = results.runs
    workspace = Path(home) / "runs" / run.run_id / "workspace"
    assert run.reached_validate and run.verdict == "scored"
    assert (precious / "keep.txt").read_text() == "the user's\n" and (precious / "bin").is_dir()
    assert not os.path.lexists(workspace / ".venv")
    assert not os.path.lexists(workspace / "node_modules")
    assert (workspace / "wordfreq.py").is_file()


def test_remove_envs_unlinks_links_and_clears_locked_folders(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_text("x")
    root = tmp_path / "project"
    (root / "target" / "deep" / "er").mkdir(parents=True)
    (root / "target" / "deep" / "er" / "f").write_text("f")
    (root / "target" / "deep" / "out").symlink_to(outside)
    os.mkfifo(root / "target" / "deep" / "fifo")
    (root / "target" / "shut").mkdir()
    os.chmod(root / "target" / "shut", 0)
    os.chmod(root / "target" / "deep" / "er", 0o500)
    os.chmod(root / "target" / "deep", 0o500)
    (root / ".venv").symlink_to(outside)
    (root / ".gopath").write_text("not a folder")
    (root / "main.py").write_text("print(1)\n")
    assert remove_envs(root) == ""
    assert sorted(p.name for p in root.iterdir()) == ["main.py"]
    assert (outside / "x").read_text() == "x"
    assert remove_envs(root) == ""  # nothing there: nothing to do
