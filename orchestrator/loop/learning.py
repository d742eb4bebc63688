"""Where a build's learning goes: straight into the home, deferred to a coordinator, or nowhere.

A build reads the home's memory and budget history, and learns four kinds of
thing: lessons from reflection, boosts, penalties, and one budget row per
phase; with the memory tool, the model also saves lessons, notes and skills, and
forgets what it saved. :class:`HomeLearning` writes them as they come (a single build).
:class:`DeferredLearning` queues them so that one coordinating process can
apply them in order when several builds run at once (a matrix run): the memory
and budget files then have one writer, whatever the parallelism. With
``apply=False`` the queue is dropped — improve-cycle trials must all start
from the same memory, or a later trial would profit from an earlier one's
lessons and the comparison would credit the wrong patch.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from memory import Lesson, MemoryStore, PhaseBudgets
from memory.notes import Note, Notebook, NoteNotFound
from memory.skills import BadSkill, Skill, SkillBook
from orchestrator.home import Home
from phases import DEFAULT_ROUNDS


class Learning(Protocol):
    def save_lesson(self, lesson: Lesson) -> tuple[str | None, bool]: ...

    def boost(self, ids: list[str]) -> list[str]: ...

    def penalize(self, ids: list[str], error_text: str) -> list[str]: ...

    def record_phase(
        self, phase: str, rounds: int, n_files: int, tags: list[str], outcome: str
    ) -> None: ...

    # what the memory tool changes; a sink that writes later returns None
    def save_note(self, note: Note) -> Note | None: ...

    def append_note(self, name: str, text: str) -> Note | None: ...

    def forget_note(self, name: str) -> None: ...

    def forget_lesson(self, lesson_id: str) -> None: ...

    def save_skill(self, skill: Skill, replace: bool = False) -> Skill | None: ...

    def forget_skill(self, name: str) -> None: ...

    def consolidate(self, ids: list[str]) -> str: ...

    def skill_outcome(self, names: list[str], passed: bool) -> list[str]: ...


class HomeLearning:
    """Writes each piece of learning to the home's files at once."""

    def __init__(self, home: Home):
        self.store = MemoryStore(home.memory_path)
        self.history = PhaseBudgets(home.budgets_path, DEFAULT_ROUNDS)
        self.notes = Notebook(home.notes_dir, home.global_notes_dir)
        self.skills = SkillBook(home.skills_dir, home.global_skills_dir)

    def save_lesson(self, lesson: Lesson) -> tuple[str | None, bool]:
        stored, merged = self.store.add(lesson)
        return stored.id, merged

    def boost(self, ids: list[str]) -> list[str]:
        return self.store.boost_confidence(ids)

    def penalize(self, ids: list[str], error_text: str) -> list[str]:
        return self.store.penalize_backfired(ids, error_text)

    def record_phase(self, phase, rounds, n_files, tags, outcome) -> None:
        self.history.record_phase_outcome(phase, rounds, n_files, tags=tags, outcome=outcome)

    def save_note(self, note: Note) -> Note:
        return self.notes.save(note)

    def append_note(self, name: str, text: str) -> Note:
        """More text for a model's own proposed note; NoteNotFound when it is gone (a
        person rejected it meanwhile): an append never makes a note of its own."""
        note = self.notes.home.get(name)
        if note is None or note.status != "proposed":
            raise NoteNotFound(name)
        return self.notes.append(name, text)

    def forget_note(self, name: str) -> None:
        self.notes.forget(name, scope="home")

    def forget_lesson(self, lesson_id: str) -> None:
        self.store.forget(lesson_id)

    def save_skill(self, skill: Skill, replace: bool = False) -> Skill:
        """A model's skill: never over one of the same name, unless it is the build's own."""
        return self.skills.save(skill, replace=replace)

    def forget_skill(self, name: str) -> None:
        self.skills.forget(name, scope="home")

    def consolidate(self, ids: list[str]) -> str:
        return self.store.consolidate(ids).line()

    def skill_outcome(self, names: list[str], passed: bool) -> list[str]:
        return self.skills.record_outcome(names, passed)


@dataclass
class DeferredLearning:
    """Queues learning; returns the ids it would touch (lesson ids are unknown until applied)."""

    ops: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _queue(self, op: str, *args: Any) -> None:
        with self.lock:
            self.ops.append((op, args))

    def save_lesson(self, lesson: Lesson) -> tuple[str | None, bool]:
        self._queue("save_lesson", lesson)
        return None, False

    def boost(self, ids: list[str]) -> list[str]:
        self._queue("boost", list(ids))
        return list(ids)

    def penalize(self, ids: list[str], error_text: str) -> list[str]:
        self._queue("penalize", list(ids), error_text)
        return []

    def record_phase(self, phase, rounds, n_files, tags, outcome) -> None:
        self._queue("record_phase", phase, rounds, n_files, tags, outcome)

    def save_note(self, note: Note) -> None:
        self._queue("save_note", note)

    def append_note(self, name: str, text: str) -> None:
        self._queue("append_note", name, text)

    def forget_note(self, name: str) -> None:
        self._queue("forget_note", name)

    def forget_lesson(self, lesson_id: str) -> None:
        self._queue("forget_lesson", lesson_id)

    def save_skill(self, skill: Skill, replace: bool = False) -> None:
        self._queue("save_skill", skill, replace)

    def forget_skill(self, name: str) -> None:
        self._queue("forget_skill", name)

    def consolidate(self, ids: list[str]) -> str:
        return "consolidation is not done during a matrix run: its builds share one memory"

    def skill_outcome(self, names: list[str], passed: bool) -> list[str]:
        self._queue("skill_outcome", list(names), passed)
        return list(names)

    def apply(self, target: HomeLearning) -> dict[str, int]:
        """Replay the queue into the home (in the coordinator); counts per kind."""
        counts: dict[str, int] = {}
        with self.lock:
            ops, self.ops = self.ops, []
        for op, args in ops:
            try:
                getattr(target, op)(*args)
            except LookupError:  # forgetting what is gone already: nothing to do
                op = f"{op}_gone"
            except BadSkill:  # a skill of that name was saved meanwhile: it is kept
                op = f"{op}_refused"
            counts[op] = counts.get(op, 0) + 1
        return counts
