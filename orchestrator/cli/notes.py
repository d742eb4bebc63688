"""``cadillac memory remember|notes|edit|review|accept|reject`` and the notes side of
``show`` and ``forget``.

Notes are the markdown memories a person tells cadillac (:mod:`memory.notes`), in a
home scope and a global one. This module decides how a command line meets them:

* a command about the global scope alone (``--global``) needs no home, and names none;
* without ``--global``, ``forget`` and ``edit`` act on the home scope only: a name only
  the global scope has is one error line saying to give ``--global``, nothing changed;
* ``remember`` creates a missing home, like ``memory add``; the other commands create
  nothing;
* a bad note file, a missing note or a refused folder is one error line
  (:class:`NoteErrors`), and what the catalog skipped is a warning line per file;
* a note a model saved is proposed (:mod:`memory.notes`): ``review`` lists the proposed
  notes with where they came from (run, phase, task) and their text, ``accept NAME``
  lets builds see one, ``reject NAME`` deletes it; ``notes`` lists them apart, under
  the accepted ones. A person's note (``remember``, ``edit``) is accepted as written;
  ``edit`` keeps a proposed note proposed;
* ``edit`` runs ``$VISUAL`` or ``$EDITOR`` on a copy and saves it only when the editor
  succeeded and the result is a valid note; otherwise the note is unchanged and the
  error names where the attempt was kept.

``memory show`` and ``memory forget`` (in :mod:`orchestrator.cli.memory`) take a lesson
id or a note name and come here for a name.
"""

from __future__ import annotations

import argparse
import os

from orchestrator.cli import output
from orchestrator.cli.args import checked_home, command, utf8, words
from orchestrator.errors import CadillacError
from orchestrator.home import Home

NOTE_TYPES = ("convention", "decision", "gotcha", "architecture", "note", "preference", "user")
NOTE_TYPES += ("identity",)
"""memory.notes.NOTE_TYPES, repeated so that parsing a command line imports no pydantic."""
IMPORTANCE = ("high", "normal", "low")


def note_name_arg(value: str) -> str:
    """An argparse type: a note's name (see memory.notes.check_name)."""
    from memory.notes import BadNote, check_name

    try:
        return check_name(utf8(value))
    except BadNote as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parsers(sub) -> None:
    """``remember``, ``notes`` and ``edit`` under ``cadillac memory``."""
    p = command(sub, "remember", "save a note: a fact, convention or decision", run=memory_remember)
    p.add_argument("text", type=words, help="what to remember (markdown)")
    p.add_argument("--name", type=note_name_arg, help="its name (default: from the text)")
    p.add_argument("--type", choices=NOTE_TYPES, default="note")
    p.add_argument("--global", dest="global_", action="store_true", help="for every project")
    pin = p.add_mutually_exclusive_group()
    pin.add_argument("--pin", dest="pin", action="store_const", const=True, default=None)
    pin.add_argument("--no-pin", dest="pin", action="store_const", const=False)
    p.add_argument("--importance", choices=IMPORTANCE, default="normal")
    p.add_argument("--description", type=words, help="one line (default: the text's first)")
    p.add_argument("--json", action="store_true")

    p = command(sub, "notes", "the notes of both scopes (the catalog)", run=memory_notes)
    p.add_argument("--global", dest="global_", action="store_true", help="only the global scope")
    p.add_argument("--json", action="store_true")

    p = command(sub, "edit", "edit a note in $VISUAL or $EDITOR", run=memory_edit)
    p.add_argument("name", type=note_name_arg)
    p.add_argument("--global", dest="global_", action="store_true", help="the global scope's note")

    p = command(sub, "review", "the notes models proposed, with where they came from", run=review)
    p.add_argument("--global", dest="global_", action="store_true", help="only the global scope")
    p.add_argument("--json", action="store_true")
    for verb, what in (("accept", "let builds see a proposed note"), ("reject", "delete one")):
        p = command(sub, verb, what, run=accept if verb == "accept" else reject)
        p.add_argument("name", type=note_name_arg)
        p.add_argument("--global", dest="global_", action="store_true", help="the global scope's")


class NoteErrors:
    """A bad note, a missing one or a refused folder: one error line."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> None:
        from memory.markdown import ExportRefused
        from memory.notes import BadNote, NoteNotFound

        if exc_type is not None and issubclass(exc_type, BadNote | NoteNotFound | ExportRefused):
            hint = " (see 'cadillac memory notes')" if exc_type is NoteNotFound else ""
            raise CadillacError(f"{exc}{hint}") from None


def notebook_of(home: Home):
    from memory.notes import Notebook

    return Notebook(home.notes_dir, home.global_notes_dir)


def _scope_home(args: argparse.Namespace, write: bool = False) -> Home:
    """The home, checked unless the command is about the global scope only."""
    if getattr(args, "global_", False):
        return Home.resolve(getattr(args, "home", None))
    return checked_home(args, write=write)


def named(home: Home, name: str, scope: str | None = None):
    """The note of that name (``scope`` None: the visible one, home first), or None (also
    for text that is no note name)."""
    from memory.notes import BadNote, check_name

    try:
        check_name(name)
    except BadNote:
        return None
    with NoteErrors():
        notebook = notebook_of(home)
        return notebook.get(name) if scope is None else notebook.folder(scope).get(name)


def refuse_global_only(home: Home, name: str, verb: str) -> None:
    """Without ``--global`` a command acts on the home scope only: when the home has no
    note of that name but the global scope has, say so (one error line) and how."""
    if named(home, name, "home") is None and named(home, name, "global") is not None:
        raise CadillacError(
            f"no note named {name!r} in the home scope ({home.notes_dir}); the global scope"
            f" has one: {verb} it with --global"
        )


def _note_json(note) -> dict:
    return note.model_dump(mode="json")


def show(note) -> None:
    fields = note.model_dump(mode="json", exclude={"body", "extra"})
    output.fields({**fields, **note.extra})
    if note.body:
        output.line("")
        output.line(note.body)


def forget(args: argparse.Namespace) -> int:
    home = _scope_home(args, write=True)
    scope = "global" if args.global_ else "home"
    if scope == "home":
        refuse_global_only(home, args.id, "forget")
    with NoteErrors():
        note = notebook_of(home).forget(args.id, scope)
    output.line(
        f"forgot note {note.name} ({note.scope} scope): {output.short(note.description, 80)}"
    )
    return 0


def memory_remember(args: argparse.Namespace) -> int:
    from memory.notes import new_note

    scope = "global" if args.global_ else "home"
    home = _scope_home(args, write=True) if args.global_ else checked_home(args, True, create=True)
    with NoteErrors():
        note = new_note(
            args.text,
            name=args.name,
            type=args.type,
            scope=scope,
            pinned=args.pin,
            importance=args.importance,
            description=args.description,
        )
        notebook = notebook_of(home)
        old = notebook.folder(scope).get(note.name)
        if old is not None:
            note = note.model_copy(update={"created": old.created})
        stored = notebook.save(note)
    if args.json:
        output.print_json({"replaced": old is not None, "note": _note_json(stored)})
        return 0
    verb = "replaced" if old is not None else "saved"
    pinned = ", pinned" if stored.pinned else ""
    output.line(f"{verb} note {stored.name} ({stored.type}, {scope} scope{pinned})")
    if old is not None:
        output.line(f"  it was: {output.short(old.description, 80)}")
    return 0


def memory_notes(args: argparse.Namespace) -> int:
    home = _scope_home(args)
    with NoteErrors():
        notebook = notebook_of(home)
        scopes = ("global",) if args.global_ else ("home", "global")
        for scope in scopes:
            notebook.folder(scope).catalog()  # rebuilt when the files changed by hand
        if args.global_:
            notes, shadowed = notebook.folder("global").all(), []
        else:
            notes, shadowed = notebook.all(), notebook.shadowed()
    for problem in notebook.problems:
        output.warn(f"skipped {problem}")
    proposed = [n for n in notebook.proposed() if not args.global_ or n.scope == "global"]
    rows = [(n, False) for n in notes] + [(n, True) for n in shadowed]
    if args.json:
        rows += [(n, False) for n in proposed]
        output.print_json([{**_note_json(n), "shadowed": hidden} for n, hidden in rows])
        return 0
    where = " and ".join(str(notebook.folder(s).path) for s in scopes)
    output.line(f"{len(notes)} note(s) in {where}")
    if rows:
        table = output.table(None, ("scope", "name", "type", "pin", "description"))
        table.columns[4].overflow = "fold"
        for note, hidden in rows:
            scope = f"{note.scope} (shadowed)" if hidden else note.scope
            pin = "yes" if note.pinned else ""
            table.add_row(scope, note.name, note.type, pin, output.short(note.description, 100))
        output.out().print(table)
    if proposed:
        output.line(f"{len(proposed)} proposed note(s), seen by no build until accepted:")
        for note in proposed:
            output.line(f"  {note.name} ({note.scope}): {output.short(note.description, 100)}")
        output.line("  (cadillac memory review; memory accept NAME or memory reject NAME)")
    return 0


def _source(note) -> str:
    src = note.source
    if src is None:
        return note.origin or "unknown"
    return f"run {src.run or '?'}, phase {src.phase or '?'}, task {output.short(src.task, 80)!r}"


def review(args: argparse.Namespace) -> int:
    home = _scope_home(args)
    with NoteErrors():
        proposed = notebook_of(home).proposed()
    proposed = [n for n in proposed if not args.global_ or n.scope == "global"]
    if args.json:
        output.print_json([_note_json(n) for n in proposed])
        return 0
    if not proposed:
        output.line("no proposed notes: nothing to review")
        return 0
    output.line(f"{len(proposed)} proposed note(s); no build sees one until it is accepted")
    for note in proposed:
        output.line("")
        output.line(f"{note.name} [{note.type}, {note.scope}] from {_source(note)}")
        output.line(f"  {output.short(note.description, 100)}")
        for line in note.body.splitlines():
            output.line(f"  | {line}")
    output.line("")
    output.line("cadillac memory accept NAME  |  cadillac memory reject NAME  (--global)")
    return 0


def _review(args: argparse.Namespace, accept_it: bool) -> int:
    home = _scope_home(args, write=True)
    scope = "global" if args.global_ else "home"
    with NoteErrors():
        folder = notebook_of(home).folder(scope)
        if folder.get(args.name) is None:
            raise CadillacError(
                f"no note named {args.name!r} in the {scope} scope (see 'cadillac memory review')"
            )
        note = folder.review(args.name, accept=accept_it)
    verb = "accepted" if accept_it else "rejected and deleted"
    seen = ": builds see it from now on" if accept_it else ""
    output.line(f"{verb} note {note.name} ({scope} scope){seen}")
    return 0


def accept(args: argparse.Namespace) -> int:
    return _review(args, True)


def reject(args: argparse.Namespace) -> int:
    return _review(args, False)


def _run_editor(path: str) -> int:
    import shlex
    import subprocess

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        return subprocess.run([*shlex.split(editor), path]).returncode
    except (OSError, ValueError) as exc:
        raise CadillacError(f"cannot run the editor {editor!r} ({exc}): set $EDITOR") from None


def memory_edit(args: argparse.Namespace) -> int:
    import tempfile

    home = _scope_home(args, write=True)
    scope = "global" if args.global_ else "home"
    if scope == "home":
        refuse_global_only(home, args.name, "edit")
    with NoteErrors():
        notebook = notebook_of(home)
        note = notebook.folder(scope).get(args.name)
        if note is None:
            raise CadillacError(
                f"no note named {args.name!r} in the {scope} scope (see 'cadillac memory notes')"
            )
    fd, path = tempfile.mkstemp(prefix=f"cadillac-note-{note.name}.", suffix=".md")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(note.text())
    status = _run_editor(path)
    if status != 0:
        raise CadillacError(
            f"the editor exited with status {status}: note {note.name!r} unchanged"
            f" (your edit is in {path})"
        )
    edited = _read_edit(path, note)
    with NoteErrors():
        folder = notebook.folder(note.scope)
        if edited.name != note.name and folder.get(edited.name) is not None:
            raise CadillacError(
                f"a note named {edited.name!r} exists already: note {note.name!r} unchanged"
                f" (your edit is in {path})"
            )
        folder.save(edited)
        if edited.name != note.name:
            folder.remove(note.name)
    os.unlink(path)
    renamed = f" (renamed from {note.name})" if edited.name != note.name else ""
    output.line(f"saved note {edited.name}{renamed} ({note.scope} scope)")
    return 0


def _read_edit(path: str, note):
    """The edited note, or an error line that keeps the attempt where it was written."""
    from pathlib import Path

    from memory.notes import BadNote, Note, read_capped

    try:
        text = read_capped(Path(path)).decode("utf-8")
        edited = Note.from_text(text, note.scope)
    except (BadNote, UnicodeDecodeError) as exc:
        why = exc if isinstance(exc, BadNote) else "not valid UTF-8 text"
        raise CadillacError(
            f"the edit is not a valid note ({why}): note {note.name!r} unchanged"
            f" (your edit is in {path})"
        ) from None
    return edited.model_copy(update={"created": note.created})
