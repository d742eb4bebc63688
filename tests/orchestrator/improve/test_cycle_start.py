"""An improve cycle's start: what its trials need (a builder's module), what it refuses up
front, and what it records when its survey fails."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.llm.backends import register_script
from tests.orchestrator.conftest import git

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

ROOT = Path(__file__).resolve().parents[3]
SMALL = ROOT / "tests" / "fixtures" / "matrix_small"
LIFT = ROOT / "tests" / "fixtures" / "matrix_lift"
BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"
NO_PROPOSAL = "scripted:tests.fakes.improve_policies:never_plans"  # "NONE": nothing to try
POLICY = "from tests.fakes.improve_policies import sentence_builder as builder  # noqa: F401\n"


def improve(repo: Path, matrix: Path, model: str, *extra: str) -> list[str]:
    args = ["improve", "--repo", str(repo), "--matrix", str(matrix), "--model", model]
    return [*args, "--improver-model", NO_PROPOSAL, "--iterations", "1", *extra]


def test_a_builder_module_from_outside_the_repository_is_carried_into_the_trials(
    home, repo, tmp_path, monkeypatch, capsys
):
    mine = tmp_path / "mine"  # as the current folder of `cadillac improve --model scripted:...`
    mine.mkdir()
    (mine / "carried_policy.py").write_text(POLICY)
    monkeypatch.syspath_prepend(str(mine))
    # one survey build a task: what is checked is who built, not how often
    extra = ("--jobs", "2", "--survey-repeats", "1")
    assert main(improve(repo, LIFT, "scripted:carried_policy:builder", *extra)) == 0, (
        capsys.readouterr().err
    )
    (folder,) = (Path(home) / "runs").glob("improve-*")
    survey = json.loads((folder / "baseline.json").read_text())
    assert survey["train_score"] == pytest.approx(0.65)  # built by the carried policy
    assert len(survey["runs"]) == 6  # one build of each task
    failures = [r["failure"] for r in survey["runs"] if r.get("failure")]
    assert not any("carried_policy" in (f or "") for f in failures), failures
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["ended"] is not None and summary["iterations"][0]["status"] == "no_proposal"
    assert not list(folder.glob("**/carried/*"))  # the copies went with their trials


@pytest.mark.parametrize("command", ["improve", "nightly"])
def test_a_builder_no_trial_can_load_is_refused_before_anything_is_made(
    command, home, repo, capsys
):
    model = register_script(f"only-here-{command}", lambda messages, tools: "NONE")
    args = improve(repo, LIFT, model)
    args[0] = command
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("cadillac: error: "), err
    assert "registered in this process" in err and "scripted:package.module:function" in err
    assert not (Path(home) / "runs").exists() or not list((Path(home) / "runs").iterdir())


def test_an_improve_that_fails_at_its_survey_records_failed_and_its_end(home, repo, capsys):
    (repo / "orchestrator" / "__main__.py").write_text('raise SystemExit("cannot start")\n')
    git(repo, "commit", "-q", "-am", "a commit whose cadillac cannot start")
    assert main(improve(repo, LIFT, BUILDER)) == 1
    err = capsys.readouterr().err.splitlines()
    (error,) = [line for line in err if line.startswith("cadillac: error:")]
    assert error.startswith("cadillac: error: the survey-baseline matrix run left no results")
    assert "cannot start" in error
    (folder,) = (Path(home) / "runs").glob("improve-*")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["ended"] is not None and summary["status"] == "failed"
    assert "left no results" in summary["stopped_because"]

    assert main(["improve", "--status"]) == 0
    out = capsys.readouterr().out
    assert "failed" in out and "running" not in out and "left no results" in out
    assert main(["runs", "list", "--json"]) == 0
    (row,) = [r for r in json.loads(capsys.readouterr().out) if r["kind"] == "improve"]
    assert row["status"] == "failed" and "left no results" in row["reason"]


def one_train_task(tmp_path: Path) -> Path:
    matrix = tmp_path / "one-train"
    shutil.copytree(SMALL, matrix)
    shutil.rmtree(matrix / "wf-b")
    return matrix


def test_a_rule_that_cannot_reach_its_alpha_is_told_what_would_help(home, repo, tmp_path, capsys):
    # one train task, always the weakness's (its baseline built afresh, 2 a candidate build),
    # 4 candidate builds (--repeats 2): C(12, 4) = 495 splits, p >= 1/495, above 70% of
    # 0.05/20 (and the full stage's 2 builds, C(6, 2) = 15 splits, above 30% of it)
    one = improve(repo, one_train_task(tmp_path), BUILDER)
    assert main([*one, "--repeats", "2", "--iterations", "20"]) == 1
    err = capsys.readouterr().err.strip()
    assert "has 1 train task(s)" in err and len(err.splitlines()) == 1
    assert "p-value below 0.00202" in err and "not 0.0025 (0.05 over 20)" in err
    assert "add train tasks (at least 2), run --repeats 3 or more, or run --iterations 17" in err

    # 5 train tasks: p >= 1/8193 however many builds (the splits are sampled)
    assert main([*improve(repo, LIFT, BUILDER), "--iterations", "300"]) == 1
    err = capsys.readouterr().err.strip()
    assert "run --iterations 286 or fewer (more train tasks or repeats cannot help)" in err
    assert not list((Path(home) / "runs").glob("improve-*"))


def test_a_killed_cycle_reads_interrupted_in_status_as_in_runs_list(home, tmp_path, capsys):
    """A cycle killed outright leaves ``ended: null``: with no process holding its
    repository's lock, ``improve --status`` says interrupted, as ``runs list`` does."""
    from orchestrator.improve.records import ImproveSummary

    user_repo = tmp_path / "user-repo"
    user_repo.mkdir()
    git(user_repo, "init", "-q")
    folder = Path(home) / "runs" / "improve-20260101-000000-abcdef"
    folder.mkdir(parents=True)
    summary = ImproveSummary(
        id="20260101-000000-abcdef", repo=str(user_repo), base_commit="0" * 40,
        tip_commit="0" * 40, started=time.time() - 60,
    )  # fmt: skip
    (folder / "summary.json").write_text(summary.model_dump_json())
    assert main(["improve", "--status"]) == 0
    out = capsys.readouterr().out
    assert "interrupted: its process is gone" in out and "running" not in out
    assert main(["runs", "list", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["status"] == "interrupted"
