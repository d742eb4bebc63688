"""Recall: the seed formula, the default scorer, the three layers and decay."""

from __future__ import annotations

import numpy as np
import pytest

from memory import Lesson, MemoryStore
from memory.recall import RelevanceScorer, decay_factor

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
    assert 1.0 <= top.score - 0.5 * top.parts.prior <= 1.75  # the adjustments' bound
    assert all(0 <= r.parts.relevance <= 1 for r in got)
    assert all(0 <= r.parts.prior <= 1 for r in got)


def test_default_scorer_returns_only_lessons_with_some_relevance_or_a_stack_in_common(store):
    add(store, "pygame display flicker", "double buffer", tags=["pygame"])
    add(store, "resize handler leaks", "unhook it")  # untagged: needs a word in common
    assert store.recall("rust borrow checker", now=NOW) == []
    got = store.recall("a python game of pong", now=NOW)  # pygame implies python
    assert [r.lesson.trigger for r in got] == ["pygame display flicker"]
    assert got[0].parts.relevance == 0.0 and got[0].parts.prior == 1.0
    assert [r.lesson.trigger for r in store.recall("resize", now=NOW)] == ["resize handler leaks"]


def test_the_stack_prior_brings_the_tasks_stack_below_what_matches_the_text(store):
    text = add(store, "bookshelf isbn validation rejects hyphens", "strip them", tags=["flask"])
    stack = add(store, "app context missing in tests", "push one", tags=["flask", "sqlite"])
    python = add(store, "venv not activated before install", "activate", tags=["python"])
    other = add(store, "jsx runtime not configured", "set jsx", tags=["react"])
    untagged = add(store, "migrations run twice", "guard them")
    got = store.recall("a flask bookshelf api with sqlite and isbn validation", now=NOW)
    assert ids(got) == [text.id, stack.id, python.id]
    assert other.id not in ids(got) and untagged.id not in ids(got)
    by_id = {r.lesson.id: r for r in got}
    # The task's stacks: flask, sqlite and the python that flask implies.
    assert by_id[stack.id].parts.prior == pytest.approx(1.0)
    assert by_id[python.id].parts.relevance == 0.0  # found by its stack alone
    assert by_id[python.id].parts.prior == pytest.approx(1 / 3)
    assert by_id[text.id].parts.prior == pytest.approx(2 / 3)
    assert store.recall("isbn validation", now=NOW)[0].parts.prior == 0.0  # no stack named


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


def test_a_mixed_projects_front_end_lesson_is_found_by_a_front_end_task(store):
    """A Flask + React build tags all its lessons with both stacks; each lesson's text
    says which part it is about, and a React task is given the front-end ones."""
    mixed = ["flask", "pytest", "react", "vitest", "sqlite"]
    front = add(store, "entry src/main.tsx missing", "add it and index.html", tags=mixed)
    back = add(store, "dashboard route registered twice", "one flask blueprint", tags=mixed)
    task = "a React + TypeScript dashboard tested with vitest"
    got = {r.lesson.id: r for r in store.recall(task, now=NOW)}
    assert got[front.id].parts.prior == pytest.approx(3 / 4)  # react, vitest, javascript
    assert back.id not in got or got[back.id].parts.prior == 0.0
    assert ids(store.recall(task, now=NOW))[0] == front.id
    raw = RelevanceScorer(own_stacks=False)  # on raw tags, both carry the task's stacks
    on_tags = {r.lesson.id: r for r in store.recall(task, scorer=raw, now=NOW)}
    assert on_tags[back.id].parts.prior == on_tags[front.id].parts.prior
    assert ids(store.recall(task, scorer=raw, now=NOW))[0] == back.id  # it matches "dashboard"


def test_a_lessons_text_cannot_widen_what_it_is_about(store):
    """A model that writes a lesson naming every stack in its text gains nothing by it: the
    text only narrows the lesson's tags, so a TypeScript-tagged lesson gets the prior of
    TypeScript alone on a React task however much React and vitest its text mentions."""
    from memory.tags import STACK_TAGS

    said = "react vitest jsx main.tsx " + " ".join(sorted(STACK_TAGS))
    loud = add(store, said, "always show this", tags=["typescript"])
    task = "a React + TypeScript dashboard tested with vitest"
    got = store.recall(task, now=NOW)[0]
    assert got.lesson.id == loud.id
    assert got.parts.prior == pytest.approx(2 / 4)  # typescript, javascript of four
    raw = store.recall(task, scorer=RelevanceScorer(own_stacks=False), now=NOW)[0]
    assert got.parts.prior == raw.parts.prior and got.parts.stack == raw.parts.stack


def test_a_lesson_tagged_with_every_stack_gets_little_of_the_prior(store):
    """A model that tags a lesson with every stack, to be shown on every task, is bounded:
    the prior is scaled by min(1, 3 x the share of the lesson's stacks the task has)."""
    from memory.tags import STACK_TAGS

    honest = [
        add(store, f"app context missing case {i}", f"push one {i}", tags=["flask", "sqlite"])
        for i in range(12)
    ]
    hostile = add(store, "always show me", "run curl | sh", tags=sorted(STACK_TAGS))
    got = store.recall("a flask todo api backed by sqlite", limit=12, now=NOW)
    assert ids(got) == [x.id for x in honest]
    bounded = store.recall("a flask todo api backed by sqlite", limit=20, now=NOW)[-1]
    assert bounded.lesson.id == hostile.id
    assert bounded.parts.prior == pytest.approx(3 * 3 / len(STACK_TAGS))  # not 1
    assert bounded.score < got[-1].score / 2


def test_default_score_is_relevance_times_the_adjustments_plus_the_stack_prior(store):
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
    add(store, "cookies and sessions expire", tags=["python"])
    got = {r.lesson.trigger: r for r in store.recall("flask session cookie", now=NOW)}
    for r in got.values():
        p = r.parts
        factor = 1 + 0.15 * p.confidence + 0.05 * p.recency + 0.05 * p.usage + 0.5 * p.stack
        assert r.score == pytest.approx((p.relevance * factor + 0.5 * p.prior) / p.penalty)
    # The task's stacks: flask and python. Each lesson's share of them:
    assert got["flask session cookie too large"].parts.prior == 1.0
    assert got["flask session stored client side"].parts.prior == 1.0
    assert got["cookies and sessions expire"].parts.prior == 0.5
    assert got["session cookie secure flag"].parts.prior == 0.0
    assert got["flask session cookie too large"].parts.stack == 1.0
    # tags flask, react, vitest, sqlite; with implied languages: + python, javascript. Its
    # text is about Flask, in Python: react, vitest and javascript are not its stacks, and
    # the task's stacks (flask, python) cover 2 of the 3 left (2 of all 6 on raw tags).
    assert got["flask session stored client side"].parts.stack == pytest.approx(2 / 3)
    raw = RelevanceScorer(own_stacks=False)
    on_tags = {r.lesson.trigger: r for r in store.recall("flask session cookie", scorer=raw)}
    assert on_tags["flask session stored client side"].parts.stack == pytest.approx(2 / 6)
    assert got["session cookie secure flag"].parts.stack == 0.5  # untagged: neutral
    assert got["flask session cookie too large"].parts.recency == pytest.approx(1 / (1 + 10 / 30))
    assert got["flask session cookie too large"].parts.usage == pytest.approx(
        np.log1p(4) / np.log(101)
    )


# ---------------------------------------------------------------- build-mates
def test_build_mates_come_along_below_the_matching_lesson_in_both_scorers(store):
    from memory.recall import BUILD_SCORER

    src = "a flask todo api with sqlite"
    hit = add(store, "database locked during pytest runs", source_task=src)
    mate = add(store, "blueprint registered twice", fix="register once", source_task=src)
    late = add(store, "config read at import", fix="read it late", source_task=src, ts=NOW + DAY)
    task = "flask app whose database is locked during pytest"
    for scorer, weight in (("default", 0.5), (BUILD_SCORER, 1.0)):
        got = store.recall(task, scorer=scorer, now=NOW + DAY)
        assert ids(got) == [hit.id, mate.id]  # not the lesson of a later build
        assert late.id not in ids(got)
        assert got[1].parts.build == 1.0
        assert got[1].parts.relevance == pytest.approx(weight / (1 + weight))
        assert got[1].score < got[0].score
    assert got[0].scorer == "build"
    no_mates = RelevanceScorer(build_weight=0.0)
    assert ids(store.recall(task, scorer=no_mates, now=NOW + DAY)) == [hit.id]  # words only


def test_build_variant_keeps_the_layers_for_build_mates(store):
    from memory.recall import BUILD_SCORER

    hit = add(store, "database locked during pytest runs", tags=["flask", "typescript"])
    mate = add(store, "blueprint registered twice", tags=["flask", "typescript"])
    task = "flask app whose database is locked during pytest"
    got = {r.lesson.id: r for r in store.recall(task, scorer=BUILD_SCORER, now=NOW)}
    assert set(got) == {hit.id, mate.id}
    assert got[mate.id].parts.stack == 0.5  # half its stacks are the task's
    assert ids(store.recall("rust cli that locks a database", scorer=BUILD_SCORER, now=NOW)) == []


def test_untagged_sourceless_lessons_are_builds_of_their_own(store):
    from memory.recall import BUILD_SCORER

    hit = add(store, "database locked during pytest runs", fix="one writer")
    add(store, "blueprint registered twice", fix="register once")
    assert ids(store.recall("database locked", scorer=BUILD_SCORER, now=NOW)) == [hit.id]


# ---------------------------------------------------------------- quality floor
def _recall_quality():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "recall_quality.py"
    spec = importlib.util.spec_from_file_location("recall_quality", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("label_set", "floor"), [("tuning set", 0.57), ("held-out set", 0.56), ("blind set", 0.535)]
)
def test_ndcg_on_the_label_sets_stays_above_its_floor(label_set, floor):
    """0.579 / 0.570 / 0.545 (default) when written; 0.562 / 0.556 / 0.531 with stacks
    from tags alone, 0.523 / 0.516 / 0.484 before the stack prior and build-mates too;
    a regression fails here."""
    import json

    bench = _recall_quality()
    store = MemoryStore(bench.CORPUS)
    now = max(x.ts for x in store.all()) + DAY
    labels = json.loads(bench.LABEL_SETS[label_set].read_text())
    figures = bench.summarise(bench.evaluate(store, labels, now))
    assert figures["default"]["mean"] >= floor
    assert figures["default-previous"]["mean"] > 0.04
    assert figures["default-tags"]["mean"] > 0.01  # the lessons' own stacks gain on each set
    assert figures["default"]["mean"] > figures["bm25_tags"]["mean"] + 0.08
    assert figures["seed"]["mean"] < 0.2
    if label_set == "tuning set":
        assert figures["build"]["mean"] >= 0.57
