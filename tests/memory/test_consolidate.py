"""Consolidation: retirement of lessons that keep backfiring, and merging restatements."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

import pytest

from memory import Lesson, LessonNotFound, MemoryStore
from memory.consolidate import RETIRE_CONFIDENCE, RETIRE_MIN_USES

ERROR = "sqlite database locked during tests"


def write_lines(path: Path, lessons: list[Lesson]) -> None:
    """Lines written as another tool would (no dedup on the way in)."""
    with path.open("a") as fh:
        for lesson in lessons:
            fh.write(lesson.model_dump_json() + "\n")


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def side(home: Path, kind: str) -> Path:
    return home / f"memory.jsonl.{kind}.jsonl"


@pytest.fixture
def store(home) -> MemoryStore:
    return MemoryStore(home / "memory.jsonl")


# ---------------------------------------------------------------- retirement
def test_a_used_lesson_penalised_below_the_floor_is_retired_not_deleted(store, home):
    worn = store.save(
        Lesson(type="error_pattern", trigger=ERROR, fix="retry", confidence=0.25, used=3)
    )
    assert store.penalize_backfired([worn.id], ERROR) == [worn.id]
    assert store.get(worn.id) is None
    (row,) = rows(side(home, "retired"))
    assert row["id"] == worn.id and row["confidence"] == pytest.approx(0.15)
    assert row["retired_at"] > 0 and "backfiring" in row["retired_reason"]
    assert [x.id for x in store.retired()] == [worn.id]
    assert worn.id not in {r["id"] for r in rows(home / "memory.jsonl")}


def test_a_young_lesson_is_not_retired_for_a_low_confidence(store):
    young = store.save(
        Lesson(type="error_pattern", trigger=ERROR, fix="retry", confidence=0.1, used=1)
    )
    store.penalize_backfired([young.id], ERROR)
    assert store.get(young.id).confidence == 0.0 and store.retired() == []
    assert RETIRE_MIN_USES == 3 and RETIRE_CONFIDENCE == 0.2


def test_retire_and_restore_round_trip(store, home):
    keep = store.save(Lesson(type="error_pattern", trigger="one thing", fix="a"))
    gone = store.save(
        Lesson(type="error_pattern", trigger="other thing", fix="b", confidence=0.05, used=4)
    )
    assert store.retire([gone.id, "nope"], "superseded") == [gone.id]
    assert [x.id for x in store.all()] == [keep.id]
    assert store.retired()[0].retired_reason == "superseded"
    back = store.restore(gone.id)
    assert back.id == gone.id and back.confidence == RETIRE_CONFIDENCE
    assert "retired_at" not in (back.__pydantic_extra__ or {})
    assert store.retired() == [] and rows(side(home, "retired")) == []
    assert {x.id for x in store.all()} == {keep.id, gone.id}
    with pytest.raises(LessonNotFound):
        store.restore(gone.id)


# ---------------------------------------------------------------- merging
def _dups(home: Path) -> list[Lesson]:
    lessons = [
        Lesson(id="a1", type="error_pattern", trigger="sqlite locked in pytest fixtures", fix="x"),
        Lesson(
            id="a2",
            type="error_pattern",
            trigger="sqlite locked in the pytest fixtures",
            fix="y",
            tags=["pytest"],
            used=2,
        ),
        Lesson(id="b1", type="error_pattern", trigger="port already in use", fix="z"),
        Lesson(id="b2", type="error_pattern", trigger="port already in use!", fix="w"),
        Lesson(id="c1", type="dependency", trigger="port already in use", fix="v"),
    ]
    write_lines(home / "memory.jsonl", lessons)
    return lessons


def test_consolidate_merges_restatements_by_the_dedup_rule_and_keeps_them_aside(store, home):
    _dups(home)
    report = store.consolidate()
    assert report.merged == [("a1", ["a2"]), ("b1", ["b2"])]  # c1: another type, kept
    assert (report.before, report.after, report.retired) == (5, 3, [])
    assert report.line() == "5 -> 3 lessons: merged 2 into 2, retired 0"
    kept = store.get("a1")
    assert kept.fix == "x" and kept.tags == ["pytest"] and kept.used == 2
    merged = rows(side(home, "merged"))
    assert [(r["id"], r["merged_into"]) for r in merged] == [("a2", "a1"), ("b2", "b1")]
    assert [r["id"] for r in rows(home / "memory.jsonl")] == ["a1", "b1", "c1"]


def test_consolidate_among_given_ids_only(store, home):
    _dups(home)
    report = store.consolidate(ids=["b1", "b2", "a1", "missing"])
    assert report.merged == [("b1", ["b2"])] and report.after == 4


def test_consolidate_retires_what_is_below_the_floor(store, home):
    write_lines(
        home / "memory.jsonl",
        [Lesson(id="w", type="error_pattern", trigger="t", fix="f", confidence=0.1, used=5)],
    )
    report = store.consolidate()
    assert report.retired == ["w"] and report.after == 0
    assert rows(side(home, "retired"))[0]["id"] == "w"


def test_dry_run_reports_and_writes_nothing(store, home):
    _dups(home)
    before = (home / "memory.jsonl").read_bytes()
    report = store.consolidate(dry_run=True)
    assert report.merged == [("a1", ["a2"]), ("b1", ["b2"])] and report.dry_run
    assert "dry run" in report.line()
    assert (home / "memory.jsonl").read_bytes() == before
    assert not side(home, "merged").exists() and not side(home, "retired").exists()
    assert store.get("a1").tags == []  # the stored lessons were not touched either


def test_real_corpus_consolidation_loses_no_line(corpus_home):
    path = corpus_home / "memory.jsonl"
    lines = path.read_text().splitlines()
    for n in (100, 101, 102):  # three lessons worn out: used, then backfiring (edited by hand)
        row = json.loads(lines[n])
        row.update(confidence=0.1, used=5)
        lines[n] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    original = [x.id for x in MemoryStore(path).all()]
    assert len(original) == 403
    worn = original[100:103]
    snapshot = path.read_bytes()
    dry = MemoryStore(path).consolidate(dry_run=True)
    assert path.read_bytes() == snapshot
    assert not side(corpus_home, "merged").exists()
    assert not side(corpus_home, "retired").exists()
    report = MemoryStore(path).consolidate()
    assert report.model_dump(exclude={"dry_run"}) == dry.model_dump(exclude={"dry_run"})
    assert set(worn) <= set(report.retired) and report.merged
    where: dict[str, list[str]] = {}
    for kind, file in (
        ("memory", path),
        ("retired", side(corpus_home, "retired")),
        ("merged", side(corpus_home, "merged")),
    ):
        for row in rows(file):
            where.setdefault(row["id"], []).append(kind)
    assert sorted(where) == sorted(original)
    assert all(len(places) == 1 for places in where.values())
    assert (
        report.after
        == len(rows(path))
        == 403 - len(report.retired) - sum(len(ids) for _, ids in report.merged)
    )


# ---------------------------------------------------------------- concurrency
N_SAVES = 150


def _saver(path: str, barrier) -> None:
    store = MemoryStore(path)
    barrier.wait(timeout=60)
    for i in range(N_SAVES):
        store.save(Lesson(type="tool_pattern", trigger=f"saver lesson{i} topic{i * 7}", fix="f"))


def test_saving_in_another_process_while_consolidating_loses_nothing(home):
    path = home / "memory.jsonl"
    pairs = []
    for i in range(100):
        pairs += [
            Lesson(id=f"k{i}", type="error_pattern", trigger=f"pitfall{i} with module{i}", fix="a"),
            Lesson(
                id=f"d{i}", type="error_pattern", trigger=f"pitfall{i} with module{i}!", fix="b"
            ),
        ]
    write_lines(path, pairs)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    proc = ctx.Process(target=_saver, args=(str(path), barrier))
    proc.start()
    store = MemoryStore(path)
    barrier.wait(timeout=60)
    merged = 0
    for i in range(0, 100, 10):  # several consolidations interleaved with the saves
        ids = [f"k{j}" for j in range(i, i + 10)] + [f"d{j}" for j in range(i, i + 10)]
        merged += sum(len(m) for _, m in store.consolidate(ids).merged)
    proc.join(timeout=120)
    assert proc.exitcode == 0
    live = rows(path)
    triggers = {r["trigger"] for r in live}
    assert merged == 100
    assert all(f"saver lesson{i} topic{i * 7}" in triggers for i in range(N_SAVES))
    assert {r["id"] for r in live} >= {f"k{i}" for i in range(100)}
    assert len(live) == 100 + N_SAVES
    assert [r["id"] for r in rows(side(home, "merged"))] == [f"d{i}" for i in range(100)]
