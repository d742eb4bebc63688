"""The memory page: the home's lessons (listed, filtered, recalled for a task), the retired
ones, the notes and skills of both scopes, and the phase budgets with the rows behind them.

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

import os
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import Route

from memory import MemoryStore, PhaseBudgets, snapshot
from memory.budgets import Budget, BudgetRow
from memory.consolidate import side_path
from memory.index import LessonIndex
from memory.jsonl import JsonlFile
from memory.lesson import LESSON_TYPES, Lesson
from memory.notes import SCOPES, BadNote, NoteFolder, check_name
from memory.recall import SCORERS
from memory.skills import NAME as SKILL_NAME
from memory.skills import SkillBook
from memory.tags import normalize_tags
from orchestrator.serve.render import page
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


def _stamp(path: Path) -> tuple[int, int] | None:
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
        stamp = _stamp(self.path)
        if stamp != self.stamp:
            self.kept.clear()
            self.stamp = stamp
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
    state = request.app.state
    with _READERS:
        found = getattr(state, "memory_reader", None)
        if found is None:
            found = state.memory_reader = MemoryReader(state.home)
        return found


def _hay(x: Lesson) -> str:
    return " ".join((x.id, x.trigger, x.fix, " ".join(x.tags), x.source_task)).lower()


def age(stamp: float | None, now: float) -> str:
    """How long ago, in the largest unit that is at least one."""
    if not stamp:
        return ""
    seconds = max(now - stamp, 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


def paged(request: Request, items: list) -> tuple[list, int, int, int]:
    """(the page's items, its number, the number of pages, where it starts)."""
    size = request.app.state.config.page_size
    try:
        number = max(1, int(request.query_params.get("page", "1")))
    except ValueError:
        number = 1
    pages = max(1, -(-len(items) // size))
    number = min(number, pages)
    start = (number - 1) * size
    return items[start : start + size], number, pages, start


# ---------------------------------------------------------------- lessons
def lessons_page(request: Request):
    q = request.query_params
    kind = q.get("type") if q.get("type") in LESSON_TYPES else None
    polarity = q.get("polarity") if q.get("polarity") in ("do", "dont") else None
    sort = q.get("sort") if q.get("sort") in SORTS else "newest"
    words = (q.get("q") or "").lower().split()
    memory = reader(request)
    found, total = memory.lessons(sort, kind, polarity, words)
    rows, number, pages, start = paged(request, found)
    chosen = {k: v for k, v in q.items() if k in ("type", "polarity", "q", "sort") and v}
    task = (q.get("task") or "").strip()
    scorer = q.get("scorer") if q.get("scorer") in SCORERS else "default"
    try:
        limit = min(max(1, int(q.get("limit") or 10)), RECALL_MAX)
    except ValueError:
        limit = 10
    recalled = memory.recall(task, limit, scorer) if task else None
    return page(
        request,
        "memory.html",
        title="Memory",
        rows=rows,
        total=total,
        shown=len(found),
        number=number,
        pages=pages,
        start=start,
        chosen=chosen,
        types=LESSON_TYPES,
        sorts=list(SORTS),
        task=task,
        scorer=scorer,
        scorers=list(SCORERS),
        limit=limit,
        recalled=recalled,
        memory_file=str(request.app.state.home.memory_path),
        now=time.time(),
        age=age,
    )


def lesson_page(request: Request):
    lesson_id = request.path_params["lesson_id"]
    lesson, state = reader(request).get(lesson_id)
    if lesson is None:
        raise HTTPException(404, f"no lesson with id {lesson_id!r} in this home's memory")
    fields = lesson.model_dump(mode="json")
    return page(
        request,
        "memory_lesson.html",
        title=f"Lesson {lesson.id}",
        lesson=lesson,
        fields=fields,
        state=state,
        now=time.time(),
        age=age,
    )


def retired_page(request: Request):
    found = reader(request).retired()[::-1]
    rows, number, pages, start = paged(request, found)
    return page(
        request,
        "memory_retired.html",
        title="Retired lessons",
        rows=rows,
        total=len(found),
        number=number,
        pages=pages,
        start=start,
        now=time.time(),
        age=age,
    )


# ---------------------------------------------------------------- notes
def _folders(home) -> dict[str, NoteFolder]:
    return {
        "home": NoteFolder(home.notes_dir, "home"),
        "global": NoteFolder(home.global_notes_dir, "global"),
    }


def notes_page(request: Request):
    scopes = {}
    for scope, folder in _folders(request.app.state.home).items():
        try:
            notes = folder.all()
        except BadNote as exc:  # a notes folder that is a symlink: refused, as cadillac does
            notes, folder.problems = [], [str(exc)]
        scopes[scope] = {"path": str(folder.path), "notes": notes, "problems": folder.problems}
    home_names = {n.name for n in scopes["home"]["notes"]}
    return page(
        request,
        "memory_notes.html",
        title="Notes",
        scopes=scopes,
        shadowed=home_names,
    )


def note_page(request: Request):
    name = request.path_params["name"]
    wanted = request.query_params.get("scope")
    try:
        check_name(name)
    except BadNote as exc:
        raise HTTPException(404, str(exc)) from None
    found, problems = {}, []
    for scope, folder in _folders(request.app.state.home).items():
        try:
            note = folder.get(name)
        except BadNote as exc:
            problems.append(str(exc))
            continue
        problems += folder.problems if note is None else []
        if note is not None:
            found[scope] = note
    scope = wanted if wanted in found else next(iter(found), None)
    if scope is None:
        why = f" ({'; '.join(problems)})" if problems else ""
        raise HTTPException(404, f"no note named {name!r} in either scope{why}")
    note = found[scope]
    return page(
        request,
        "memory_note.html",
        title=f"Note {name}",
        note=note,
        others=[s for s in SCOPES if s in found and s != scope],
        shadowed=scope == "global" and "home" in found,
    )


# ---------------------------------------------------------------- skills
def _book(home) -> SkillBook:
    return SkillBook(home.skills_dir, home.global_skills_dir)


def skills_page(request: Request):
    book = _book(request.app.state.home)
    scopes = {}
    for scope, path in book.dirs.items():
        skills = book.all(include_set_aside=True, scope=scope)
        scopes[scope] = {"path": str(path), "skills": skills, "problems": book.problems}
    return page(request, "memory_skills.html", title="Skills", scopes=scopes)


def skill_page(request: Request):
    name = request.path_params["name"]
    if not SKILL_NAME.fullmatch(name):
        raise HTTPException(404, f"{name[:70]!r} is not a skill name")
    book = _book(request.app.state.home)
    wanted = request.query_params.get("scope")
    skill = book.get(name, wanted if wanted in book.dirs else None)
    if skill is None:
        raise HTTPException(404, f"no skill named {name!r}")
    other = [s for s in book.dirs if s != skill.scope and book.get(name, s) is not None]
    return page(
        request,
        "memory_skill.html",
        title=f"Skill {name}",
        skill=skill,
        file=str(book.path(skill)),
        text=skill.text(),
        others=other,
    )


# ---------------------------------------------------------------- budgets
def budgets_page(request: Request):
    """Each phase's budget now, for the tags asked (``?tags=python,flask``) or for each
    tag set of the history (most rows first), with the rows it was worked out from."""
    memory = reader(request)
    total, ranked = memory.tag_sets()
    given = request.query_params.get("tags") or ""
    asked = normalize_tags([t for t in given.split(",") if t.strip()])
    sets = [(tuple(asked), None)] if asked else ranked[:TAG_SETS_SHOWN]
    groups = [
        {"tags": list(tags), "rows": n, "budgets": list(memory.budgets(list(tags)).values())}
        for tags, n in sets
    ]
    path = request.app.state.home.budgets_path
    return page(
        request,
        "memory_budgets.html",
        title="Budgets",
        groups=groups,
        asked=",".join(asked),
        total=total,
        tag_sets=len(ranked),
        shown_sets=TAG_SETS_SHOWN,
        history=str(path),
        has_history=_stamp(path) is not None,
    )


routes = [
    Route("/memory", lessons_page),
    Route("/memory/lessons/{lesson_id:path}", lesson_page),
    Route("/memory/retired", retired_page),
    Route("/memory/notes", notes_page),
    Route("/memory/notes/{name}", note_page),
    Route("/memory/skills", skills_page),
    Route("/memory/skills/{name}", skill_page),
    Route("/memory/budgets", budgets_page),
]
