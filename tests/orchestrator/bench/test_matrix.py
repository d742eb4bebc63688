"""The benchmark matrix: loading tasks, scoring builds by hidden checks, one writer of memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory import MemoryStore, PhaseBudgets
from orchestrator.bench.matrix import run_matrix
from orchestrator.bench.story_checks import has_stories
from orchestrator.bench.tasks import DEFAULT_MATRIX, load_matrix
from orchestrator.cli import main
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.improve.weaknesses import find_weaknesses
from phases import DEFAULT_ROUNDS
from tests.support import build_config

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

SMALL = Path(__file__).resolve().parents[2] / "fixtures" / "matrix_small"
BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"


def test_the_default_matrix_spans_what_users_build():
    tasks = load_matrix(DEFAULT_MATRIX)
    assert len(tasks) >= 8
    assert sum(t.split == "holdout" for t in tasks) >= 2
    assert all(list((t.dir / "acceptance").glob("test_*.py")) or has_stories(t.dir) for t in tasks)
    words = " ".join(t.prompt.lower() for t in tasks)
    for kind in ("command-line", "flask", "fastapi", "asyncio", "numpy", "[project.scripts]"):
        assert kind in words, kind


def test_a_broken_matrix_is_one_clear_error(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "task.toml").write_text('id = "y"\nprompt = "p"\n')
    with pytest.raises(CadillacError, match="differs from its folder name"):
        load_matrix(tmp_path)
    (tmp_path / "x" / "task.toml").write_text('id = "x"\nprompt = "p"\nsplit = "test"\n')
    with pytest.raises(CadillacError, match="task.toml"):
        load_matrix(tmp_path)
    (tmp_path / "x" / "task.toml").write_text('id = "x"\nprompt = "p"\n')
    with pytest.raises(CadillacError, match="no acceptance/ folder"):
        load_matrix(tmp_path)
    with pytest.raises(CadillacError, match="not a folder"):
        load_matrix(tmp_path / "nope")


def test_builds_are_scored_by_the_share_of_hidden_checks_and_memory_has_one_writer(home):
    seen = []
    results = run_matrix(
        Home(home), build_config(BUILDER), SMALL, repeats=2, jobs=2, on_result=seen.append
    )
    assert len(results.runs) == len(seen) == 6
    by_task = results.scores_by_task()
    assert by_task == {"wf-a": [0.75, 0.75], "wf-b": [0.5, 0.5], "wf-h": [1.0, 1.0]}
    assert results.train_score == pytest.approx(0.625) and results.holdout_score == 1.0
    assert results.score == pytest.approx((0.75 + 0.5 + 1.0) / 3)
    stats = {t.task_id: t for t in results.tasks}
    assert stats["wf-a"].spread == 0.0 and stats["wf-a"].seconds > 0
    on_disk = json.loads(
        (Path(home) / "runs" / f"matrix-{results.id}" / "results.json").read_text()
    )
    assert on_disk["train_score"] == pytest.approx(0.625) and on_disk["ended"]
    # only the train tasks' builds learn (4 of the 6): the holdout stays held out
    assert len(PhaseBudgets(Path(home) / "phase_budgets.jsonl", DEFAULT_ROUNDS).rows()) == 4 * 6
    assert results.learning_applied["record_phase"] == 24
    assert len(MemoryStore(Path(home) / "memory.jsonl").all()) > 0

    weaknesses = find_weaknesses(results, Path(home) / "runs")
    assert weaknesses[0].kind == "acceptance"
    assert (
        weaknesses[0].signature
        == "acceptance:wf-b:test_wordfreq_b.py::test_numbers_inside_text_are_skipped"
    )
    assert weaknesses[0].cost == pytest.approx(0.5 / 2, abs=1e-5)  # of the two train tasks
    assert "phases/build.md" in weaknesses[0].targets

    # the hidden checks ran beside a copy of the project: the model never saw a word of them
    for run in results.runs:
        folder = Path(home) / "runs" / run.run_id
        sent = (folder / "llm.jsonl").read_text()
        assert "test_numbers_inside_text_are_skipped" not in sent and "acceptance" not in sent
        assert run.verdict == "scored" and (folder / "scoring" / "checks").is_dir()
        assert not list((folder / "workspace").rglob("test_wordfreq_*.py"))


def test_without_learning_the_home_is_left_as_it_was(home):
    results = run_matrix(
        Home(home), build_config(BUILDER), SMALL, repeats=1, split="holdout", learn=False
    )
    assert [r.task_id for r in results.runs] == ["wf-h"]
    assert not (Path(home) / "phase_budgets.jsonl").exists()
    assert not (Path(home) / "memory.jsonl").exists()


def test_holdout_builds_never_learn_even_when_the_run_does(home):
    results = run_matrix(
        Home(home), build_config(BUILDER), SMALL, repeats=1, split="all", learn=True
    )
    assert sorted(r.task_id for r in results.runs) == ["wf-a", "wf-b", "wf-h"]
    rows = [json.loads(x) for x in (Path(home) / "phase_budgets.jsonl").read_text().splitlines()]
    assert len(rows) == 12  # six phases of each of the two train builds; none of wf-h's
    held = run_matrix(
        Home(home), build_config(BUILDER), SMALL, repeats=1, split="holdout", learn=True
    )
    assert held.runs[0].score == 1.0 and held.learning_applied == {}
    after = (Path(home) / "phase_budgets.jsonl").read_text().splitlines()
    assert len(after) == 12


def test_a_build_that_fails_before_validate_scores_zero_and_only_train_makes_weaknesses(home):
    model = "scripted:tests.fakes.improve_policies:never_plans"
    results = run_matrix(Home(home), build_config(model), SMALL, split="all", learn=False)
    assert sorted(r.task_id for r in results.runs) == ["wf-a", "wf-b", "wf-h"]
    for run in results.runs:
        assert run.score == 0.0 and not run.reached_validate
        assert (run.failed_phase, run.phase_outcome) == ("plan", "budget_exhausted")
    (weakness,) = find_weaknesses(results, Path(home) / "runs")
    assert weakness.signature == "phase:plan:budget_exhausted"
    assert weakness.targets[:2] == ["phases/plan.md", "phases/plan.py"]
    assert weakness.tasks == [
        "wf-a",
        "wf-b",
    ]  # the holdout task failed the same way, and is not named
    held = run_matrix(Home(home), build_config(model), SMALL, split="holdout", learn=False)
    assert held.runs[0].score == 0.0 and find_weaknesses(held, Path(home) / "runs") == []


def test_matrix_run_command(home, capsys):
    args = [
        "matrix",
        "run",
        "--matrix",
        str(SMALL),
        "--model",
        BUILDER,
        "--split",
        "holdout",
        "--no-learn",
    ]
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["holdout_score"] == 1.0
    assert main(args) == 0
    assert "score 1.000" in capsys.readouterr().out
