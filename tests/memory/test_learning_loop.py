"""Issue 22 items 23-25: the learning loop learns from outcomes, not from failures alone.

Budgets learn from passed phases (a phase that ran out of rounds is censored) and match
on the task's tags; a lesson that only backfires is retired and stops leading recall; a
restatement does not undo a lesson's penalties."""

from __future__ import annotations

import json

import pytest

from memory import Lesson, MemoryStore, PhaseBudgets
from phases import DEFAULT_ROUNDS
from tests.conftest import CORPUS_LESSONS


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


ERROR = "sqlite database is locked during concurrent writes"


def test_a_lesson_that_only_backfires_is_retired_on_its_own_backfire_count(home):
    store = MemoryStore(home / "memory.jsonl")
    bad = store.save(
        Lesson(type="error_pattern", trigger=ERROR, fix="open a new connection", confidence=0.3)
    )
    for expected in (1, 2):
        assert store.penalize_backfired([bad.id], ERROR) == [bad.id]
        kept = store.get(bad.id)
        assert (kept.backfired, kept.used) == (expected, 0)
    assert store.penalize_backfired([bad.id], ERROR) == [bad.id]  # the third: retired
    assert store.get(bad.id) is None
    (retired,) = store.retired()
    assert retired.backfired == 3 and retired.confidence == 0.0
    assert "3 applications (3 backfired)" in retired.retired_reason


def test_a_boost_still_counts_a_use_and_no_backfire(home):
    store = MemoryStore(home / "memory.jsonl")
    good = store.save(Lesson(type="error_pattern", trigger=ERROR, fix="use WAL mode"))
    store.boost_confidence([good.id])
    kept = store.get(good.id)
    assert (kept.used, kept.backfired, kept.confidence) == (1, 0, pytest.approx(0.6))


def test_a_lesson_at_confidence_zero_does_not_lead_recall(home):
    store = MemoryStore(home / "memory.jsonl")
    task = "python flask sqlite app: database is locked during concurrent writes"
    discredited = store.save(
        Lesson(
            type="error_pattern",
            trigger="sqlite database is locked during concurrent writes in flask",
            fix="retry the write in a loop",
            tags=["python", "flask", "sqlite"],
            confidence=0.0,
            used=2,
        )
    )
    trusted = store.save(
        Lesson(
            type="error_pattern",
            trigger="sqlite locked under concurrent flask requests",
            fix="enable WAL mode and one connection per request",
            tags=["python", "flask", "sqlite"],
            confidence=0.5,
        )
    )
    recalled = store.recall(task, limit=2)
    assert [r.lesson.id for r in recalled] == [trusted.id, discredited.id]


def test_older_memory_files_load_without_loss_and_get_a_backfire_count_of_zero(home):
    path = home / "memory.jsonl"
    path.write_bytes(CORPUS_LESSONS.read_bytes())
    before = [json.loads(line) for line in CORPUS_LESSONS.read_text().splitlines()]
    store = MemoryStore(path)
    lessons = store.all()
    assert len(lessons) == len(before) == 403
    assert all(lesson.backfired == 0 for lesson in lessons)
    store.boost_confidence([lessons[0].id])  # one rewrite of the whole file
    after = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(after) == len(before)
    for old, new in zip(before[1:], after[1:], strict=True):  # every field kept, one added
        assert old.items() <= new.items() and new["backfired"] == 0


def test_a_restatement_does_not_undo_a_lessons_penalties(home):
    store = MemoryStore(home / "memory.jsonl")
    trigger = "flask app factory imports the blueprint before it exists"
    worn = store.save(
        Lesson(type="architecture", trigger=trigger, fix="import it late", confidence=0.3)
    )
    store.penalize_backfired([worn.id], trigger)
    store.penalize_backfired([worn.id], trigger)
    penalised = store.get(worn.id)
    assert penalised.confidence == pytest.approx(0.1)
    restated = Lesson(type="architecture", trigger=trigger + " yet", fix="same", confidence=0.3)
    merged, was_merged = store.add(restated)
    assert was_merged and merged.id == worn.id
    kept = store.get(worn.id)
    assert kept.confidence == pytest.approx(0.1) and kept.backfired == 2
    store.penalize_backfired([worn.id], trigger)  # the third backfire still retires it
    assert store.get(worn.id) is None and [x.id for x in store.retired()] == [worn.id]


def test_a_lesson_penalised_in_an_older_file_keeps_its_low_confidence_on_a_merge(home):
    store = MemoryStore(home / "memory.jsonl")
    trigger = "vite dev server proxy drops websocket upgrade requests"
    old = store.save(Lesson(type="tool_pattern", trigger=trigger, fix="ws: true", confidence=0.1))
    merged, _ = store.add(Lesson(type="tool_pattern", trigger=trigger, fix="x", confidence=0.3))
    assert merged.id == old.id and store.get(old.id).confidence == pytest.approx(0.1)
