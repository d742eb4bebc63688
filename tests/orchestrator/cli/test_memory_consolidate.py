"""``cadillac memory consolidate``, ``list --retired`` and ``restore`` on the real corpus."""

from __future__ import annotations

import json

from memory import Lesson, MemoryStore
from tests.conftest import CORPUS_LESSONS
from tests.support import one_error_line, run


def _ids(path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()]


def test_a_dry_run_writes_nothing_and_a_real_one_loses_no_lesson(capsys, corpus_home):
    memory = corpus_home / "memory.jsonl"
    before = memory.read_bytes()
    original = [x.id for x in MemoryStore(memory).all()]
    memory.write_bytes(before)  # the ids the store gave the lines are not written yet
    code, out, err = run(capsys, "memory", "consolidate", "--dry-run", "--json")
    assert code == 0 and err == ""
    report = json.loads(out)
    assert report["dry_run"] and report["before"] == 403 and report["after"] < 403
    assert memory.read_bytes() == before
    assert not (corpus_home / "memory.jsonl.merged.jsonl").exists()

    code, out, err = run(capsys, "memory", "consolidate")
    assert code == 0 and err == ""
    assert out.splitlines()[0].startswith(f"403 -> {report['after']} lessons: merged")
    kept = _ids(memory)
    merged = _ids(corpus_home / "memory.jsonl.merged.jsonl")
    retired = _ids(corpus_home / "memory.jsonl.retired.jsonl")
    assert len(kept) == report["after"] and len(merged) == 403 - report["after"]
    assert sorted(kept + merged + retired) == sorted(original)
    assert len(CORPUS_LESSONS.read_text().splitlines()) == 403


def test_a_lesson_that_keeps_backfiring_is_retired_listed_and_restored(capsys, home):
    store = MemoryStore(home / "memory.jsonl")
    bad = store.save(
        Lesson(
            type="tool_pattern",
            trigger="pip install without a pin",
            fix="pin nothing",
            confidence=0.25,
            used=4,
        )
    )
    store.penalize_backfired([bad.id], "pip install without a pin broke the build")
    assert store.get(bad.id) is None

    code, out, _ = run(capsys, "memory", "list", "--retired", "--json")
    assert code == 0
    listed = json.loads(out)
    assert [x["id"] for x in listed] == [bad.id] and listed[0]["retired_reason"]

    code, out, _ = run(capsys, "memory", "restore", bad.id)
    assert code == 0 and out.startswith(f"restored {bad.id} at confidence 0.2")
    assert MemoryStore(home / "memory.jsonl").get(bad.id) is not None
    code, out, err = run(capsys, "memory", "restore", bad.id)
    assert code == 1 and out == "" and one_error_line(err) and "no retired lesson" in err
