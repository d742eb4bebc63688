"""The vectorised index agrees with the plain functions, and snapshots agree with full builds."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from memory import Lesson, MemoryStore, infer_tags_from_text, snapshot
from memory.index import LessonIndex, tag_mask
from memory.tokens import term_set, terms
from tests.conftest import CORPUS_LESSONS


@pytest.fixture
def corpus() -> list[Lesson]:
    lessons = [Lesson.model_validate_json(line) for line in CORPUS_LESSONS.read_text().splitlines()]
    for i, lesson in enumerate(lessons):
        lesson.id = f"c{i:07d}"
    return lessons


def test_bulk_and_one_by_one_indexing_agree_with_the_plain_functions(corpus):
    bulk = LessonIndex(corpus)
    single = LessonIndex()
    for lesson in corpus:
        single.add(lesson)
    for index in (bulk, single):
        for slot, lesson in enumerate(corpus):
            assert index.content_mask.values[slot] == tag_mask(infer_tags_from_text(lesson.text))
            expected = Counter(terms(f"{lesson.text} {' '.join(lesson.tags)}"))
            assert index.doc_len.values[slot] == sum(expected.values())
            assert index.n_distinct.values[slot] == len(expected)
        for term in ("sqlite", "flask", "pytest", "fixtur", "tsconfig"):
            slots, tf = index.postings(term)
            want = {
                i: Counter(terms(f"{x.text} {' '.join(x.tags)}"))[term]
                for i, x in enumerate(corpus)
            }
            assert dict(zip(slots.tolist(), tf.tolist(), strict=True)) == {
                i: c for i, c in want.items() if c
            }
            trig = {i for i, x in enumerate(corpus) if term in term_set(x.trigger)}
            assert set(index.trigger_slots(term).tolist()) == trig
            assert index.document_frequency(term) == sum(1 for c in want.values() if c)


def test_removal_updates_document_frequencies(corpus):
    index = LessonIndex(corpus[:50])
    before = index.document_frequency("sqlite")
    victim = next(x for x in corpus[:50] if "sqlite" in term_set(x.text))
    index.remove(victim.id)
    assert index.document_frequency("sqlite") == before - 1
    assert index.n_alive == 49


def write(path, lessons):
    path.write_text("".join(x.model_dump_json() + "\n" for x in lessons))


@pytest.fixture
def small_snapshots(monkeypatch):
    monkeypatch.setattr(snapshot, "MIN_LESSONS", 10)


def recalls(store: MemoryStore) -> list[list[str]]:
    tasks = [
        "Build a Flask todo API with SQLite",
        "React TypeScript dashboard with vitest",
        "pygame snake game",
        "asyncio IRC server",
    ]
    return [[r.lesson.id for r in store.recall(t, now=1.8e9)] for t in tasks]


def test_a_snapshot_gives_the_same_index_as_a_full_build(home, corpus, small_snapshots):
    path = home / "memory.jsonl"
    write(path, corpus)
    first = MemoryStore(path)
    expected = recalls(first)
    assert snapshot.snapshot_path(path).exists()
    restored = snapshot.load(snapshot.snapshot_path(path), MemoryStore(path).all())
    assert restored is not None
    for name in ("doc_len", "n_distinct", "content_mask", "src_mask", "tags_closure"):
        assert np.array_equal(getattr(restored, name).values, getattr(first._index, name).values)
    second = MemoryStore(path)
    assert recalls(second) == expected
    dup = corpus[7].model_copy(update={"id": ""})
    assert second.add(dup) == (second.get(corpus[7].id), True)


def test_appends_and_boosts_keep_the_snapshot_in_use(home, corpus, small_snapshots):
    path = home / "memory.jsonl"
    write(path, corpus[:300])
    MemoryStore(path).all()
    store = MemoryStore(path)
    store.boost_confidence([corpus[3].id])
    for lesson in corpus[300:330]:
        store.save(lesson)
    fresh = MemoryStore(path).all()
    restored = snapshot.load(snapshot.snapshot_path(path), fresh)
    assert restored is not None and restored.n_alive == 330
    assert restored.confidence.values[3] == pytest.approx(min(1.0, corpus[3].confidence + 0.1))
    full = LessonIndex(fresh)
    assert np.array_equal(restored.doc_len.values, full.doc_len.values)
    store_a, store_b = MemoryStore(path), MemoryStore(path)
    snapshot_path = snapshot.snapshot_path(path)
    snapshot_path.unlink()
    assert recalls(store_a) == recalls(store_b)


def test_a_changed_lesson_or_tokenizer_or_damage_means_a_full_build(
    home, corpus, small_snapshots, monkeypatch
):
    path = home / "memory.jsonl"
    write(path, corpus[:100])
    MemoryStore(path).all()
    snap = snapshot.snapshot_path(path)
    lessons = MemoryStore(path).all()
    assert snapshot.load(snap, lessons) is not None
    changed = [x.model_copy() for x in lessons]
    changed[5] = changed[5].model_copy(update={"tags": [*changed[5].tags, "rust"]})
    assert snapshot.load(snap, changed) is None
    assert snapshot.load(snap, lessons[:50]) is None  # lessons were removed
    monkeypatch.setattr(snapshot, "FORMAT", 99)
    assert snapshot.load(snap, lessons) is None
    monkeypatch.undo()
    snap.write_bytes(b"not a zip file")
    assert snapshot.load(snap, lessons) is None
    assert recalls(MemoryStore(path)) == recalls(MemoryStore(path))
    json.loads(path.read_text().splitlines()[0])  # the memory file itself is untouched


def test_builds_join_by_source_or_tags_within_the_hour_and_agree_when_asked_in_parts():
    from memory.index import BUILD_WINDOW

    t = 1_000_000.0

    def lesson(i, ts, source="", tags=()):
        return Lesson(
            id=f"b{i:07d}",
            ts=ts,
            type="tool_pattern",
            trigger=f"t{i}",
            fix="f",
            source_task=source,
            tags=list(tags),
        )

    lessons = [
        lesson(0, t, source="a flask api"),
        lesson(1, t + 60, source="a flask api"),  # same build
        lesson(2, t + 30, tags=["flask", "sqlite"]),
        lesson(3, t + 90, tags=["sqlite", "flask"]),  # same tags, other order: same build
        lesson(4, t + 100),  # untagged, no source: a build of its own
        lesson(5, t + 110),
        lesson(6, t + BUILD_WINDOW + 1, source="a flask api"),  # over the hour: a new build
        lesson(7, t + BUILD_WINDOW + 50, source="a flask api"),  # joins the new one
        lesson(8, t + 120, source="a react page", tags=["flask", "sqlite"]),  # source decides
    ]
    whole = LessonIndex(lessons).builds()
    b = whole.tolist()
    assert b[0] == b[1] and b[2] == b[3] and b[6] == b[7]
    assert len({b[0], b[2], b[4], b[5], b[6], b[8]}) == 6
    parts = LessonIndex(lessons[:4])
    parts.builds()  # asked before the rest arrive
    parts.add_many(lessons[4:])
    assert parts.builds().tolist() == b
    gone = LessonIndex(lessons)
    gone.remove(lessons[1].id)  # a forgotten slot still gets a build, of its own
    got = gone.builds().tolist()
    assert got[0] != got[1] and got[6] == got[7]


def test_stacks_are_read_from_tags_and_text_and_follow_additions_and_tag_changes(corpus):
    from memory.tags import lesson_stacks, stack_tags

    def expected(lesson):
        tags = frozenset(stack_tags(set(lesson.tags)))
        said = frozenset(stack_tags(infer_tags_from_text(lesson.text)))
        return tag_mask(lesson_stacks(tags, said))

    whole = LessonIndex(corpus)
    assert whole.stacks().tolist() == [expected(x) for x in corpus]
    narrowed = sum(
        1
        for x in corpus
        if expected(x) != tag_mask(stack_tags(set(x.tags)))  # the text ruled something out
    )
    assert narrowed >= 30  # 38 of the 403 when written
    parts = LessonIndex(corpus[:100])
    parts.stacks()  # asked before the rest arrive
    parts.add_many(corpus[100:])
    assert parts.stacks().tolist() == whole.stacks().tolist()
    front = Lesson(id="f0000001", type="error_pattern", trigger="main.tsx missing", fix="add it")
    parts.add(front)
    assert parts.stacks()[-1] == 0  # untagged: about no stack
    parts.update(front.model_copy(update={"tags": ["flask", "react"]}))  # a merge adds tags
    assert parts.stacks()[-1] == tag_mask({"react", "javascript"})
