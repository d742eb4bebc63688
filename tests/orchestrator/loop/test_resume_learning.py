"""A resumed build of a matrix run learns only as its matrix run let it (issue 22 item 4)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from memory import Lesson, MemoryStore
from orchestrator.cli import main
from orchestrator.home import Home
from orchestrator.llm.backends import register_script
from orchestrator.loop.agent import Builder
from orchestrator.loop.learning import DeferredLearning
from orchestrator.loop.runs import MatrixOrigin, Run, TaskRecord
from tests.support import build_config as config

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location(
    "wordfreq_policy_resume", ROOT / "examples/wordfreq/policy.py"
)
wordfreq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wordfreq)


def _stubborn(messages, tools):
    """The wordfreq build, except that its build phase never passes."""
    if tools and "# Phase: build" in messages[0]["content"]:
        call = {"name": "finish_phase", "arguments": {"summary": "?", "applied_lessons": []}}
        return {"tool_calls": [call]}
    return wordfreq.policy(messages, tools)


@pytest.mark.parametrize(
    ("split", "learn"), [("holdout", True), ("train", False)], ids=["holdout", "no-learn"]
)
def test_resuming_a_build_its_matrix_run_kept_from_learning_writes_no_memory_or_budgets(
    home, capsys, split, learn
):
    MemoryStore(home / "memory.jsonl").save(
        Lesson(
            type="tool_pattern",
            trigger="python command-line tool without unit tests",
            fix="write unittest tests for the word counting before the CLI",
            tags=["python"],
            confidence=0.5,
        )
    )
    before = {p.name: p.read_bytes() for p in home.iterdir() if p.is_file()}
    origin = MatrixOrigin(
        run="matrix-20260101-000000-abcdef", matrix="matrices/m", split=split, learn=False
    )
    model = register_script(f"stubborn-{split}", _stubborn)
    first = Builder.start(
        Home(home), config(model), wordfreq.TASK, matrix=origin, learning=DeferredLearning()
    )
    assert first.build().status == "failed"
    assert json.loads(first.run.task_path.read_text())["matrix"]["split"] == split

    good = register_script(f"good-{split}", wordfreq.policy)
    assert main(["build", "--resume", first.run.id, "--model", good, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "passed"
    after = {p.name: p.read_bytes() for p in home.iterdir() if p.is_file()}
    assert after == before  # no lesson saved or boosted, no budget row
    assert summary["lessons_saved"] == [] and summary["lessons_boosted"] == []


def test_a_resumed_holdout_build_says_it_does_not_learn(home, capsys):
    origin = MatrixOrigin(run="matrix-x", matrix="m", split="holdout", learn=False)
    model = register_script("stubborn-said", _stubborn)
    first = Builder.start(
        Home(home), config(model), wordfreq.TASK, matrix=origin, learning=DeferredLearning()
    )
    first.build()
    capsys.readouterr()
    good = register_script("good-said", wordfreq.policy)
    main(["build", "--resume", first.run.id, "--model", good])
    err = capsys.readouterr().err
    assert "a build of matrix-x (a holdout task): resumed without learning" in err
    assert not (home / "phase_budgets.jsonl").exists()


def test_a_task_json_written_before_the_matrix_was_recorded_still_loads_and_learns(home):
    run_dir = home / "runs" / "20260101-000000-abcdef"
    run_dir.mkdir(parents=True)
    old = {"v": 1, "run_id": run_dir.name, "task": "t", "cadillac_version": "0", "config": {}}
    (run_dir / "task.json").write_text(json.dumps(old))
    record = Run.open(home / "runs", run_dir.name).task()
    assert isinstance(record, TaskRecord) and record.matrix is None and record.learns
