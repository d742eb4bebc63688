"""Lessons and notes as a folder of markdown files, and back, losslessly: memory a team reviews.

What this module decides, and why:

* An export is a folder: ``lessons/<id>.md`` (one file per lesson), ``notes/home/<name>.md``
  and ``notes/global/<name>.md`` (the notes of both scopes), ``README.md`` (an index) and
  ``.cadillac-export`` (the marker that says the folder is an export).
* A lesson's file holds *every* field of the lesson in its frontmatter, unknown fields the
  store keeps included, in the store's order; the frontmatter is the lesson. The body
  renders trigger and fix for a reader; on import it is ignored (an edited body is said
  to have been ignored: edit the frontmatter instead). YAML goes through PyYAML's safe
  dumper and loader (:mod:`memory.notes`), which give back every str, int and float as it
  was; the export reads each file back and refuses to finish unless it gives the lesson's
  JSON exactly, so a file written is a file that imports to the same lesson.
* The marker file is JSON: the format, and the lessons' ids in the store's order, so an
  import puts them back in that order (files it does not list follow, by name).
* An export carries no time stamp: the same memory exports to the same bytes, so a second
  round trip changes nothing and a pull request shows only what changed.
* An export writes only into a missing or empty folder, or a previous export (the marker
  is there), whose lesson and note files it replaces (a forgotten lesson's file goes);
  anything else in that folder is left alone.
* An import never loses what is stored: a lesson whose id is new is added, one whose id is
  stored with other content replaces it (the stored one is first appended to
  ``memory.jsonl.replaced.jsonl`` with ``replaced_at`` and ``replaced_by``, and the report
  names it), the same content is left as it is. Lessons are
  written through the store's own file (its lock and atomic rewrite), never merged by
  dedup: an export of a store that holds near-duplicates imports to that same store.
  Notes are saved through :class:`memory.notes.NoteFolder` with their times kept, all of
  them into the home scope: the exporter's global notes are not the importer's (a home
  note of the export shadows a global one of its name, which is then left out and
  said). Only when asked (``--global``) does each note go back to the scope it was
  exported from, global ones into the global scope. A note replaced is first
  copied, as it was, to ``<notes folder>.replaced/`` (as merged-away lessons are kept in
  ``memory.jsonl.merged.jsonl``), and the report names it and the copy. A bad
  file (a symlink, a FIFO, too large, bad YAML, an invalid field) is reported as
  ``path: why`` and skipped; the rest is imported.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

from memory.consolidate import append_durably, side_path, stamped
from memory.jsonl import JsonlFile
from memory.lesson import Lesson
from memory.notes import (
    BadNote,
    Note,
    Notebook,
    NoteFolder,
    check_folder,
    dump_markdown,
    parse_markdown,
    read_capped,
    write_atomic,
)
from memory.store import MemoryStore, cleaned

MARKER = ".cadillac-export"
FORMAT = "cadillac-markdown"
SCOPES = ("home", "global")


class ExportRefused(ValueError):
    """The export's folder is not one an export may write into (one line)."""


class ExportReport(BaseModel):
    out: str
    lessons: int = 0
    notes: dict[str, int] = {}

    def headline(self) -> str:
        notes = ", ".join(f"{n} {scope} note(s)" for scope, n in self.notes.items())
        return f"exported {self.lessons} lesson(s){', ' + notes if notes else ''} to {self.out}"


class Counts(BaseModel):
    added: int = 0
    replaced: int = 0
    unchanged: int = 0

    def said(self) -> str:
        return f"{self.added} added, {self.replaced} replaced, {self.unchanged} unchanged"


class ReplacedNote(BaseModel):
    """A note an import replaced, and where the replaced one was kept."""

    name: str
    scope: str
    kept: str | None
    """The copy of the replaced file (None: it was a symlink or FIFO, not copied)."""

    def said(self) -> str:
        where = f"the old one is kept in {self.kept}" if self.kept else "it was no regular file"
        return f"replaced note {self.name} ({self.scope} scope): {where}"


class ImportReport(BaseModel):
    src: str
    lessons: Counts = Counts()
    notes: Counts = Counts()
    scope: str | None = "home"
    """The scope the notes went into; None: each into the scope it was exported from."""
    replaced: list[ReplacedNote] = []
    """The notes replaced, each with where the old one is kept."""
    replaced_lessons: list[str] = []
    """The ids of the lessons replaced, whose old versions are kept in ``lessons_kept``."""
    lessons_kept: str = ""
    problems: list[str] = []
    """Files skipped, each ``path: why``."""
    notices: list[str] = []
    """Files imported with something ignored (an edited lesson body)."""

    def headline(self) -> str:
        skipped = f"; {len(self.problems)} file(s) skipped" if self.problems else ""
        into = f"into the {self.scope} scope" if self.scope else "each into its exported scope"
        return (
            f"imported from {self.src}: lessons {self.lessons.said()};"
            f" notes {self.notes.said()} ({into})"
            f"{skipped}"
        )


# ---------------------------------------------------------------- one lesson, one file
def lesson_body(lesson: Lesson) -> str:
    """What a reader sees of a lesson: the situation, then what to do (or never do)."""
    verb = "Never" if lesson.polarity == "dont" else "Do"
    return f"## When\n\n{lesson.trigger}\n\n## {verb}\n\n{lesson.fix}"


def lesson_text(lesson: Lesson) -> str:
    """A lesson's markdown file: every field in the frontmatter, trigger and fix below."""
    return dump_markdown(lesson.model_dump(mode="json"), lesson_body(lesson))


def lesson_from_text(text: str) -> tuple[Lesson, bool]:
    """The lesson a file holds, and whether its body was edited (and so ignored)."""
    meta, body = parse_markdown(text)
    try:
        lesson = Lesson.model_validate(meta)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "lesson"
        raise BadNote(f"{where}: {error['msg']}".splitlines()[0]) from None
    return lesson, body != lesson_body(lesson).strip()


def _same(a: BaseModel, b: BaseModel) -> bool:
    return a.model_dump_json() == b.model_dump_json()


# ---------------------------------------------------------------- export
def _prepare(out: Path) -> None:
    """Make ``out`` ready for an export, or ExportRefused (see the module docstring)."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ExportRefused(f"{out} is not a folder (give a new or empty folder)")
    if out.exists() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ExportRefused(
            f"{out} is not empty and not an earlier export: give a new or empty folder"
        )
    for sub in ("lessons", "notes", "notes/home", "notes/global"):
        folder = out / sub
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise ExportRefused(f"{folder} is not a folder: refused (delete it)")
        folder.mkdir(parents=True, exist_ok=True)
        if folder != out / "notes":
            for old in folder.glob("*.md"):
                old.unlink()  # a symlink is removed, not followed


def _readme(lessons: list[Lesson], notes: dict[str, list[Note]]) -> str:
    lines = [
        "# cadillac memory (markdown export)",
        "",
        f"{len(lessons)} lesson(s) in `lessons/`, notes in `notes/home/` and `notes/global/`.",
        "A lesson's frontmatter is the lesson; its body is for reading.",
        "Read it back with `cadillac memory import <this folder>`.",
        "",
        "## Lessons",
        "",
    ]
    for lesson in lessons:
        marker = "NEVER: " if lesson.polarity == "dont" else ""
        trigger = " ".join(lesson.trigger.split())
        lines.append(f"- [{lesson.id}](lessons/{lesson.id}.md) ({lesson.type}) {marker}{trigger}")
    for scope, group in notes.items():
        lines += ["", f"## Notes ({scope})", ""]
        lines += [
            f"- [{n.name}](notes/{scope}/{n.name}.md) ({n.type}) {n.description}" for n in group
        ]
    return "\n".join(lines) + "\n"


def _check_round_trip(path: Path, lesson: Lesson) -> None:
    back, _ = lesson_from_text(path.read_text(encoding="utf-8"))
    if not _same(back, lesson):
        raise ValueError(f"{path} would not read back as lesson {lesson.id}: export stopped")


def export_markdown(store: MemoryStore, notebook: Notebook | None, out: Path) -> ExportReport:
    """Write the store's lessons and the notebook's notes under ``out``."""
    out = Path(out)
    _prepare(out)
    lessons = store.all()
    for lesson in lessons:
        path = out / "lessons" / f"{lesson.id}.md"
        write_atomic(path, lesson_text(lesson), durable=False)
        _check_round_trip(path, lesson)
    notes: dict[str, list[Note]] = {}
    if notebook is not None:
        for scope in SCOPES:
            try:
                folder = notebook.folder(scope)
            except BadNote:
                continue
            notes[scope] = folder.all()
            for note in notes[scope]:
                path = out / "notes" / scope / f"{note.name}.md"
                write_atomic(path, note.text(), durable=False)
    write_atomic(out / "README.md", _readme(lessons, notes), durable=False)
    marker = {"format": FORMAT, "v": 1, "lessons": [lesson.id for lesson in lessons]}
    write_atomic(out / MARKER, json.dumps(marker, indent=0) + "\n")
    return ExportReport(
        out=str(out), lessons=len(lessons), notes={s: len(n) for s, n in notes.items()}
    )


# ---------------------------------------------------------------- import
def _lesson_files(src: Path, report: ImportReport) -> list[Lesson]:
    folder = src / "lessons"
    if folder.is_symlink():
        report.problems.append(f"{folder}: a symlink (not followed)")
        return []
    if not folder.is_dir():
        return []
    lessons: dict[str, Lesson] = {}
    for path in _in_order(src, sorted(folder.glob("*.md"))):
        try:
            lesson, edited = lesson_from_text(_text(path))
        except BadNote as exc:
            report.problems.append(f"{path}: {exc}")
            continue
        if lesson.id and lesson.id in lessons:
            report.problems.append(f"{path}: lesson id {lesson.id} is in another file too")
            continue
        if edited:
            report.notices.append(f"{path}: the body was edited and ignored (edit the fields)")
        lessons[lesson.id or f"\x00{len(lessons)}"] = lesson
    return list(lessons.values())


def _in_order(src: Path, paths: list[Path]) -> list[Path]:
    """The lesson files in the order the marker lists, then those it does not, by name."""
    try:
        order = json.loads(_text(src / MARKER)).get("lessons", [])
        rank = {str(name): i for i, name in enumerate(order)}
    except (BadNote, ValueError, AttributeError, TypeError):
        rank = {}
    return sorted(paths, key=lambda p: (rank.get(p.stem, len(rank)), p.name))


def _text(path: Path) -> str:
    try:
        return read_capped(path).decode("utf-8")
    except UnicodeDecodeError:
        raise BadNote("not valid UTF-8 text") from None


def _import_lessons(store: MemoryStore, lessons: list[Lesson], report: ImportReport) -> None:
    """Add or replace by id, without dedup, in one atomic rewrite (the store's put_many);
    a lesson replaced is first kept in ``memory.jsonl.replaced.jsonl``, and named."""
    with store.file.lock:  # put_many takes it again: nothing changes in between
        stored = {lesson.id: lesson for lesson in store.all()}
        old = [
            stored[x.id]
            for x in lessons
            if x.id in stored and stored[x.id].model_dump_json() != cleaned(x).model_dump_json()
        ]
        if old:
            kept = JsonlFile(side_path(store.file, "replaced"), Lesson)
            now = time.time()
            append_durably(
                kept, [stamped(x, replaced_at=now, replaced_by=str(report.src)) for x in old]
            )
            report.replaced_lessons = [x.id for x in old]
            report.lessons_kept = str(kept.path)
        added, replaced, unchanged = store.put_many(lessons)
    report.lessons.added += added
    report.lessons.replaced += replaced
    report.lessons.unchanged += unchanged


def _notes_of_export(src: Path, report: ImportReport, one_scope: bool) -> list[Note]:
    """The notes of an export, both of its scopes, each with the scope it was exported
    from. Going into ``one_scope``, a home note comes first and a global one of the same
    name is left out (it was shadowed where it was exported), said in ``notices``."""
    found: dict[tuple[str, str], tuple[Path, Note]] = {}
    for scope in SCOPES:
        path = src / "notes" / scope
        if not os.path.lexists(path):
            continue
        source = NoteFolder(path, scope)
        try:
            notes = source.all()
        except BadNote as exc:
            report.problems.append(f"{path}: {exc}")
            continue
        report.problems += source.problems
        for note in notes:
            file, key = (
                path / f"{note.name}.md",
                ("", note.name) if one_scope else (scope, note.name),
            )
            if key in found:
                report.notices.append(f"{file}: not imported: {found[key][0]} has the same name")
                continue
            found[key] = (file, note)
    return [note for _, note in found.values()]


def _import_notes(notebook: Notebook, src: Path, scope: str | None, report: ImportReport) -> None:
    """The export's notes into ``scope`` (None: each into the scope it was exported from);
    a note replaced is copied first, beside the notes (:meth:`NoteFolder.keep_replaced`)."""
    report.scope = scope
    for note in _notes_of_export(src, report, one_scope=scope is not None):
        into = scope or note.scope
        try:
            target = notebook.folder(into)
            check_folder(target.path)
        except BadNote as exc:
            report.problems.append(f"{src / 'notes' / note.scope / note.name}.md: {exc}")
            continue
        _import_note(target, note.model_copy(update={"scope": into}), report)


def _import_note(target: NoteFolder, note: Note, report: ImportReport) -> None:
    existing = target.get(note.name)
    if existing is not None and existing.text() == note.text():
        report.notes.unchanged += 1
        return
    kept = None
    if os.path.lexists(target.path / f"{note.name}.md"):
        try:
            kept = str(target.keep_replaced(note.name))
        except BadNote:  # a symlink or FIFO: replaced, never followed or read
            kept = None
    target.save(note, touch=False)
    if kept is None and existing is None:
        report.notes.added += 1
    else:
        report.notes.replaced += 1
        report.replaced.append(ReplacedNote(name=note.name, scope=target.scope, kept=kept))


def import_markdown(
    store: MemoryStore, notebook: Notebook | None, src: Path, scope: str | None = "home"
) -> ImportReport:
    """Read an export (or a folder laid out like one) into the store, and its notes (of
    both of its scopes) into the notebook's ``scope``; None: each note into the scope
    it was exported from (``memory import --global``)."""
    src = Path(src)
    if not src.is_dir():
        raise BadNote(f"{src} is not a folder")
    if not (src / "lessons").is_dir() and not (src / "notes").is_dir():
        raise BadNote(f"{src} has no lessons/ or notes/ folder: not a markdown export")
    check_folder(src)
    report = ImportReport(src=str(src))
    _import_lessons(store, _lesson_files(src, report), report)
    if notebook is not None:
        _import_notes(notebook, src, scope, report)
    elif any((src / "notes").glob("*/*.md")):
        report.problems.append(f"{src / 'notes'}: skipped (no notes folder to import into)")
    return report
