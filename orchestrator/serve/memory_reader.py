"""The dashboard's reader of the home's memory: lessons, budgets, and what is worked out of
them, read without writing anything.

**Read only.** The stores cadillac writes with take a lock file to read a changed file
(``memory.jsonl.lock``) and save an index snapshot beside a large memory
(``memory.jsonl.index.npz``); the server does neither. :class:`ReadOnlyJsonl` is
:class:`memory.jsonl.JsonlFile` reading without the lock (as a reader of a read-only
home does) and refusing every write; :class:`ReadOnlyStore` is :class:`memory.MemoryStore`
over it, loading a valid snapshot but never saving one. Recall, ids and budgets are then
the store's own: the page ranks with :meth:`MemoryStore.recall` (what ``cadillac memory
recall --explain`` prints) and budgets with :meth:`PhaseBudgets.compute_budgets` (what a
build's ``build_start`` event records). Notes and skills are read with
:meth:`NoteFolder.all` and :meth:`SkillBook.all`, which write nothing (the notes
catalog, which a read may rewrite, is never asked for).

**Scale.** One reader per application (``app.state``) keeps the parsed files: a request
on an unchanged file costs a ``stat`` (the stores' cache is keyed on the file's inode, size
and mtime, and takes in only what was appended). What the pages work out of a file (the
lessons sorted and filtered, the budgets of a tag set) is kept in :class:`Answers` while
the file's (mtime_ns, size) stays the same. A page renders one page of rows.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request

from memory import MemoryStore, PhaseBudgets, snapshot
from memory.budgets import Budget, BudgetRow
from memory.consolidate import side_path
from memory.index import LessonIndex
from memory.jsonl import JsonlFile
from memory.lesson import Lesson
from phases import DEFAULT_ROUNDS

SORTS = {
    "newest": None,
    "oldest": None,
    "confidence": lambda x: -x.confidence,
    "used": lambda x: -x.used,
    "backfired": lambda x: -x.backfired,
}
RECALL_MAX = 100
TAG_SETS_SHOWN = 20
"""Of the history's tag sets, the most rows first, how many the budgets page works out."""


class WriteRefused(PermissionError):
    """The dashboard reads the home; it never writes it."""


class _NoLock:
    def __enter__(self):
        raise WriteRefused("cadillac serve never writes the home")

    def __exit__(self, *exc) -> None:
        return None

    acquire = __enter__

    def release(self) -> None:
        return None


class ReadOnlyJsonl(JsonlFile):
    """A JSONL store read without its lock file; every write raises :class:`WriteRefused`."""

    def __init__(self, path, model):
        super().__init__(path, model)
        self.lock = _NoLock()  # type: ignore[assignment]

    def refresh(self):
        return self.refresh_locked()

    def _refuse_read_only(self) -> None:  # the check every append and rewrite makes first
        raise WriteRefused("cadillac serve never writes the home")


class ReadOnlyStore(MemoryStore):
    """The memory's store over :class:`ReadOnlyJsonl`; a snapshot is loaded, never saved."""

    def __init__(self, path):
        super().__init__(path)
        self.file = ReadOnlyJsonl(path, Lesson)

    def _full_index(self, lessons: list[Lesson]) -> LessonIndex:
        if len(lessons) >= snapshot.MIN_LESSONS:
            index = snapshot.load(snapshot.snapshot_path(self.path), lessons)
            if index is not None:
                return index
        return LessonIndex(lessons)


def stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class Answers:
    """The last few answers worked out of one file, forgotten when its (mtime_ns, size)
    changes."""

    def __init__(self, path: Path, size: int = 16):
        self.path, self.size = path, size
        self.stamp: tuple[int, int] | None = None
        self.kept: OrderedDict[tuple, Any] = OrderedDict()

    def get(self, key: tuple, work: Callable[[], Any]) -> Any:
        now = stamp(self.path)
        if now != self.stamp:
            self.kept.clear()
            self.stamp = now
        if key in self.kept:
            self.kept.move_to_end(key)
            return self.kept[key]
        answer = self.kept[key] = work()
        while len(self.kept) > self.size:
            self.kept.popitem(last=False)
        return answer


class MemoryReader:
    """What the memory pages read of one home, parsed once and kept while unchanged; one
    request at a time (the stores are not made for threads)."""

    def __init__(self, home):
        self.lock = threading.Lock()
        self.store = ReadOnlyStore(home.memory_path)
        self.retired_file = ReadOnlyJsonl(side_path(self.store.file, "retired"), Lesson)
        self.merged_file = ReadOnlyJsonl(side_path(self.store.file, "merged"), Lesson)
        self.history = PhaseBudgets(home.budgets_path, DEFAULT_ROUNDS)
        self.history.file = ReadOnlyJsonl(home.budgets_path, BudgetRow)
        self.listings = Answers(home.memory_path)
        self.budget_sets = Answers(home.budgets_path, size=2 * TAG_SETS_SHOWN)

    def lessons(self, sort: str, kind: str | None, polarity: str | None, words: list[str]):
        """The lessons in ``sort`` order that the filters let through (paging through a
        filter on a large memory works it out once)."""

        def ordered() -> list[Lesson]:
            everything = self.store.all() if self.listings.stamp else []
            if sort == "newest":
                return everything[::-1]
            return sorted(everything, key=SORTS[sort]) if SORTS[sort] else everything

        def filtered() -> list[Lesson]:
            return [
                x
                for x in self.listings.get((sort,), ordered)
                if kind in (None, x.type)
                and polarity in (None, x.polarity)
                and all(w in _hay(x) for w in words)
            ]

        with self.lock:
            everything = self.listings.get((sort,), ordered)
            if not (kind or polarity or words):
                return everything, len(everything)
            return self.listings.get((sort, kind, polarity, *words), filtered), len(everything)

    def recall(self, task: str, limit: int, scorer: str):
        with self.lock:
            return self.store.recall(task, limit=limit, scorer=scorer)

    def get(self, lesson_id: str) -> tuple[Lesson | None, str]:
        """The lesson and where it is: ``""`` (in use), ``retired`` or ``merged``."""
        with self.lock:
            lesson = self.store.get(lesson_id)
            if lesson is not None:
                return lesson, ""
            for state, file in (("retired", self.retired_file), ("merged", self.merged_file)):
                file.refresh()
                found = [x for x in file.records if x.id == lesson_id]
                if found:
                    return found[-1], state
        return None, ""

    def retired(self) -> list[Lesson]:
        with self.lock:
            self.retired_file.refresh()
            return list(self.retired_file.records)

    def budgets(self, tags: list[str]) -> dict[str, Budget]:
        """Each phase's budget for ``tags`` as a build would get it now."""
        with self.lock:
            return self.budget_sets.get(
                ("budgets", *tags), lambda: self.history.compute_budgets(tags)
            )

    def tag_sets(self) -> tuple[int, list[tuple[tuple[str, ...], int]]]:
        """(the history's rows, its tag sets with their rows, most rows first)."""

        def count():
            rows = self.history.rows()
            counts = Counter(tuple(sorted(row.tags)) for row in rows if row.tags)
            return len(rows), sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

        with self.lock:
            return self.budget_sets.get(("sets",), count)


_READERS = threading.Lock()


def reader(request: Request) -> MemoryReader:
    return reader_of(request.app.state)


def reader_of(state) -> MemoryReader:
    """The application's one reader (made on first use)."""
    with _READERS:
        found = getattr(state, "memory_reader", None)
        if found is None:
            found = state.memory_reader = MemoryReader(state.home)
        return found


def warm(state) -> None:
    """Read the lessons once before anyone asks (the server starts this in a thread): the
    first visit to the memory page of a large memory then costs what a later one does.
    Whatever goes wrong here is left for that visit to say."""
    with contextlib.suppress(Exception):  # a page says it, in its own words
        reader_of(state).lessons("newest", None, None, [])


def _hay(x: Lesson) -> str:
    return " ".join((x.id, x.trigger, x.fix, " ".join(x.tags), x.source_task)).lower()
