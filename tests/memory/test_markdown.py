"""Lessons and notes to markdown and back: lossless on the real corpus, byte-identical twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory import Lesson, MemoryStore
from memory.markdown import ExportRefused, export_markdown, import_markdown, lesson_text
from memory.notes import Notebook, new_note
from memory.store import cleaned


def _book(root: Path) -> Notebook:
    return Notebook(root / "notes", root / "global")


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _dumps(store: MemoryStore) -> list[str]:
    return [json.dumps(lesson.model_dump(), ensure_ascii=False) for lesson in store.all()]


def test_the_real_corpus_round_trips_losslessly_and_a_second_export_is_identical(
    corpus_home, tmp_path
):
    store = MemoryStore(corpus_home / "memory.jsonl")
    book = _book(corpus_home)
    book.save(new_note("Use uv", name="uv", type="convention"))
    book.save(new_note("My name is Ann", name="me", type="identity", scope="global"))
    first = export_markdown(store, book, tmp_path / "x1")
    assert first.lessons == 403 and first.notes == {"home": 1, "global": 1}
    assert len(list((tmp_path / "x1" / "lessons").glob("*.md"))) == 403

    fresh = tmp_path / "fresh"
    again, again_book = MemoryStore(fresh / "memory.jsonl"), _book(fresh)
    report = import_markdown(again, again_book, tmp_path / "x1", scope=None)
    assert report.lessons.added == 403 and report.notes.added == 2 and report.problems == []
    # line by line, each text in NFKC (memory.text.clean): n² comes back as n2, ½ as 1/2
    imported, original = _dumps(MemoryStore(fresh / "memory.jsonl")), _dumps(store)
    assert imported == [
        json.dumps(cleaned(x).model_dump(), ensure_ascii=False) for x in store.all()
    ]
    assert sum(a != b for a, b in zip(imported, original, strict=True)) == 3
    assert again_book.get("uv") == book.get("uv") and again_book.get("me") == book.get("me")

    export_markdown(MemoryStore(fresh / "memory.jsonl"), again_book, tmp_path / "x2")
    first, second = _files(tmp_path / "x1"), _files(tmp_path / "x2")
    assert first.keys() == second.keys()
    assert sum(first[k] != second[k] for k in first if k.startswith("lessons/")) == 3
    third = tmp_path / "third"
    import_markdown(MemoryStore(third / "memory.jsonl"), _book(third), tmp_path / "x2", None)
    export_markdown(MemoryStore(third / "memory.jsonl"), _book(third), tmp_path / "x3")
    assert _files(tmp_path / "x3") == second  # once clean, a round trip changes no byte

    repeat = import_markdown(again, again_book, tmp_path / "x1", scope=None)
    assert (repeat.lessons.unchanged, repeat.notes.unchanged) == (403, 2)
    assert repeat.lessons.added == repeat.lessons.replaced == 0


def test_every_field_survives_unicode_newlines_extras_and_tag_order(home, tmp_path):
    store = MemoryStore(home / "memory.jsonl")
    odd = Lesson(
        id="0badcafe",
        ts=1712345678.1234567,
        type="dependency",
        trigger="naïve “quotes” — 日本語 🚀\nsecond line\n---\n  indented: yes",
        fix="line one\n\n  - a list?\n'single' \"double\" # not a comment\ttab\x07bell  ",
        confidence=0.7999999999999999,
        used=12345,
        polarity="dont",
        tags=["zeta", "alpha", "mid"],
        source_task="yes",
        last_used_ts=1e-05,
        reviewer={"name": "Ann", "nested": [1, 2.5, None, True, "0o12"]},
        note="null",
    )
    store.file.lock.acquire()
    store.file.refresh_locked()
    store.file.rewrite_locked([odd])
    store.file.lock.release()
    before = _dumps(MemoryStore(home / "memory.jsonl"))
    export_markdown(store, None, tmp_path / "out")
    other = MemoryStore(tmp_path / "other" / "memory.jsonl")
    import_markdown(other, None, tmp_path / "out")
    after = _dumps(MemoryStore(tmp_path / "other" / "memory.jsonl"))
    assert after == before
    loaded = json.loads(after[0])
    assert loaded["tags"] == ["zeta", "alpha", "mid"] and loaded["reviewer"]["nested"][4] == "0o12"
    text = (tmp_path / "out" / "lessons" / "0badcafe.md").read_text()
    assert "## When" in text and "## Never" in text and "reviewer:" in text


def test_a_broken_file_is_reported_and_the_rest_imported(corpus_home, tmp_path):
    store = MemoryStore(corpus_home / "memory.jsonl")
    export_markdown(store, None, tmp_path / "x")
    files = sorted((tmp_path / "x" / "lessons").glob("*.md"))
    files[0].write_text("---\nid: [unclosed\n---\n")
    files[1].write_text(files[1].read_text().replace("confidence:", "confidence: 7 #"))
    (tmp_path / "x" / "lessons" / "evil.md").write_text(
        "---\nid: !!python/object/apply:os.system ['true']\n---\n"
    )
    fresh = MemoryStore(tmp_path / "fresh" / "memory.jsonl")
    report = import_markdown(fresh, None, tmp_path / "x")
    assert report.lessons.added == 401 and len(report.problems) == 3
    assert any(p.startswith(f"{files[0]}: invalid YAML") for p in report.problems)
    evil = tmp_path / "x" / "lessons" / "evil.md"
    assert any(p.startswith(f"{evil}: invalid YAML") for p in report.problems)
    assert any(p.startswith(f"{files[1]}: confidence:") for p in report.problems)
    assert len(MemoryStore(tmp_path / "fresh" / "memory.jsonl").all()) == 401


def test_an_import_replaces_by_id_adds_new_and_loses_nothing_stored(corpus_home, tmp_path):
    store = MemoryStore(corpus_home / "memory.jsonl")
    export_markdown(store, None, tmp_path / "x")
    target = MemoryStore(tmp_path / "t" / "memory.jsonl")
    mine = target.save(Lesson(type="performance", trigger="only here", fix="kept"))
    first = store.all()[0]
    changed = first.model_copy(update={"fix": "an edited fix"})
    (tmp_path / "x" / "lessons" / f"{first.id}.md").write_text(lesson_text(changed))
    report = import_markdown(target, None, tmp_path / "x")
    assert (report.lessons.added, report.lessons.replaced) == (403, 0)
    report = import_markdown(target, None, tmp_path / "x")
    assert (report.lessons.unchanged, report.lessons.replaced) == (403, 0)
    (tmp_path / "x" / "lessons" / f"{first.id}.md").write_text(lesson_text(first))
    report = import_markdown(target, None, tmp_path / "x")
    assert report.lessons.replaced == 1
    lessons = MemoryStore(tmp_path / "t" / "memory.jsonl").all()
    assert lessons[0].id == mine.id and len(lessons) == 404
    assert MemoryStore(tmp_path / "t" / "memory.jsonl").get(first.id).fix == first.fix


def test_an_edited_body_is_said_to_be_ignored(home, tmp_path):
    store = MemoryStore(home / "memory.jsonl")
    lesson = store.save(Lesson(type="performance", trigger="slow loop", fix="vectorise"))
    export_markdown(store, None, tmp_path / "x")
    path = tmp_path / "x" / "lessons" / f"{lesson.id}.md"
    path.write_text(path.read_text().replace("## Do\n\nvectorise", "## Do\n\nsomething else"))
    report = import_markdown(MemoryStore(tmp_path / "t.jsonl"), None, tmp_path / "x")
    assert report.lessons.added == 1 and "body was edited and ignored" in report.notices[0]


def test_an_export_refuses_a_folder_that_is_not_empty_or_an_export(home, tmp_path):
    store = MemoryStore(home / "memory.jsonl")
    store.save(Lesson(type="performance", trigger="slow loop", fix="vectorise"))
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.tex").write_text("mine")
    with pytest.raises(ExportRefused, match="not empty and not an earlier export"):
        export_markdown(store, None, busy)
    assert _files(busy) == {"thesis.tex": b"mine"}
    export_markdown(store, None, tmp_path / "x")
    (tmp_path / "x" / "keep.txt").write_text("kept")
    gone = store.save(Lesson(type="dependency", trigger="pin numpy", fix="pin it"))
    export_markdown(store, None, tmp_path / "x")  # an earlier export: rewritten
    store.forget(gone.id)
    export_markdown(store, None, tmp_path / "x")
    assert not (tmp_path / "x" / "lessons" / f"{gone.id}.md").exists()
    assert (tmp_path / "x" / "keep.txt").read_text() == "kept"


def test_a_symlinked_lesson_file_is_not_followed_on_import(home, tmp_path):
    store = MemoryStore(home / "memory.jsonl")
    lesson = store.save(Lesson(type="performance", trigger="slow loop", fix="vectorise"))
    export_markdown(store, None, tmp_path / "x")
    real = tmp_path / "x" / "lessons" / f"{lesson.id}.md"
    moved = tmp_path / "elsewhere.md"
    real.rename(moved)
    real.symlink_to(moved)
    report = import_markdown(MemoryStore(tmp_path / "t.jsonl"), None, tmp_path / "x")
    assert report.lessons.added == 0 and "a symlink (not followed)" in report.problems[0]
