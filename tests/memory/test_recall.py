"""Recall: the seed formula, the default scorer, the three layers and decay."""

from __future__ import annotations

import numpy as np
import pytest

from memory import Lesson, MemoryStore
from memory.recall import decay_factor

NOW = 2_000_000_000.0
DAY = 86400.0


def add(store: MemoryStore, trigger: str, fix: str = "apply the fix", **kw) -> Lesson:
    kw.setdefault("ts", NOW)
    return store.save(Lesson(type=kw.pop("type", "error_pattern"), trigger=trigger, fix=fix, **kw))


@pytest.fixture
def store(home) -> MemoryStore:
    return MemoryStore(home / "memory.jsonl")


def ids(recalled) -> list[str]:
    return [r.lesson.id for r in recalled]


# ---------------------------------------------------------------- layer 1: the hard tag filter
@pytest.mark.parametrize("scorer", ["default", "seed"])
def test_tagged_lessons_of_another_stack_are_filtered_out_untagged_survive(store, scorer):
    ts = add(store, "sqlite migrations fail", tags=["typescript", "react"])
    fl = add(store, "sqlite migrations crash", tags=["flask"])
    free = add(store, "sqlite migrations without a schema version", tags=[])
    got = ids(store.recall("flask todo api with sqlite migrations", scorer=scorer, now=NOW))
    assert ts.id not in got
    assert fl.id in got and free.id in got


def test_without_task_tags_nothing_is_filtered(store):
    ts = add(store, "migration scripts fail", tags=["typescript"])
    assert ids(store.recall("fix the migration scripts", now=NOW)) == [ts.id]


def test_default_scorer_filters_on_stacks_not_phase_words(store):
    """'build' in a task must not let a TypeScript lesson into a Flask task (the seed lets it)."""
    ts = add(store, "route handlers return wrong status", tags=["typescript", "build"])
    task = "build a flask api whose route handlers return status codes"
    assert ts.id not in ids(store.recall(task, now=NOW))
    assert ts.id in ids(store.recall(task, scorer="seed", now=NOW))


def test_default_scorer_lets_a_python_lesson_into_a_flask_task(store):
    py = add(store, "circular import between route modules", tags=["python"])
    task = "a flask service with route modules"
    assert ids(store.recall(task, now=NOW)) == [py.id]
    assert ids(store.recall(task, scorer="seed", now=NOW)) == []  # strict: python is not 'flask'


# ---------------------------------------------------------------- layer 2: source task (5x)
@pytest.mark.parametrize("scorer", ["default", "seed"])
def test_lesson_from_another_stacks_task_is_divided_by_five(store, scorer):
    same = add(store, "database locked during tests", source_task="flask todo api")
    other = add(
        store,
        "database locked during tests",
        type="dependency",
        source_task="an express api in typescript",
    )
    got = {r.lesson.id: r for r in store.recall("flask app database tests", scorer=scorer, now=NOW)}
    assert got[same.id].parts.penalty == 1 and got[same.id].parts.penalties == []
    assert got[other.id].parts.penalty == 5
    assert "source task" in got[other.id].parts.penalties[0]
    assert got[other.id].score == pytest.approx(got[same.id].score / 5)


# ---------------------------------------------------------------- layer 3: content (2x)
@pytest.mark.parametrize("scorer", ["default", "seed"])
def test_untagged_sourceless_lesson_whose_text_implies_another_stack_is_halved(store, scorer):
    neutral = add(store, "config file not found at startup", fix="resolve it from the app root")
    ts = add(
        store,
        "config file not found at startup",
        type="tool_pattern",
        fix="set rootDir in tsconfig.json",
    )
    tagged = add(
        store,
        "config file not found at startup",
        type="dependency",
        fix="set rootDir in tsconfig.json",
        tags=["flask"],
    )
    task = "flask app config file loading"
    got = {r.lesson.id: r for r in store.recall(task, scorer=scorer, now=NOW)}
    assert got[neutral.id].parts.penalty == 1
    assert got[ts.id].parts.penalty == 2 and "another stack" in got[ts.id].parts.penalties[0]
    assert got[tagged.id].parts.penalty == 1  # tagged lessons are judged by their tags


# ---------------------------------------------------------------- decay
def test_decay_factor_at_0_90_180_and_270_days():
    assert decay_factor(0) == 1.0
    assert decay_factor(90) == 1.0
    assert decay_factor(180) == pytest.approx(0.5)
    assert decay_factor(270) == 0.0
    assert decay_factor(400) == 0.0


@pytest.mark.parametrize("scorer", ["default", "seed"])
@pytest.mark.parametrize(("age_days", "expected"), [(0, 0.8), (90, 0.8), (180, 0.4)])
def test_effective_confidence_decays_when_scoring_not_on_disk(store, scorer, age_days, expected):
    saved = add(store, "slow import of heavy module", confidence=0.8, ts=NOW - age_days * DAY)
    (r,) = store.recall("heavy module import", scorer=scorer, now=NOW)
    assert r.parts.confidence == pytest.approx(expected)
    assert MemoryStore(store.path).get(saved.id).confidence == 0.8


def test_reinforcement_restarts_the_decay_clock(store):
    old = add(store, "slow import of heavy module", confidence=0.8, ts=NOW - 200 * DAY)
    store.boost_confidence([old.id])
    (r,) = store.recall("heavy module import")
    assert r.parts.confidence == pytest.approx(0.9)


# ---------------------------------------------------------------- the seed formula
def test_seed_score_is_the_seeds_formula(store):
    saved = add(
        store,
        "pytest fixture leaks state",
        fix="scope fixtures to function",
        confidence=0.6,
        used=3,
        ts=NOW - 1 * DAY,
    )
    (r,) = store.recall("pytest fixture problems", scorer="seed", now=NOW)
    # lesson terms: pytest fixture leak state scope function (6 distinct); 2 shared with the task
    assert r.parts.relevance == pytest.approx(2 * 2 / 6)
    assert r.parts.recency == pytest.approx(1 / (1 + 1))
    assert r.parts.usage == pytest.approx(0.3)
    assert r.score == pytest.approx(2 * 2 / 6 + 0.5 + 0.6 + 0.3)
    assert r.lesson.id == saved.id


def test_seed_lets_a_heavily_used_lesson_outrank_a_relevant_one_the_default_does_not(store):
    relevant = add(store, "flask blueprint url prefix doubled", tags=["flask"], confidence=0.3)
    veteran = add(store, "syntax error in irc server", tags=["python"], confidence=1.0, used=87)
    task = "flask python app with a blueprint url prefix"
    assert ids(store.recall(task, scorer="seed", now=NOW))[0] == veteran.id
    got = store.recall(task, now=NOW)
    assert ids(got)[0] == relevant.id
    assert all(r.score < got[0].score / 2 for r in got[1:])


# ---------------------------------------------------------------- the default scorer
def test_default_scorer_ranks_by_relevance_with_bounded_adjustments(store):
    strong = add(
        store,
        "aiosqlite cursor not closed",
        fix="use async with on aiosqlite cursors",
        confidence=0.3,
        tags=["aiosqlite"],
    )
    weak = add(store, "cursor left open", fix="close it", confidence=1.0, used=50, tags=["python"])
    got = store.recall("aiosqlite cursor handling", now=NOW)
    assert ids(got) == [strong.id, weak.id]
    top = got[0]
    assert top.parts.relevance == 1.0
    assert 1.0 <= top.score <= 1.75
    assert all(0 <= r.parts.relevance <= 1 for r in got)


def test_default_scorer_returns_only_lessons_with_some_relevance(store):
    add(store, "pygame display flicker", tags=["pygame"])
    assert store.recall("rust borrow checker", now=NOW) == []


def test_limit_and_ordering_are_deterministic(store):
    for i in range(15):
        add(store, f"sqlite lock timeout variant{i}", fix="retry", ts=NOW)
    got = store.recall("sqlite lock timeout", limit=5, now=NOW)
    assert len(got) == 5
    scores = [r.score for r in got]
    assert scores == sorted(scores, reverse=True)
    assert ids(got) == ids(store.recall("sqlite lock timeout", limit=5, now=NOW))


def test_unknown_scorer_is_an_error(store):
    add(store, "anything at all")
    with pytest.raises(ValueError, match="unknown scorer"):
        store.recall("anything", scorer="magic")


def test_recall_on_the_real_corpus_prefers_the_tasks_stack(corpus_home):
    store = MemoryStore(corpus_home / "memory.jsonl")
    got = store.recall("Create a React + TypeScript dashboard tested with vitest", limit=10)
    assert len(got) == 10
    stacks = {"typescript", "react", "vitest", "javascript", "node", "jest", "express"}
    for r in got:
        assert not r.lesson.tags or stacks & set(r.lesson.tags), r.lesson.tags


def test_default_score_is_relevance_times_the_bounded_adjustments(store):
    add(
        store,
        "flask session cookie too large",
        tags=["flask"],
        confidence=0.6,
        used=4,
        ts=NOW - 10 * DAY,
    )
    add(
        store,
        "flask session stored client side",
        tags=["flask", "react", "vitest", "sqlite"],
        type="architecture",
    )
    add(store, "session cookie secure flag", type="dependency")
    got = {r.lesson.trigger: r for r in store.recall("flask session cookie", now=NOW)}
    for r in got.values():
        p = r.parts
        factor = 1 + 0.15 * p.confidence + 0.05 * p.recency + 0.05 * p.usage + 0.5 * p.stack
        assert r.score == pytest.approx(p.relevance * factor / p.penalty)
    assert got["flask session cookie too large"].parts.stack == 1.0
    # tags flask, react, vitest, sqlite; with implied languages: + python, javascript.
    # The task's stacks (flask, python) cover 2 of those 6.
    assert got["flask session stored client side"].parts.stack == pytest.approx(2 / 6)
    assert got["session cookie secure flag"].parts.stack == 0.5  # untagged: neutral
    assert got["flask session cookie too large"].parts.recency == pytest.approx(1 / (1 + 10 / 30))
    assert got["flask session cookie too large"].parts.usage == pytest.approx(
        np.log1p(4) / np.log(101)
    )
