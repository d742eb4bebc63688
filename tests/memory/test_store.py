"""MemoryStore on the real corpus and on small hand-made files: load, ids, save, reinforce."""

from __future__ import annotations

import json
import time

import pytest
from pydantic import ValidationError

from memory import Lesson, LessonNotFound, MemoryStore
from memory.lesson import content_id
from tests.conftest import CORPUS_LESSONS


def lesson(trigger: str, fix: str = "do the thing", **kw) -> Lesson:
    return Lesson(type=kw.pop("type", "error_pattern"), trigger=trigger, fix=fix, **kw)


def file_rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------- the real corpus
def test_corpus_loads_without_loss(corpus_home):
    source = [json.loads(line) for line in CORPUS_LESSONS.read_text().splitlines()]
    store = MemoryStore(corpus_home / "memory.jsonl")
    lessons = store.all()
    assert len(lessons) == len(source) == 403
    assert not store.file.rejected
    for row, loaded in zip(source, lessons, strict=True):
        dumped = loaded.model_dump()
        assert {k: dumped[k] for k in row} == row
    ids = [x.id for x in lessons]
    assert len(set(ids)) == 403 and all(len(i) == 8 for i in ids)


def test_corpus_stats_match_the_seed_header(corpus_home):
    stats = MemoryStore(corpus_home / "memory.jsonl").stats()
    assert stats.headline() == (
        "403 lessons, 222 do / 181 dont, 98.8% reuse rate, avg confidence 0.945"
    )
    assert sum(stats.by_type.values()) == 403
    assert stats.by_type["error_pattern"] == 259


def test_ids_are_stable_across_loads_and_get_stored_by_the_first_rewrite(corpus_home):
    path = corpus_home / "memory.jsonl"
    first = [x.id for x in MemoryStore(path).all()]
    assert [x.id for x in MemoryStore(path).all()] == first
    assert "id" not in file_rows(path)[0]
    store = MemoryStore(path)
    store.boost_confidence([first[5]])
    rows = file_rows(path)
    assert [r["id"] for r in rows] == first
    assert [x.id for x in MemoryStore(path).all()] == first


def test_a_rewrite_keeps_every_original_field_and_unknown_extras(home):
    path = home / "memory.jsonl"
    row = {
        "ts": 1.5,
        "type": "dependency",
        "trigger": "pin numpy",
        "fix": "numpy<3",
        "confidence": 0.7,
        "used": 2,
        "polarity": "do",
        "tags": ["python"],
        "origin": {"team": "infra"},
        "note": "kept",
    }
    path.write_text(json.dumps(row) + "\n")
    store = MemoryStore(path)
    store.save(lesson("something unrelated entirely"))
    store.forget(store.all()[1].id)  # forces a rewrite
    (kept,) = file_rows(path)
    assert {k: kept[k] for k in row} == row


def test_collision_of_content_ids_is_resolved_deterministically(home):
    a = lesson("same", ts=1.0)
    taken = {content_id(a)}
    from memory.lesson import assign_id

    assert assign_id(a, taken) != content_id(a)
    assert assign_id(lesson("same", ts=1.0), taken) == a.id


# ---------------------------------------------------------------- schema
def test_lesson_schema_rules():
    long = "x" * 500
    made = lesson("t", source_task=long, tags=["Python", "python", " flask "])
    assert len(made.source_task) == 200
    assert made.tags == ["python", "flask"]
    with pytest.raises(ValidationError):
        lesson("t", confidence=1.5)
    with pytest.raises(ValidationError):
        Lesson(type="guess", trigger="t", fix="f")
    with pytest.raises(ValidationError):
        lesson("t", polarity="maybe")


# ---------------------------------------------------------------- save, get, forget
def test_save_assigns_an_id_and_get_finds_it(home):
    store = MemoryStore(home / "memory.jsonl")
    saved = store.save(lesson("flask app factory missing", tags=["flask"]))
    assert saved.id and store.get(saved.id) == saved
    assert file_rows(home / "memory.jsonl")[0]["id"] == saved.id
    assert store.get("deadbeef") is None


def test_forget_removes_only_that_lesson(home):
    store = MemoryStore(home / "memory.jsonl")
    a = store.save(lesson("alpha beta gamma"))
    b = store.save(lesson("delta epsilon zeta"))
    assert store.forget(a.id).id == a.id
    assert [x.id for x in store.all()] == [b.id]
    assert [r["id"] for r in file_rows(home / "memory.jsonl")] == [b.id]
    assert store.recall("alpha beta gamma") == []
    with pytest.raises(LessonNotFound):
        store.forget(a.id)


def test_a_second_store_sees_the_first_ones_writes(home):
    path = home / "memory.jsonl"
    one, two = MemoryStore(path), MemoryStore(path)
    a = one.save(lesson("sqlite locked under concurrent writes", tags=["sqlite"]))
    assert two.get(a.id) is not None
    one.boost_confidence([a.id])
    assert two.get(a.id).used == 1
    one.forget(a.id)
    assert two.all() == []


# ---------------------------------------------------------------- reinforcement
def test_boost_adds_confidence_clamped_at_one_and_counts_use(home):
    store = MemoryStore(home / "memory.jsonl")
    low = store.save(lesson("low confidence lesson here", confidence=0.3))
    high = store.save(lesson("nearly certain lesson there", confidence=0.95))
    before = time.time()
    assert store.boost_confidence([low.id, high.id, "missing0"]) == [low.id, high.id]
    fresh = MemoryStore(home / "memory.jsonl")
    assert fresh.get(low.id).confidence == pytest.approx(0.4)
    assert fresh.get(high.id).confidence == 1.0
    assert fresh.get(low.id).used == 1 and fresh.get(high.id).used == 1
    assert fresh.get(low.id).last_used_ts >= before
    store.boost_confidence([high.id])
    assert MemoryStore(home / "memory.jsonl").get(high.id).confidence == 1.0


def test_penalize_backfired_hits_only_lessons_whose_trigger_the_error_echoes(home):
    store = MemoryStore(home / "memory.jsonl")
    hit = store.save(lesson("aiosqlite connection closed before commit", confidence=0.5))
    miss = store.save(lesson("vitest jsdom environment missing", confidence=0.5))
    floor = store.save(lesson("pytest fixture scope session leaks", confidence=0.05))
    error = "sqlite3.ProgrammingError: aiosqlite connection closed; commit failed; fixture leaks"
    penalised = store.penalize_backfired([hit.id, miss.id, floor.id], error)
    assert penalised == [hit.id]
    assert store.get(hit.id).confidence == pytest.approx(0.4)
    assert store.get(miss.id).confidence == 0.5
    assert store.penalize_backfired([floor.id], "pytest fixture scope session leaks") == [floor.id]
    assert store.get(floor.id).confidence == 0.0
    assert store.penalize_backfired([hit.id], "") == []


def test_recall_sees_a_save_at_once(home):
    store = MemoryStore(home / "memory.jsonl")
    assert store.recall("flask blueprint registration") == []
    saved = store.save(lesson("flask blueprint registration order", tags=["flask"]))
    assert [r.lesson.id for r in store.recall("flask blueprint registration")] == [saved.id]


def test_unchanged_file_is_not_read_again(corpus_home):
    store = MemoryStore(corpus_home / "memory.jsonl")
    first = store.all()
    store.recall("flask sqlite")
    assert all(a is b for a, b in zip(first, store.all(), strict=True))


# ---------------------------------------------------------------- the file itself
def test_a_read_only_memory_refuses_every_write_and_keeps_serving_the_file(home):
    path = home / "memory.jsonl"
    store = MemoryStore(path)
    a = store.save(lesson("sqlite database is locked under load", confidence=0.5))
    b = store.save(lesson("vite dev server port already in use"))
    path.chmod(0o444)  # root honours it too
    before = path.read_bytes()
    attempts = [
        lambda: store.forget(a.id),
        lambda: store.boost_confidence([a.id]),
        lambda: store.penalize_backfired([a.id], "sqlite database is locked"),
        lambda: store.save(lesson("sqlite database is locked under load")),  # a merge: rewrite
        lambda: store.save(lesson("a brand new lesson about cargo features")),  # an append
    ]
    for attempt in attempts:
        with pytest.raises(PermissionError, match="read-only") as caught:
            attempt()
        assert "\n" not in str(caught.value) and str(path) in str(caught.value)
        assert path.read_bytes() == before
    assert [x.id for x in store.all()] == [a.id, b.id]
    assert store.get(a.id).confidence == 0.5 and store.get(a.id).used == 0  # nothing half-done
    assert [r.lesson.id for r in store.recall("sqlite database locked")][:1] == [a.id]


def test_a_symlinked_memory_stays_a_link_after_forget_and_boost(home, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (home / "memory.jsonl").symlink_to(shared / "memory.jsonl")
    store = MemoryStore(home / "memory.jsonl")
    a = store.save(lesson("docker layer cache busted by copy order"))
    b = store.save(lesson("pnpm workspace hoisting breaks jest"))
    store.forget(a.id)
    store.boost_confidence([b.id])
    assert (home / "memory.jsonl").is_symlink()
    assert [r["id"] for r in file_rows(shared / "memory.jsonl")] == [b.id]
    assert MemoryStore(shared / "memory.jsonl").get(b.id).used == 1


def test_a_memory_file_that_starts_with_a_byte_order_mark_loses_no_lesson(home):
    path = home / "memory.jsonl"
    rows = [lesson("first lesson after the mark"), lesson("second lesson in the file")]
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(x.model_dump_json().encode() + b"\n" for x in rows))
    store = MemoryStore(path)
    assert [x.trigger for x in store.all()] == [x.trigger for x in rows]
    assert not store.file.rejected
    store.boost_confidence([store.all()[0].id])
    assert not path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert [r["trigger"] for r in file_rows(path)] == [x.trigger for x in rows]
