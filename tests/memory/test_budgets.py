"""Phase budgets: the p90 x 1.2 rule, the 10x ceiling, the 3-row minimum, tag matching, the
legacy file."""

from __future__ import annotations

import json

import pytest

from memory import CorruptLineWarning, PhaseBudgets
from phases import DEFAULT_ROUNDS, PHASES
from tests.conftest import CORPUS_BUDGETS


@pytest.fixture
def history(home) -> PhaseBudgets:
    return PhaseBudgets(home / "phase_budgets.jsonl", DEFAULT_ROUNDS)


def test_no_history_gives_the_defaults_and_says_so(history):
    budgets = history.compute_budgets({"python"})
    assert list(budgets) == list(PHASES)
    for phase, b in budgets.items():
        assert b.rounds == b.default == DEFAULT_ROUNDS[phase]
        assert b.samples == 0 and b.p90 is None and "fewer than 3" in b.reason


def test_p90_times_1_2_rounded_up_when_above_the_default(history):
    for rounds in (10, 20, 30, 40, 50):
        history.record_phase_outcome("build", rounds, n_files=4, tags=["python"], outcome="passed")
    b = history.compute_budgets(["python"])["build"]
    # numpy p90 of 10..50 = 46; x 1.2 = 55.2 -> 56
    assert (b.samples, b.p90, b.rounds) == (5, 46.0, 56)
    assert b.reason.startswith("history: p90 46 x 1.2 = 55.2")


def test_default_wins_when_history_needs_less(history):
    for rounds in (2, 3, 4):
        history.record_phase_outcome("build", rounds, tags=["python"])
    b = history.compute_budgets(["python"])["build"]
    assert b.rounds == DEFAULT_ROUNDS["build"] and b.samples == 3
    assert b.reason.startswith("default: p90")


def test_three_matching_rows_are_needed(history):
    for rounds in (100, 100):
        history.record_phase_outcome("scaffold", rounds, tags=["go"])
    assert history.compute_budgets(["go"])["scaffold"].rounds == DEFAULT_ROUNDS["scaffold"]
    history.record_phase_outcome("scaffold", 100, tags=["go"])
    assert history.compute_budgets(["go"])["scaffold"].rounds == 120


def test_only_rows_whose_tags_overlap_the_task_count(history):
    for _ in range(3):
        history.record_phase_outcome("integrate", 90, tags=["pygame", "python"])
        history.record_phase_outcome("integrate", 5, tags=["typescript"])
    assert history.compute_budgets(["pygame"])["integrate"].rounds == 108
    assert (
        history.compute_budgets(["typescript"])["integrate"].rounds == DEFAULT_ROUNDS["integrate"]
    )
    assert history.compute_budgets([])["integrate"].reason.startswith("default: no task tags")


def test_a_budget_is_at_most_ten_times_its_default_and_says_when_it_was_cut(history):
    for rounds in (250, 260, 270, 280, 290):  # far above build's default of 30
        history.record_phase_outcome("build", rounds, tags=["python"], outcome="passed")
    b = history.compute_budgets(["python"])["build"]
    assert DEFAULT_ROUNDS["build"] == 30
    assert (b.default, b.samples, b.p90, b.rounds) == (30, 5, 286.0, 300)
    assert b.reason == (
        "history: p90 286 x 1.2 = 343.2 over 5 matching rows, capped at 10x the default (300)"
    )
    for rounds in (60, 62, 65):  # p90 64.4 x 1.2 = 77.3: just under validate's ceiling of 80
        history.record_phase_outcome("validate", rounds, tags=["go"])
    under = history.compute_budgets(["go"])["validate"]
    assert DEFAULT_ROUNDS["validate"] == 8
    assert under.rounds == 78 and under.reason.startswith("history:")
    assert "capped" not in under.reason


def test_unknown_phase_is_refused(history):
    with pytest.raises(ValueError, match="unknown phase"):
        history.record_phase_outcome("review", 3)


def test_the_legacy_history_loads_without_loss(corpus_home):
    source = [json.loads(line) for line in CORPUS_BUDGETS.read_text().splitlines()]
    history = PhaseBudgets(corpus_home / "phase_budgets.jsonl", DEFAULT_ROUNDS)
    rows = history.rows()
    assert len(rows) == len(source) == 261
    for row, loaded in zip(source, rows, strict=True):
        dumped = loaded.model_dump()
        assert {k: dumped[k] for k in row} == row
    assert {r.phase for r in rows} >= {"review", "wiring"}
    history.record_phase_outcome("plan", 2, tags=["flask"], outcome="passed")
    lines = (corpus_home / "phase_budgets.jsonl").read_text().splitlines()
    assert len(lines) == 262 and json.loads(lines[-1])["outcome"] == "passed"
    budgets = history.compute_budgets(["flask", "sqlite"])
    assert budgets["build"].samples > 3 and budgets["build"].rounds > DEFAULT_ROUNDS["build"]


@pytest.mark.parametrize("rounds", ["1" + "0" * 400, str(10**300), "1000001"])
def test_a_row_with_more_rounds_than_any_phase_runs_is_skipped_with_a_warning(history, rounds):
    """10**400 overflowed the percentile (issue 11, item 3); the build's budgets read the same."""
    for r in (40, 50, 60):
        history.record_phase_outcome("build", r, tags=["python"])
    with history.path.open("a") as fh:
        fh.write('{"phase": "build", "rounds": ' + rounds + ', "tags": ["python"]}\n')
    with pytest.warns(CorruptLineWarning, match=r":4: invalid line skipped \(rounds: "):
        history.record_phase_outcome("build", 55, tags=["python"])  # reads the row, appends
        b = history.compute_budgets(["python"])["build"]
    assert b.samples == 4 and b.p90 == 58.5
    assert len(history.path.read_text().splitlines()) == 5  # the bad row stays where it was


def test_a_row_with_an_infinite_time_is_skipped(history):
    history.path.write_text('{"phase": "plan", "rounds": 2, "ts": 1e400}\n')
    with pytest.warns(CorruptLineWarning, match=r"ts: "):
        assert history.rows() == []


def test_a_go_builds_budgets_come_from_go_history_and_name_the_rows(history):
    """Issue 23: with 3 Go rows among Python and Rust ones, a Go task's build budget is
    Go's, and the budget says which rows it used."""
    for rounds in (60, 70, 80):
        history.record_phase_outcome("build", rounds, tags=["go", "cli"], outcome="passed")
    for rounds in (5, 6, 7, 8, 9):
        history.record_phase_outcome("build", rounds, tags=["python", "flask"], outcome="passed")
    history.record_phase_outcome("build", 200, tags=["rust"], outcome="passed")
    history.record_phase_outcome("build", 90, tags=["go"], outcome="error")  # says nothing
    b = history.compute_budgets(["go", "cli", "build"])["build"]
    assert (b.samples, b.p90) == (3, 78.0) and b.rounds == 94  # ceil(78 x 1.2)
    assert [(r.rounds, r.tags) for r in b.used] == [(n, ["go", "cli"]) for n in (60, 70, 80)]
    assert b.used_total == 3 and b.sources() == "3 rows (3 tagged go)"
    python = history.compute_budgets(["python", "flask"])["build"]
    assert python.rounds == DEFAULT_ROUNDS["build"] and python.used_total == 5
    assert history.compute_budgets([])["build"].sources() == "no matching rows"


def test_a_budget_names_at_most_the_last_rows_it_used(history):
    from memory.budgets import USED_SHOWN

    for n in range(USED_SHOWN + 7):
        history.record_phase_outcome("plan", 2 + n % 3, tags=["go"], outcome="passed")
    b = history.compute_budgets(["go"])["plan"]
    assert len(b.used) == USED_SHOWN and b.used_total == USED_SHOWN + 7
    assert b.sources().startswith(f"{USED_SHOWN + 7} rows (the last {USED_SHOWN}: ")
