"""Issue 22 items 23-25: the learning loop learns from outcomes, not from failures alone.

Budgets learn from passed phases (a phase that ran out of rounds is censored) and match
on the task's tags; a lesson that only backfires is retired and stops leading recall; a
restatement does not undo a lesson's penalties."""

from __future__ import annotations

from memory import PhaseBudgets
from phases import DEFAULT_ROUNDS


def test_one_task_that_keeps_failing_does_not_raise_every_python_tasks_budget(home):
    history = PhaseBudgets(home / "phase_budgets.jsonl", DEFAULT_ROUNDS)
    for _ in range(3):  # ordinary Flask builds, well within the default
        history.record_phase_outcome("build", 12, tags=["python", "flask"], outcome="passed")
    rounds = DEFAULT_ROUNDS["build"]
    for _ in range(6):  # one pygame task runs out of its rounds, build after build
        history.record_phase_outcome(
            "build", rounds, tags=["python", "pygame"], outcome="budget_exhausted"
        )
        rounds = history.compute_budgets(["python", "pygame"])["build"].rounds
    assert rounds == DEFAULT_ROUNDS["build"]  # censored: no ratchet 30 -> 36 -> 43 ...
    flask = history.compute_budgets(["python", "flask"])["build"]
    assert flask.rounds == DEFAULT_ROUNDS["build"] and flask.samples == 3


def test_exhausted_rows_are_a_floor_and_passed_rows_set_the_budget(home):
    history = PhaseBudgets(home / "phase_budgets.jsonl", DEFAULT_ROUNDS)
    for rounds in (40, 50, 60):  # passed: p90 58 x 1.2 = 69.6
        history.record_phase_outcome("build", rounds, tags=["pygame"], outcome="passed")
    assert history.compute_budgets(["pygame"])["build"].rounds == 70
    for rounds in (90, 100, 110):  # these ran out: more than 100 rounds, typically
        history.record_phase_outcome("build", rounds, tags=["pygame"], outcome="budget_exhausted")
    b = history.compute_budgets(["pygame"])["build"]
    assert (b.rounds, b.samples) == (100, 3)
    assert "median of 3 matching rows that ran out of rounds" in b.reason
    history.record_phase_outcome("build", 5, tags=["pygame"], outcome="error")  # says nothing
    assert history.compute_budgets(["pygame"])["build"].rounds == 100


def test_a_single_shared_tag_does_not_match(home):
    history = PhaseBudgets(home / "phase_budgets.jsonl", DEFAULT_ROUNDS)
    for _ in range(3):
        history.record_phase_outcome(
            "build", 200, tags=["python", "asyncio", "irc"], outcome="passed"
        )
    assert history.compute_budgets(["python", "flask"])["build"].rounds == DEFAULT_ROUNDS["build"]
    assert history.compute_budgets(["python", "asyncio", "irc"])["build"].rounds == 240
