"""The memory tool: what the model saves, reads and forgets in-band, during a build.

What this module decides, and why:

* Everything the model saves goes where a reflection's lessons go: through the build's
  :class:`~orchestrator.loop.learning.Learning` sink (the home at once for a single
  build, a queue for a matrix run, nowhere for an improve trial), and through the same
  rules: a lesson gets the store's dedup and the fresh confidence of a reflected one
  (0.3), and every action is an event of the run.
* The model may change only what this build itself saved. A note or lesson that a person
  or an earlier build made is read-only: saving a note under a name that exists,
  appending to someone else's note, or forgetting a lesson the build did not create (a
  save that the dedup merged into an older lesson did not create it) is refused with a
  line saying why. The model writes only the home scope: the global scope is the user's.
* A note the model saves is *proposed* (:mod:`memory.notes`): it carries its source (run,
  phase, task) and reaches no prompt, this build's included, until a person accepts it
  (``cadillac memory review``, ``memory accept NAME``). It is never pinned either. The
  model may ``get`` and append to its own proposed notes in the build that made them; a
  proposed note of another build is not shown to it, and once a person accepted a note
  it is read-only to every build.
* Text is cleaned first (:func:`memory.text.clean`: NFKC, no format or tag characters),
  then text that would steer a later build's model (:mod:`memory.guard`: "ignore previous
  instructions" however spelled, chat-role lines, download-and-run, paths to secrets,
  sandbox-disabling, images that carry data out) is refused in lessons and notes, as in
  skill drafts and reflections.
* Every answer has its control characters escaped (:func:`orchestrator.sandbox.shown.output`).
* Input is bounded: names are checked by the notes' own rule (no paths), texts are
  capped, tags normalised and capped, and a build may save at most
  :data:`MAX_SAVES` things, so a looping model cannot flood the memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memory import LESSON_TYPES, Lesson, MemoryStore
from memory.guard import injection
from memory.notes import NOTE_TYPES, BadNote, Note, Notebook, NoteSource, new_note
from memory.reflection import FRESH_CONFIDENCE
from memory.skills import BadSkill, SkillBook, validate_draft
from memory.tags import infer_tags_from_text, normalize_tags
from memory.text import clean
from orchestrator.loop.learning import Learning
from orchestrator.sandbox.shown import output
from orchestrator.tools.schema import CallError, Memory

MAX_SAVES = 20
"""Saves (lessons, notes, skills, appends) one build may make."""
MAX_LINE = 300
MAX_FIX = 1500
MAX_NOTE = 8000
MAX_TAGS = 8
ANSWER_CHARS = 6000
PROPOSED = "no build sees it until a person accepts it (cadillac memory review)"


def _one_line(value: str | None, what: str, limit: int) -> str:
    text = " ".join(clean(value or "").split())
    if not text:
        raise CallError(f"memory save needs a non-empty '{what}'.")
    if len(text) > limit:
        raise CallError(f"'{what}' is {len(text)} characters; at most {limit}.")
    return text


def _clean(text: str, what: str) -> str:
    """``text``, unless it reads as an attempt to steer a later build's model."""
    why = injection(text)
    if why:
        raise CallError(f"the {what} {why}: refused (later builds would read it)")
    return text


def _cap(text: str, limit: int = ANSWER_CHARS) -> str:
    text = output(text)
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more]"


@dataclass
class MemoryTool:
    """Answers one build's memory calls. ``on_change`` would be told when what the prompt
    carries changed (the build then rebuilds the memory part of its prompt, once); no
    call of the model's changes it today, for the notes it saves are proposed."""

    store: MemoryStore
    notebook: Notebook
    skills: SkillBook
    learning: Learning
    run_id: str
    task: str
    tags: Sequence[str]
    recalled: Sequence[str]
    emit: Callable[..., None]
    on_change: Callable[[], None] = lambda: None
    saved: list[str] = field(default_factory=list)
    """``lesson:ID``, ``note:NAME``, ``skill:NAME``: what this build created."""
    pending: int = 0
    """Saves queued by a sink that writes later (a matrix run): they have no id yet."""
    phase: str = ""
    """The phase running now (a proposed note's source names it)."""
    phase_saves: list[str] = field(default_factory=list)
    """What was saved in the current phase, in words: its reflection is told, so as not
    to save it twice."""

    @property
    def origin(self) -> str:
        return f"build {self.run_id}"

    def answer(self, args: Memory) -> str:
        handler = getattr(self, "_" + args.action)
        fields = {"action": args.action, "what": args.kind, "name": args.name, "id": args.id}
        try:
            out = handler(args)
        except CallError as exc:
            self.emit("memory_tool", **fields, refused=str(exc)[:300])
            raise
        self.emit("memory_tool", **fields, refused=None)
        return _cap(out)

    # ---------------------------------------------------------------- writing
    def _budget(self) -> None:
        if len(self.saved) + self.pending >= MAX_SAVES:
            raise CallError(f"this build already saved {MAX_SAVES} things; save no more.")

    def _save(self, args: Memory) -> str:
        self._budget()
        kind = args.kind or ("lesson" if args.trigger else "note")
        if kind == "skill":
            return self._save_skill(args)
        if kind == "note":
            return self._save_note(args)
        return self._save_lesson(args)

    def _save_lesson(self, args: Memory) -> str:
        if args.type not in LESSON_TYPES:
            raise CallError(f"a lesson's 'type' is one of {', '.join(LESSON_TYPES)}.")
        trigger = _clean(_one_line(args.trigger, "trigger", MAX_LINE), "trigger")
        fix = _clean(_one_line(args.fix, "fix", MAX_FIX), "fix")
        tags = normalize_tags(args.tags or []) or sorted(
            infer_tags_from_text(f"{trigger} {fix}") | set(self.tags)
        )
        lesson = Lesson(
            type=args.type,
            trigger=trigger,
            fix=fix,
            polarity=args.polarity or "do",
            tags=tags[:MAX_TAGS],
            confidence=FRESH_CONFIDENCE,
            source_task=self.task[:200],
        )
        stored_id, merged = self.learning.save_lesson(lesson)
        payload = lesson.model_dump(mode="json") | {"id": stored_id or ""}
        self.emit(
            "lesson_saved",
            id=stored_id,
            merged=merged,
            deferred=stored_id is None,
            trigger=trigger,
            by="memory_tool",
            lesson=payload,
        )
        polarity = "NEVER " if lesson.polarity == "dont" else ""
        self.phase_saves.append(f"a lesson: {polarity}{trigger} -> {fix}")
        if stored_id is None:
            self.pending += 1
            return "lesson queued: it is written to memory when this run's builds end"
        if merged:
            return f"lesson merged into the existing lesson [{stored_id}] (a restatement)"
        self.saved.append(f"lesson:{stored_id}")
        return f"lesson saved as [{stored_id}]"

    def _note_fields(self, args: Memory) -> tuple[str, str]:
        if not args.name:
            raise CallError("a note needs a 'name' (lowercase letters, digits, '-', '.', '_').")
        content = clean(args.content or "").strip()
        if not content:
            raise CallError("a note needs 'content'.")
        if len(content) > MAX_NOTE:
            raise CallError(f"'content' is {len(content)} characters; at most {MAX_NOTE}.")
        _clean(f"{clean(args.description or '')}\n{content}", "note")
        return args.name, content

    def _mine(self, kind: str, name: str) -> bool:
        return f"{kind}:{name}" in self.saved

    def _visible(self, note: Note | None) -> bool:
        """Whether the model may read ``note``: accepted, or proposed by this build."""
        return note is not None and (note.status == "accepted" or self._mine("note", note.name))

    def _save_note(self, args: Memory) -> str:
        name, content = self._note_fields(args)
        note_type = args.type or "note"
        if note_type not in NOTE_TYPES:
            raise CallError(f"a note's 'type' is one of {', '.join(NOTE_TYPES)}.")
        try:
            note = new_note(
                content,
                name=name,
                type=note_type,
                pinned=False,
                description=clean(args.description) if args.description else None,
                origin=self.origin,
                source=NoteSource(run=self.run_id, phase=self.phase, task=self.task[:200]),
            )
        except BadNote as exc:
            raise CallError(str(exc)) from None
        existing = self.notebook.get(note.name)
        if existing is not None and (
            not self._mine("note", note.name) or existing.status != "proposed"
        ):
            raise CallError(
                f"a note named {note.name!r} exists and is not this build's: it is "
                "read-only to you; choose another name"
            )
        self.phase_saves.append(f"a note {note.name!r}: {note.description}")
        if self.learning.save_note(note) is None:
            self.pending += 1
            return f"note {note.name!r} queued as proposed: {PROPOSED}"
        if not self._mine("note", note.name):
            self.saved.append(f"note:{note.name}")
        return f"note {note.name!r} saved as proposed: {PROPOSED}"

    def _append(self, args: Memory) -> str:
        self._budget()
        name, content = self._note_fields(args)
        held = self.notebook.get(name)
        if not self._mine("note", name) or (held is not None and held.status != "proposed"):
            if held is not None:
                raise CallError(
                    f"note {name!r} is not this build's: it is read-only to you; "
                    "save a note of your own instead"
                )
            return self._save_note(args)
        try:
            appended = self.learning.append_note(name, content)
        except LookupError:
            raise CallError(f"note {name!r} is gone (a person rejected it)") from None
        if appended is None:
            self.pending += 1
            return f"append to {name!r} queued"
        return f"appended to proposed note {name!r}"

    def _save_skill(self, args: Memory) -> str:
        try:
            skill = validate_draft(args.content or "", origin=f"model {self.run_id}")
        except BadSkill as exc:
            raise CallError(f"not a valid SKILL.md: {exc}") from None
        mine = self._mine("skill", skill.name)
        if self.skills.get(skill.name) is not None and not mine:
            raise CallError(f"a skill named {skill.name!r} exists and is read-only to you")
        self.phase_saves.append(f"a skill {skill.name!r}: {skill.description}")
        try:
            stored = self.learning.save_skill(skill, replace=mine)
        except BadSkill as exc:  # one of that name appeared meanwhile
            raise CallError(str(exc)) from None
        if stored is None:
            self.pending += 1
            return f"skill {skill.name!r} queued"
        if not self._mine("skill", skill.name):
            self.saved.append(f"skill:{skill.name}")
        return f"skill {skill.name!r} saved"

    def _forget(self, args: Memory) -> str:
        if args.id:
            if not self._mine("lesson", args.id):
                raise CallError(
                    f"lesson {args.id!r} was not saved by this build: only what you saved "
                    "in this build can be forgotten"
                )
            self.learning.forget_lesson(args.id)
            self.saved.remove(f"lesson:{args.id}")
            return f"lesson [{args.id}] forgotten"
        name = args.name or ""
        for kind in ("note", "skill"):
            if self._mine(kind, name):
                getattr(self.learning, f"forget_{kind}")(name)
                self.saved.remove(f"{kind}:{name}")
                return f"{kind} {name!r} forgotten"
        raise CallError(
            f"{name or args.id!r} was not saved by this build: notes, lessons and skills "
            "that people or earlier builds saved are read-only to you"
        )

    def _consolidate(self, args: Memory) -> str:
        return self.learning.consolidate(list(self.recalled))

    # ---------------------------------------------------------------- reading
    def _list(self, args: Memory) -> str:
        notes = self.notebook.all()
        lines = [f"Notes ({len(notes)}):"]
        lines += [f"- {n.name} [{n.type}, {n.scope}]: {n.description}" for n in notes]
        mine = [n for n in self.notebook.proposed() if self._mine("note", n.name)]
        lines += [f"- {n.name} [{n.type}, proposed by this build]: {n.description}" for n in mine]
        lines.append(f"Lessons recalled for this build: {', '.join(self.recalled) or 'none'}")
        lines.append(f"Saved by this build: {', '.join(self.saved) or 'nothing'}")
        skills = self.skills.all()
        lines.append(f"Skills: {', '.join(s.name for s in skills) or 'none'}")
        return "\n".join(lines)

    def _get(self, args: Memory) -> str:
        if args.id:
            lesson = self.store.get(args.id)
            if lesson is None:
                raise CallError(f"no lesson {args.id!r}")
            return lesson.model_dump_json(indent=1, exclude={"v"})
        if not args.name:
            raise CallError("get needs a lesson 'id' or a note or skill 'name'.")
        note = self.notebook.get(args.name)
        if note is not None and not self._visible(note):
            raise CallError(f"note {args.name!r} is proposed by another build: not shown")
        if note is not None:
            return f"{note.name} [{note.type}, {note.scope}]: {note.description}\n\n{note.body}"
        skill = self.skills.get(args.name)
        if skill is not None:
            return skill.text()
        raise CallError(f"no note or skill named {args.name!r}")

    def _stats(self, args: Memory) -> str:
        stats = self.store.stats()
        notes = self.notebook.all()
        scopes = {s: sum(1 for n in notes if n.scope == s) for s in ("home", "global")}
        return (
            f"{stats.headline()}\n"
            f"notes: {scopes['home']} home, {scopes['global']} global\n"
            f"skills: {len(self.skills.all())}\n"
            f"this build: {len(self.recalled)} lesson(s) recalled, "
            f"{len(self.saved) + self.pending} saved"
        )
