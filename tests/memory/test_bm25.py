"""One BM25 (memory/bm25.py) for lesson recall, notes and the code index; lessons that
``exclude_tags`` removes shape nothing of recall's scores (issue 22, the "Also" item)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from memory import Lesson, MemoryStore
from memory.bm25 import Bm25
from memory.notes import Notebook, new_note
from memory.recall import RelevanceScorer
from memory.tokens import term_set, terms
from orchestrator.index.records import FileRecord
from orchestrator.index.search import SearchIndex


def test_the_formula_by_hand():
    index = Bm25([{"a": 2, "b": 1}, {"b": 1}])
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / 2)  # doc length 3, mean length 2
    expected = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5)) * 2 * 2.2 / (2 + norm)
    assert index.scores(["a"]) == pytest.approx([expected, 0.0])
    assert index.scores({"a": 0.2}) == pytest.approx([0.2 * expected, 0.0])
    b = index.scores(["b"])
    assert b[1] > b[0] > 0 and [i for i, _ in index.ranked(["b"])] == [1, 0]
    assert Bm25([]).ranked(["a"]) == []


def test_recall_scores_lessons_with_the_same_function(home):
    store = MemoryStore(home / "memory.jsonl")
    for trigger in ("sqlite locked in tests", "flask blueprint import loop", "sqlite wal mode"):
        store.save(Lesson(type="error_pattern", trigger=trigger, fix="fix it", tags=["sqlite"]))
    index = store._sync()
    slots = np.flatnonzero(index.alive.values)
    shared = Bm25(index.doc_terms(int(i)) for i in slots)
    task = "sqlite database locked while the flask tests run"
    recalled = RelevanceScorer().bm25(index, task)[slots]
    assert recalled == pytest.approx(shared.scores(term_set(task)))
    assert recalled.max() > 0


def test_notes_and_the_code_index_rank_with_it(tmp_path):
    record = FileRecord(
        path="memory/bm25.py",
        language="python",
        size=1,
        lines=1,
        sha256="0" * 64,
        mtime_ns=0,
        parse_errors=False,
        doc="okapi scoring",
    )
    code = SearchIndex([], [record])
    assert isinstance(code.bm25, Bm25)
    assert [h.path for h in code.search("okapi")] == ["memory/bm25.py"]
    book = Notebook(tmp_path / "notes", None)
    for name, body in (
        ("db", "sqlite in WAL mode for every service"),
        ("deps", "pin sqlite drivers; use uv"),
        ("style", "black formatting"),
    ):
        book.save(new_note(body, name=name))
    notes = book.all()
    shared = Bm25(Counter(terms(f"{n.name} {n.description} {n.body}")) for n in notes)
    task = "a sqlite service in WAL mode"
    expected = [notes[i].name for i, _ in shared.ranked(term_set(task))]
    assert [n.name for n in book.relevant(task)] == expected and expected[0] == "db"


def _store_with_a_self_lesson(home) -> MemoryStore:
    store = MemoryStore(home / "memory.jsonl")
    store.save(  # what the improve cycle writes about cadillac itself: excluded in builds
        Lesson(
            type="architecture",
            trigger="sqlite database locked during concurrent writes",
            fix="retry with backoff and jitter: backoff, jitter, backoff, jitter",
            tags=["cadillac", "self"],
        )
    )
    store.save(
        Lesson(
            type="error_pattern",
            trigger="sqlite locked when tests share one file",
            fix="give each test its own temporary database",
        )
    )
    store.save(  # shares words only with the excluded lesson's fix
        Lesson(type="tool_pattern", trigger="backoff jitter", fix="add jitter to the backoff")
    )
    for topic in ("vite proxy", "go modules", "react hooks", "pytest fixtures", "docker"):
        store.save(Lesson(type="tool_pattern", trigger=f"{topic} setup", fix=f"configure {topic}"))
    return store


def test_an_excluded_lesson_does_not_set_the_normalisation(home):
    store = _store_with_a_self_lesson(home)
    task = "sqlite database locked during concurrent writes"
    (top, *_) = store.recall(task, exclude_tags=("self",))
    assert "self" not in top.lesson.tags
    assert top.parts.relevance == pytest.approx(1.0)  # the best lesson it may return


def test_an_excluded_lesson_adds_no_feedback_terms(home):
    store = _store_with_a_self_lesson(home)
    task = "sqlite database locked during concurrent writes"
    triggers = [r.lesson.trigger for r in store.recall(task, exclude_tags=("self",))]
    assert "backoff jitter" not in triggers
    everything = [r.lesson.trigger for r in store.recall(task)]
    assert "backoff jitter" in everything  # the feedback reaches it otherwise
