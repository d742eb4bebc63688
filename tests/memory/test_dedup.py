"""Dedup on save: the 70% trigger overlap rule, what a merge keeps, and the indexed lookup."""

from __future__ import annotations

import random

import pytest

from memory import Lesson, MemoryStore
from memory.dedup import MERGE_THRESHOLD, find_duplicate, jaccard
from memory.index import LessonIndex
from memory.tokens import term_set


def lesson(trigger: str, **kw) -> Lesson:
    return Lesson(
        type=kw.pop("type", "error_pattern"), trigger=trigger, fix=kw.pop("fix", "f"), **kw
    )


@pytest.fixture
def store(home) -> MemoryStore:
    return MemoryStore(home / "memory.jsonl")


def test_overlap_above_70_percent_merges(store):
    # 8 shared of 10 distinct terms: 0.8
    a = store.save(lesson("alpha bravo charlie delta echo foxtrot golf hotel india"))
    stored, merged = store.add(lesson("alpha bravo charlie delta echo foxtrot golf hotel juliet"))
    assert merged and stored.id == a.id
    assert len(store.all()) == 1


def test_overlap_of_exactly_70_percent_does_not_merge(store):
    # 7 shared of 10 distinct terms: exactly 0.7, which is not "more than 70%"
    first = "alpha bravo charlie delta echo foxtrot golf hotel india"
    second = "alpha bravo charlie delta echo foxtrot golf kilo"
    assert jaccard(term_set(first), term_set(second)) == pytest.approx(MERGE_THRESHOLD)
    store.save(lesson(first))
    _, merged = store.add(lesson(second))
    assert not merged and len(store.all()) == 2


def test_type_and_polarity_must_match(store):
    store.save(lesson("flask app context missing in tests"))
    assert not store.add(lesson("flask app context missing in tests", type="architecture"))[1]
    assert not store.add(lesson("flask app context missing in tests", polarity="dont"))[1]
    assert len(store.all()) == 3


def test_merge_keeps_the_stored_wording_and_combines_the_rest(store):
    old = store.save(
        lesson(
            "sqlite database locked during parallel tests",
            fix="old fix",
            tags=["sqlite"],
            confidence=0.4,
            used=2,
            ts=100.0,
        )
    )
    new = lesson(
        "sqlite database locked during the parallel tests",
        fix="new fix",
        tags=["python", "sqlite"],
        confidence=0.9,
        used=1,
        source_task="flask todo api",
        last_used_ts=500.0,
        origin="import",
    )
    merged = store.save(new)
    assert merged.id == old.id
    assert (merged.trigger, merged.fix, merged.ts) == (old.trigger, "old fix", 100.0)
    assert merged.tags == ["sqlite", "python"]
    assert merged.confidence == 0.9 and merged.used == 3
    assert merged.source_task == "flask todo api" and merged.last_used_ts == 500.0
    again = MemoryStore(store.path).get(old.id)
    assert again.model_dump() == merged.model_dump()
    assert again.model_extra == {"origin": "import"}


def test_indexed_lookup_agrees_with_a_full_scan():
    rng = random.Random(7)
    words = [f"w{i}" for i in range(60)]
    lessons = [lesson(" ".join(rng.sample(words, rng.randint(3, 9)))) for _ in range(400)]
    for i, item in enumerate(lessons):
        item.id = f"{i:08x}"
    index = LessonIndex(lessons)
    for _ in range(300):
        base = rng.choice(lessons).trigger.split()
        variant = base[:-1] if len(base) > 3 and rng.random() < 0.5 else base + [rng.choice(words)]
        probe = lesson(" ".join(variant))
        found = find_duplicate(index, probe)
        scores = [
            (jaccard(term_set(probe.trigger), term_set(x.trigger)), -i)
            for i, x in enumerate(lessons)
        ]
        best_score, best_slot = max(scores)
        if best_score > MERGE_THRESHOLD:
            assert found is lessons[-best_slot]
        else:
            assert found is None
