"""Notes: what a person (or a build) tells cadillac, kept as markdown files in two scopes.

What this module decides, and why:

* A note is ``<folder>/<name>.md``: YAML frontmatter (``name``, ``description``, ``type``,
  ``importance``, ``scope``, ``pinned``, ``origin``, ``created``, ``updated``) and a
  markdown body. Frontmatter is read and written by :mod:`memory.mdfile` (python-frontmatter
  over PyYAML's *safe* loader, without aliases): a ``!!python/object`` tag is refused, not run.
  Keys the schema does not know are kept in ``extra`` and written back on every rewrite.
* A file without frontmatter (plain markdown, written by hand) is a note all the same:
  its name is the file's, its description its first line, the rest defaults; the first
  rewrite (an edit, an accept) gives it frontmatter.
* The file name is the note's id: ``name`` must be a slug (``[a-z0-9][a-z0-9._-]{0,63}``,
  no ``..``) and match the file's stem. A name with ``/``, NUL, ``..`` or too long is
  :class:`BadNote`, so no name can reach outside its folder.
* Two scopes, two folders: *home* (``<home>/notes``) and *global* (for every project).
  :class:`Notebook` joins them; a home note shadows a global note of the same name. The
  folder decides a note's scope, whatever its frontmatter says (a copied file moves scope).
* Types ``convention``, ``decision``, ``gotcha`` and ``identity`` are pinned unless said
  otherwise (:data:`AUTO_PINNED`), as in the seed.
* Each folder keeps ``MEMORY.md``, the catalog (name, type, description, pinned marked).
  Every change rewrites it, and so does any read of the catalog that finds it differs from
  what the files say (a hand edit, a hand-added or hand-deleted file): the catalog is
  always rebuilt from the files, never trusted over them.
* Writes happen under a filelock in the folder (``.notes.lock``) and are atomic: a
  fresh file in the folder, fsync, rename (:func:`orchestrator.sandbox.files.replace_file`).
  A symlink planted at a note's path is replaced, never followed; a notes folder (or
  lock) that is itself a symlink is refused.
* Reads are defensive, for files a model or a stranger's export may have written: a
  symlink, a FIFO or device, a file over :data:`MAX_NOTE_BYTES`, bad UTF-8, bad YAML or
  frontmatter without a name is skipped and listed in ``problems`` with why; the other notes load.
  Files are opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` first.
* A note a model saves (the build's memory tool) is *proposed*: its frontmatter says
  ``status: proposed`` and ``source`` (the run, phase and task it came from). The state
  lives in the note's own file, so it moves, exports and imports with it, and a person
  sees it in the file. :meth:`Notebook.all` and :meth:`Notebook.relevant` (what builds
  read) hold accepted notes only; :meth:`Notebook.proposed` lists the rest until a person
  accepts (``status: accepted``, the source kept) or rejects (the file deleted) it. A
  note without ``status`` (every note a person wrote, every note from before) is
  accepted.
* Relevance (:meth:`Notebook.relevant`) is Okapi BM25 (:mod:`memory.bm25`, recall's
  formula) over the name, description and body, cut into terms by :mod:`memory.tokens`
  as lessons are.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from memory import mdfile
from memory.bm25 import Bm25
from memory.text import clean
from memory.tokens import term_set, terms
from orchestrator.sandbox.files import replace_file

NOTE_TYPES = (
    "convention",
    "decision",
    "gotcha",
    "architecture",
    "note",
    "preference",
    "user",
    "identity",
)
IMPORTANCE = ("high", "normal", "low")
AUTO_PINNED = frozenset({"convention", "decision", "gotcha", "identity"})
SCOPES = ("home", "global")
CATALOG = "MEMORY.md"
LOCK = ".notes.lock"
MAX_NOTE_BYTES = 256 * 1024
DESCRIPTION_MAX = 120
NAME_MAX = 64
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}\Z")
_FIELDS = ("name", "description", "type", "importance", "scope", "pinned", "origin")


class NoteNotFound(KeyError):
    """No note has that name (in the scope asked)."""

    def __str__(self) -> str:
        return f"no note named {self.args[0]!r}"


class BadNote(ValueError):
    """A name, field or file that is not a valid note; the message is one line."""


def check_name(name: object) -> str:
    """``name`` if it is a safe slug, else BadNote saying why."""
    if not isinstance(name, str) or not name:
        raise BadNote("a note's name must be a non-empty text")
    shown = repr(name[:40] + ("..." if len(name) > 40 else ""))
    if len(name) > NAME_MAX:
        raise BadNote(f"note name {shown} is longer than {NAME_MAX} characters")
    if ".." in name or not _NAME.match(name):
        raise BadNote(
            f"note name {shown} is not valid: use lower-case letters, digits, '.', '_' and '-'"
            " (starting with a letter or digit, no '..')"
        )
    return name


def dump_markdown(meta: dict[str, Any], body: str) -> str:
    """A markdown file's text: ``meta`` as YAML frontmatter (keys in order), then ``body``."""
    return mdfile.dumps(meta, body)


def parse_markdown(text: str) -> tuple[dict[str, Any], str]:
    """Frontmatter and body of a markdown file's text; BadNote (one line) when it is bad."""
    try:
        return mdfile.parse(text)
    except mdfile.BadFrontmatter as exc:
        raise BadNote(str(exc)) from None


class NoteSource(BaseModel):
    """Where a proposed note came from: the build's run, its phase and its task."""

    model_config = ConfigDict(extra="forbid")

    run: str = ""
    phase: str = ""
    task: str = ""


class Note(mdfile.MarkdownRecord):
    """One markdown memory; see the module docstring."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    """One line, shown in the catalog."""
    type: str = "note"
    importance: str = "normal"
    pinned: bool = False
    """Always shown to a build, whatever the task."""
    status: Literal["accepted", "proposed"] = "accepted"
    """A model's note is proposed: no build sees it until a person accepts it."""
    source: NoteSource | None = None
    """The build a model's note came from."""
    body: str = ""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)

    @field_validator("description", mode="before")
    @classmethod
    def _description(cls, value: object) -> object:
        return " ".join(value.split()) if isinstance(value, str) else value

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        if value not in NOTE_TYPES:
            raise BadNote(f"type {value!r} is not one of {', '.join(NOTE_TYPES)}")
        return value

    @field_validator("importance")
    @classmethod
    def _importance(cls, value: str) -> str:
        if value not in IMPORTANCE:
            raise BadNote(f"importance {value!r} is not one of {', '.join(IMPORTANCE)}")
        return value

    def meta(self) -> dict[str, Any]:
        """The frontmatter: the schema's fields in order, then the unknown ones."""
        known = self.model_dump(include=set(_FIELDS))
        known = {key: known[key] for key in _FIELDS}
        if self.status != "accepted" or self.source is not None:
            known["status"] = self.status
        if self.source is not None:
            known["source"] = self.source.model_dump()
        times = {"created": self.created, "updated": self.updated}
        return {**known, **times, **{k: v for k, v in self.extra.items() if k not in known}}

    def text(self) -> str:
        """The markdown file's full text (frontmatter + body)."""
        return dump_markdown(self.meta(), self.body)

    @classmethod
    def from_text(
        cls, text: str, scope: str = "home", mtime: float | None = None, name: str | None = None
    ) -> Note:
        """The note a file's text holds (its folder gives ``scope``); BadNote when invalid.
        With ``name`` (the file's), a text without frontmatter is a plain note of that
        name, its first line the description, written times the file's ``mtime``."""
        if name is not None and not mdfile.fenced(text):
            when = time.time() if mtime is None else mtime
            note = new_note(text, name=name, scope=scope, origin="")
            return note.model_copy(update={"created": when, "updated": when})
        meta, body = parse_markdown(text)
        if "name" not in meta:
            raise BadNote("the frontmatter has no 'name'")
        keys = (*_FIELDS, "status", "source", "created", "updated")
        fields = {k: meta.pop(k) for k in keys if k in meta}
        fields.setdefault("description", "")
        fields["scope"] = scope
        now = time.time() if mtime is None else mtime
        fields.setdefault("created", now)
        fields.setdefault("updated", fields["created"])
        return validated(cls, **fields, body=body, extra=meta)


def validated(model: type[BaseModel], **fields: Any) -> Any:
    """``model(**fields)``, with a validation error turned into a one-line BadNote."""
    try:
        return model(**fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "note"
        message = str(error.get("ctx", {}).get("error") or error["msg"])
        message = message.removeprefix("Value error, ")
        raise BadNote(f"{where}: {message}".splitlines()[0]) from None


def note_name(text: str) -> str:
    """A slug from the text's first words; always a valid name."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    name = ""
    for word in words[:6]:
        candidate = f"{name}-{word}" if name else word
        if len(candidate) > 40:
            break
        name = candidate
    if not name:
        digest = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=4).hexdigest()
        name = f"note-{digest}"
    return name[:NAME_MAX]


def new_note(
    text: str,
    *,
    name: str | None = None,
    type: str = "note",  # noqa: A002 - the field's name
    scope: str = "home",
    pinned: bool | None = None,
    importance: str = "normal",
    description: str | None = None,
    origin: str = "person",
    source: NoteSource | None = None,
) -> Note:
    """A note holding ``text``; see the module docstring for the defaults. With a
    ``source`` (a model's note) it is proposed."""
    body = text.strip()
    if not body:
        raise BadNote("the note is empty: say what is to be remembered")
    first = " ".join(body.splitlines()[0].split()).lstrip("# ")
    if description is None or not description.strip():
        description = first if len(first) <= DESCRIPTION_MAX else first[: DESCRIPTION_MAX - 3]
        description = description + ("..." if len(first) > DESCRIPTION_MAX else "")
    return validated(
        Note,
        name=check_name(name) if name is not None else note_name(body),
        description=description,
        type=type,
        scope=scope,
        pinned=type in AUTO_PINNED if pinned is None else pinned,
        importance=importance,
        body=body,
        origin=origin,
        status="accepted" if source is None else "proposed",
        source=source,
    )


def sort_key(note: Note) -> tuple:
    """Pinned first, then by name, home before global."""
    return (not note.pinned, note.name, SCOPES.index(note.scope))


# ---------------------------------------------------------------- files
def read_capped(path: Path, cap: int = MAX_NOTE_BYTES) -> bytes:
    """A regular file's bytes, never following a symlink or blocking on a FIFO; else BadNote."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise BadNote(f"cannot read it ({exc.strerror})") from None
    _check_regular(st, cap)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise BadNote(f"cannot read it ({exc.strerror})") from None
    try:
        _check_regular(os.fstat(fd), cap)  # the file opened is the file checked
        chunks, size = [], 0
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                raise BadNote(f"larger than {cap // 1024} KB")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _check_regular(st: os.stat_result, cap: int) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise BadNote("a symlink (not followed)")
    if not stat.S_ISREG(st.st_mode):
        raise BadNote("not a regular file (a FIFO, device or folder is never read)")
    if st.st_size > cap:
        raise BadNote(f"larger than {cap // 1024} KB")


def write_atomic(path: Path, text: str, durable: bool = True) -> None:
    """Replace ``path`` with ``text`` by cadillac's one atomic write (a fresh name, fsync,
    rename: a symlink at ``path`` is replaced, not followed; fsync of the folder).
    ``durable=False`` skips the fsyncs (an export: a copy, written by the hundred)."""
    replace_file(path, text, durable=durable)


def check_folder(path: Path) -> None:
    """BadNote when a notes folder (or its lock) is a symlink or not a folder."""
    if path.is_symlink():
        raise BadNote(f"notes folder {path} is a symlink: refused (make it a real folder)")
    if path.exists() and not path.is_dir():
        raise BadNote(f"notes folder {path} is not a folder")
    if (path / LOCK).is_symlink():
        raise BadNote(f"{path / LOCK} is a symlink: refused (delete it)")


class NoteFolder:
    """One scope's folder: ``<name>.md`` files, the ``MEMORY.md`` catalog and a lock."""

    def __init__(self, path: Path, scope: str):
        if scope not in SCOPES:
            raise BadNote(f"scope {scope!r} is not one of {', '.join(SCOPES)}")
        self.path = Path(path)
        self.scope = scope
        self.problems: list[str] = []
        self._lock = FileLock(self.path / LOCK)

    def _files(self) -> list[Path]:
        check_folder(self.path)
        if not self.path.exists():
            return []
        return sorted(p for p in self.path.glob("*.md") if p.name != CATALOG)

    def _read(self, path: Path) -> Note:
        data = read_capped(path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BadNote("not valid UTF-8 text") from None
        note = Note.from_text(text, self.scope, mtime=os.stat(path).st_mtime, name=path.stem)
        if note.name != path.stem:
            raise BadNote(f"its name {note.name!r} is not its file name ({path.stem!r})")
        return note

    def all(self) -> list[Note]:
        """Every readable note, pinned first then by name; the rest go to ``problems``."""
        notes, self.problems = [], []
        for path in self._files():
            try:
                notes.append(self._read(path))
            except BadNote as exc:
                self.problems.append(f"{path}: {exc}")
        return sorted(notes, key=sort_key)

    def get(self, name: str) -> Note | None:
        path = self.path / f"{check_name(name)}.md"
        check_folder(self.path)
        if not os.path.lexists(path):
            return None
        try:
            return self._read(path)
        except BadNote as exc:
            self.problems = [f"{path}: {exc}"]
            return None

    def _ready(self) -> None:
        check_folder(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        check_folder(self.path)

    def save(self, note: Note, touch: bool = True) -> Note:
        """Create or replace the note of that name; returns the note as stored. ``touch``
        sets ``updated`` to now (an import keeps the time the note came with)."""
        self._ready()
        update: dict[str, Any] = {
            "scope": self.scope,
            "body": clean(note.body),
            "description": clean(note.description),
        }
        if touch:
            update["updated"] = time.time()
        stored = note.model_copy(update=update)
        stored = validated(Note, **stored.model_dump())
        with self._lock:
            write_atomic(self.path / f"{stored.name}.md", stored.text())
            self._write_catalog()
        return stored

    @property
    def replaced_path(self) -> Path:
        """``<folder>.replaced/``, beside the folder: the notes an import replaced."""
        return self.path.with_name(f"{self.path.name}.replaced")

    def keep_replaced(self, name: str) -> Path:
        """Copy the note file of that name, as it is, to :attr:`replaced_path` (as
        ``<name>.<UTC time>.md``) before something replaces it; returns the copy's path.
        BadNote when there is no regular file to copy (a symlink is replaced, never read)."""
        data = read_capped(self.path / f"{check_name(name)}.md")
        folder = self.replaced_path
        check_folder(folder)
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path, n = folder / f"{name}.{stamp}.md", 1
        while os.path.lexists(path):
            n += 1
            path = folder / f"{name}.{stamp}.{n}.md"
        replace_file(path, data)
        return path

    def append(self, name: str, text: str, **defaults: Any) -> Note:
        """Add ``text`` to the note's body (a new paragraph); creates the note when missing."""
        check_name(name)
        if not text.strip():
            raise BadNote("nothing to append: the text is empty")
        self._ready()
        with self._lock:
            note = self.get(name)
            if note is None:
                return self.save(new_note(text, name=name, scope=self.scope, **defaults))
            body = f"{note.body}\n\n{text.strip()}" if note.body else text.strip()
            return self.save(note.model_copy(update={"body": body}))

    def remove(self, name: str) -> Note:
        """Delete the note; NoteNotFound when there is none. An unreadable file goes too."""
        path = self.path / f"{check_name(name)}.md"
        check_folder(self.path)
        if not os.path.lexists(path):
            raise NoteNotFound(name)
        with self._lock:
            if not os.path.lexists(path):
                raise NoteNotFound(name)
            try:
                note = self._read(path)
            except BadNote as exc:
                note = Note(name=name, description=f"(unreadable: {exc})", scope=self.scope)
            os.unlink(path)  # a symlink is removed, not followed
            self._write_catalog()
        return note

    def review(self, name: str, accept: bool) -> Note:
        """Accept a proposed note (builds see it from now on) or reject it (deleted);
        NoteNotFound when there is none, BadNote when it is not proposed."""
        check_folder(self.path)
        with self._lock:
            note = self.get(name)
            if note is None:
                raise NoteNotFound(name)
            if note.status != "proposed":
                raise BadNote(f"note {name!r} is not proposed: it was accepted already")
            if not accept:
                os.unlink(self.path / f"{name}.md")
                self._write_catalog()
                return note
            return self.save(note.model_copy(update={"status": "accepted"}), touch=False)

    def render_catalog(self, notes: list[Note]) -> str:
        lines = [f"# Notes ({self.scope} scope)", ""]
        if not notes:
            lines.append("(no notes yet)")
        for note in notes:
            pin = " [pinned]" if note.pinned else ""
            pin += " [proposed]" if note.status == "proposed" else ""
            lines.append(f"- **{note.name}** ({note.type}){pin}: {note.description}")
        return "\n".join(lines) + "\n"

    def _write_catalog(self) -> str:
        text = self.render_catalog(self.all())
        write_atomic(self.path / CATALOG, text)
        return text

    def catalog(self) -> str:
        """MEMORY.md's text, rebuilt from the files (and rewritten) when it differs from them."""
        notes = self.all()
        text = self.render_catalog(notes)
        if not self.path.is_dir():
            return text
        path = self.path / CATALOG
        try:
            current = read_capped(path).decode("utf-8") if os.path.lexists(path) else None
        except (BadNote, UnicodeDecodeError):
            current = None
        if current != text:
            try:
                with self._lock:
                    text = self._write_catalog()
            except OSError:  # a read-only folder: the catalog is shown, not stored
                pass
        return text


class Notebook:
    """Both scopes; a home note shadows a global note of the same name."""

    def __init__(self, home_notes: Path, global_notes: Path | None):
        self.home = NoteFolder(home_notes, "home")
        self.global_ = None if global_notes is None else NoteFolder(global_notes, "global")

    def folder(self, scope: str) -> NoteFolder:
        if scope == "home":
            return self.home
        if scope == "global" and self.global_ is not None:
            return self.global_
        raise BadNote(f"no notes folder for scope {scope!r}")

    def _folders(self) -> list[NoteFolder]:
        return [self.home] + ([self.global_] if self.global_ is not None else [])

    @property
    def problems(self) -> list[str]:
        """What the last reads skipped, both scopes."""
        return [p for f in self._folders() for p in f.problems]

    def _both(self) -> tuple[list[Note], list[Note]]:
        """The accepted notes of each scope (what builds may see)."""
        home = [n for n in self.home.all() if n.status == "accepted"]
        other = self.global_.all() if self.global_ is not None else []
        return home, [n for n in other if n.status == "accepted"]

    def proposed(self) -> list[Note]:
        """The notes a model proposed and no person accepted yet, both scopes."""
        return sorted(
            (n for f in self._folders() for n in f.all() if n.status == "proposed"),
            key=lambda n: (n.created, n.name),
        )

    def all(self) -> list[Note]:
        """The visible accepted notes (shadowing applied), pinned first, then by name;
        proposed notes are never among them."""
        home, other = self._both()
        names = {n.name for n in home}
        return sorted(home + [n for n in other if n.name not in names], key=sort_key)

    def shadowed(self) -> list[Note]:
        """Global notes hidden by a home note of the same name."""
        home, other = self._both()
        names = {n.name for n in home}
        return [n for n in other if n.name in names]

    def get(self, name: str) -> Note | None:
        for folder in self._folders():
            note = folder.get(name)
            if note is not None:
                return note
        return None

    def save(self, note: Note) -> Note:
        return self.folder(note.scope).save(note)

    def append(self, name: str, text: str, scope: str = "home", **defaults: Any) -> Note:
        return self.folder(scope).append(name, text, **defaults)

    def forget(self, name: str, scope: str | None = None) -> Note:
        """Remove the note; ``scope`` None means the visible one (home first)."""
        if scope is not None:
            return self.folder(scope).remove(name)
        for folder in self._folders():
            if folder.get(name) is not None or os.path.lexists(folder.path / f"{name}.md"):
                return folder.remove(name)
        raise NoteNotFound(name)

    def relevant(self, task: str, limit: int = 5) -> list[Note]:
        """The notes most relevant to ``task`` by BM25 (:mod:`memory.bm25`), best first;
        only scores above 0."""
        notes = self.all()
        query = term_set(task)
        if not notes or not query or limit <= 0:
            return []
        index = Bm25(Counter(terms(f"{n.name} {n.description} {n.body}")) for n in notes)
        return [notes[i] for i, _ in index.ranked(query)[:limit]]
