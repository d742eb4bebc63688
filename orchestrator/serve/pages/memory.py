"""The memory page: the home's lessons (listed, filtered, recalled for a task), the retired
ones, the notes and skills of both scopes, and the phase budgets with the rows behind them.

The stores are read through :mod:`orchestrator.serve.memory_reader`, which takes no lock
and saves no snapshot; what it works out is kept while the files stand. A page renders one
page of rows.
"""

from __future__ import annotations

import time

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import Route

from memory.lesson import LESSON_TYPES
from memory.notes import SCOPES, BadNote, NoteFolder, check_name
from memory.recall import SCORERS
from memory.skills import NAME as SKILL_NAME
from memory.skills import SkillBook
from memory.tags import normalize_tags
from orchestrator.serve.memory_reader import RECALL_MAX, SORTS, TAG_SETS_SHOWN, reader, stamp
from orchestrator.serve.render import page, paged


def age(stamp: float | None, now: float) -> str:
    """How long ago, in the largest unit that is at least one."""
    if not stamp:
        return ""
    seconds = max(now - stamp, 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


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
        has_history=stamp(path) is not None,
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
