"""Where a build's learning goes: straight into the home, deferred to a coordinator, or nowhere.

A build reads the home's memory and budget history, and learns four kinds of
thing: lessons from reflection, boosts, penalties, and one budget row per
phase. :class:`HomeLearning` writes them as they come (a single build).
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
from orchestrator.home import Home
from phases import DEFAULT_ROUNDS


class Learning(Protocol):
    def save_lesson(self, lesson: Lesson) -> tuple[str | None, bool]: ...

    def boost(self, ids: list[str]) -> list[str]: ...

    def penalize(self, ids: list[str], error_text: str) -> list[str]: ...

    def record_phase(
        self, phase: str, rounds: int, n_files: int, tags: list[str], outcome: str
    ) -> None: ...


class HomeLearning:
    """Writes each piece of learning to the home's files at once."""

    def __init__(self, home: Home):
        self.store = MemoryStore(home.memory_path)
        self.history = PhaseBudgets(home.budgets_path, DEFAULT_ROUNDS)

    def save_lesson(self, lesson: Lesson) -> tuple[str | None, bool]:
        stored, merged = self.store.add(lesson)
        return stored.id, merged

    def boost(self, ids: list[str]) -> list[str]:
        return self.store.boost_confidence(ids)

    def penalize(self, ids: list[str], error_text: str) -> list[str]:
        return self.store.penalize_backfired(ids, error_text)

    def record_phase(self, phase, rounds, n_files, tags, outcome) -> None:
        self.history.record_phase_outcome(phase, rounds, n_files, tags=tags, outcome=outcome)


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

    def apply(self, target: HomeLearning) -> dict[str, int]:
        """Replay the queue into the home (in the coordinator); counts per kind."""
        counts: dict[str, int] = {}
        with self.lock:
            ops, self.ops = self.ops, []
        for op, args in ops:
            getattr(target, op)(*args)
            counts[op] = counts.get(op, 0) + 1
        return counts
