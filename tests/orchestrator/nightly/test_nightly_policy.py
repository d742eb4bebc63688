"""A nightly whose builder is a policy module of the user's, outside the repository: its
trials are given the module, so the night's builds load it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.cli import main

ROOT = Path(__file__).resolve().parents[3]
LIFT = ROOT / "tests" / "fixtures" / "matrix_lift"
NO_PROPOSAL = "scripted:tests.fakes.improve_policies:never_plans"
POLICY = "from tests.fakes.improve_policies import sentence_builder as builder  # noqa: F401\n"
pytestmark = pytest.mark.e2e


def test_a_nightly_carries_a_builder_module_from_outside_the_repository(
    home, repo, tmp_path, monkeypatch, capsys
):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "night_policy.py").write_text(POLICY)
    monkeypatch.syspath_prepend(str(mine))
    args = ["nightly", "--matrix", str(LIFT), "--model", "scripted:night_policy:builder"]
    args += ["--improver-model", NO_PROPOSAL, "--repo", str(repo), "--iterations", "1"]
    args += ["--survey-repeats", "1"]  # what is checked is who built, not how often
    assert main([*args, "--jobs", "2", "--time-budget", "20m"]) == 0, capsys.readouterr().err
    (night,) = (Path(home) / "runs").glob("nightly-*")
    record = json.loads((night / "nightly.json").read_text())
    assert record["status"] == "finished", record["reason"]
    survey = json.loads((night / "improve" / "baseline.json").read_text())
    assert survey["train_score"] == pytest.approx(0.65)  # built by the carried policy
    assert len(survey["runs"]) == 6  # one build of each task
