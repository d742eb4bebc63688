"""MemoryStore: the lessons of one memory.jsonl, with recall, dedup and reinforcement.

The store keeps the file (:mod:`memory.jsonl`) and a search index
(:mod:`memory.index`) in step. Reads are lock-free while the file is
unchanged; every change (save, merge, forget, boost, penalty) happens under the
file's lock after reading what other processes wrote, so concurrent writers
lose nothing. Lessons read from the file are shared objects: treat what
``all``, ``get`` and ``recall`` return as read-only.

A store never serves, and never writes back, a lesson another process forgot:
the file keeps the descriptor of the file it read, so a replaced file is always
noticed, even where the file system gives the replacement the old inode number
(:mod:`memory.jsonl`). That descriptor is the one resource a store holds;
``close()`` releases it (a later read opens the file again), as does dropping
the store. A write to a read-only memory file raises
:class:`memory.jsonl.ReadOnlyFile` (a ``PermissionError``) and changes nothing.

Reinforcement, as the seed has it: ``boost_confidence`` adds 0.1 (capped at 1)
and one use to each lesson a successful build applied; ``penalize_backfired``
takes 0.1 (floored at 0) from each applied lesson whose trigger terms mostly (more
than half of them) appear in the error that followed, and counts one ``backfired``;
a lesson that this takes below the retirement floor is retired at once.

Consolidation (:mod:`memory.consolidate`): ``consolidate`` merges restatements
through the dedup rule ``add`` uses and retires what keeps backfiring; ``retire``,
``retired`` and ``restore`` move lessons to and from ``<memory file>.retired.jsonl``.
Nothing is deleted: merged-away lessons go to ``<memory file>.merged.jsonl``.

Every lesson that comes in (``add``, ``put_many``) has its texts cleaned first
(:func:`memory.text.clean`: NFKC, no format or tag characters), whoever wrote it.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Collection, Container, Iterable

from pydantic import BaseModel

from memory import consolidate as _consolidate
from memory import snapshot
from memory.consolidate import (
    RETIRE_CONFIDENCE,
    ConsolidationReport,
    below_floor,
    floor_reason,
    retire_locked,
    side_path,
)
from memory.dedup import find_duplicate, merge_into
from memory.gcpause import paused_gc
from memory.index import LessonIndex
from memory.jsonl import Change, JsonlFile
from memory.lesson import LESSON_TYPES, Lesson, assign_id
from memory.recall import Recalled, Scorer, recall
from memory.text import clean
from memory.tokens import term_set

BOOST = 0.1
PENALTY = 0.1
BACKFIRE_SHARE = 0.5


class LessonNotFound(KeyError):
    """No lesson has that id."""

    def __str__(self) -> str:
        return f"no lesson with id {self.args[0]!r}"


class _Taken:
    """The ids in use: those indexed and those given out in the batch being added."""

    def __init__(self, *containers: Container[str]):
        self.containers = containers

    def __contains__(self, lesson_id: object) -> bool:
        return any(lesson_id in c for c in self.containers)


class MemoryStats(BaseModel):
    count: int
    do: int
    dont: int
    reuse_rate: float
    """Share of lessons used at least once."""
    mean_confidence: float
    by_type: dict[str, int]

    def headline(self) -> str:
        return (
            f"{self.count} lessons, {self.do} do / {self.dont} dont, "
            f"{self.reuse_rate:.1%} reuse rate, avg confidence {self.mean_confidence:.3f}"
        )


def cleaned(lesson: Lesson) -> Lesson:
    """A copy of ``lesson`` with its trigger, fix and source task cleaned (memory.text)."""
    texts = {key: clean(getattr(lesson, key)) for key in ("trigger", "fix", "source_task")}
    return lesson.model_copy(deep=True, update=texts)


def named_by(ids: Iterable[str], given: str) -> list[str]:
    """The ids ``given`` names, as git takes a commit by a unique prefix: the one it is,
    else every one that begins with it; case-insensitive. Nothing for a blank ``given``."""
    wanted = given.strip().lower()
    if not wanted:
        return []
    ids = list(ids)
    exact = [i for i in ids if i.lower() == wanted]
    return exact or [i for i in ids if i.lower().startswith(wanted)]


class MemoryStore:
    """Lessons in a JSONL file; see the module docstring."""

    def __init__(self, path: str | os.PathLike[str]):
        self.file: JsonlFile[Lesson] = JsonlFile(path, Lesson)
        self._index: LessonIndex | None = None
        self._unsaved_ids: set[str] = set()  # ids derived in memory, not yet in the file

    @property
    def path(self):
        return self.file.path

    def close(self) -> None:
        """Release the memory file's descriptor; the store stays usable (it reads anew)."""
        self.file.close()
        self._index = None

    # ------------------------------------------------------------------ sync
    def _sync(self, locked: bool = False) -> LessonIndex:
        change = self.file.refresh_locked() if locked else self.file.refresh()
        return self._apply(change)

    def _apply(self, change: Change[Lesson]) -> LessonIndex:
        full = self._index is None or change.reset
        added = self.file.records if full else change.added
        batch: set[str] = set()
        taken = _Taken(batch) if full else _Taken(self._index.by_id, batch)  # type: ignore[union-attr]
        if full:
            self._unsaved_ids.clear()
        with paused_gc():
            for lesson in added:
                before = lesson.id
                batch.add(assign_id(lesson, taken))
                if lesson.id != before:
                    self._unsaved_ids.add(lesson.id)
            if full:
                self._index = self._full_index(added)
            else:
                self._index.add_many(added)  # type: ignore[union-attr]
        return self._index  # type: ignore[return-value]

    def _full_index(self, lessons: list[Lesson]) -> LessonIndex:
        """Index every lesson, from the snapshot when it is valid (see :mod:`memory.snapshot`)."""
        if len(lessons) < snapshot.MIN_LESSONS:
            return LessonIndex(lessons)
        path = snapshot.snapshot_path(self.path)
        index = snapshot.load(path, lessons)
        if index is None:
            index = LessonIndex(lessons)
            snapshot.save(index, path)
        return index

    def _rewrite(self, index: LessonIndex, changed: list[Lesson]) -> None:
        """Write the index's lessons back; ``changed`` are those modified in memory."""
        unsaved = [index.slots[index.by_id[i]] for i in self._unsaved_ids if i in index.by_id]
        try:
            self.file.rewrite_locked(index.lessons(), changed=[*changed, *unsaved])
            self._unsaved_ids.clear()
        except BaseException:
            self.file.invalidate()
            self._index = None
            raise

    # ------------------------------------------------------------------ reads
    def all(self) -> list[Lesson]:
        """Every lesson, in file order."""
        return self._sync().lessons()

    def get(self, lesson_id: str) -> Lesson | None:
        index = self._sync()
        slot = index.by_id.get(lesson_id)
        return None if slot is None else index.slots[slot]

    def find(self, given: str) -> list[Lesson]:
        """The lessons ``given`` names (:func:`named_by`: an id or a unique prefix)."""
        index = self._sync()
        return [index.slots[index.by_id[i]] for i in named_by(index.by_id, given)]  # type: ignore[misc]

    def recall(
        self,
        task: str,
        limit: int = 10,
        scorer: str | Scorer = "default",
        now: float | None = None,
        exclude_tags: Collection[str] = (),
    ) -> list[Recalled]:
        """The lessons most worth showing for ``task`` (see :mod:`memory.recall`)."""
        index = self._sync()
        return recall(index, task, limit=limit, scorer=scorer, now=now, exclude_tags=exclude_tags)

    def stats(self) -> MemoryStats:
        lessons = self.all()
        n = len(lessons)
        polarity = Counter(lesson.polarity for lesson in lessons)
        by_type = Counter(lesson.type for lesson in lessons)
        return MemoryStats(
            count=n,
            do=polarity["do"],
            dont=polarity["dont"],
            reuse_rate=sum(1 for lesson in lessons if lesson.used > 0) / n if n else 0.0,
            mean_confidence=sum(lesson.confidence for lesson in lessons) / n if n else 0.0,
            by_type={t: by_type[t] for t in LESSON_TYPES if by_type[t]},
        )

    # ------------------------------------------------------------------ writes
    def save(self, lesson: Lesson) -> Lesson:
        """Store a lesson; returns it, or the stored lesson it was merged into."""
        return self.add(lesson)[0]

    def add(self, lesson: Lesson) -> tuple[Lesson, bool]:
        """``save``, also saying whether the lesson was merged into a stored one."""
        lesson = cleaned(lesson)
        with self.file.lock:
            index = self._sync(locked=True)
            stored = find_duplicate(index, lesson)
            if stored is not None:
                merge_into(stored, lesson)
                index.update(stored)
                self._rewrite(index, [stored])
                return stored, True
            new = lesson.model_copy(deep=True)
            assign_id(new, index.by_id)
            index = self._apply(self.file.append_locked([new]))
            return index.slots[index.by_id[new.id]], False  # type: ignore[return-value]

    def put_many(self, lessons: Iterable[Lesson]) -> tuple[int, int, int]:
        """Add or replace lessons by id, without dedup, in one atomic rewrite: an import
        puts back what an export wrote, and near-duplicates it holds stay apart. A lesson
        without an id gets one. Returns (added, replaced, unchanged)."""
        added = replaced = unchanged = 0
        with self.file.lock:
            stored = self._sync(locked=True).lessons()  # what other processes wrote is in
            at = {lesson.id: i for i, lesson in enumerate(stored)}
            merged, changed = list(stored), []
            for lesson in lessons:
                lesson = cleaned(lesson)
                if not lesson.id:
                    assign_id(lesson, at)
                i = at.get(lesson.id)
                if i is not None and merged[i].model_dump_json() == lesson.model_dump_json():
                    unchanged += 1
                    continue
                if i is None:
                    at[lesson.id] = len(merged)
                    merged.append(lesson)
                    added += 1
                else:
                    merged[i] = lesson
                    replaced += 1
                changed.append(lesson)
            if changed:
                self.file.rewrite_locked(merged, changed=changed)
                self.close()  # the index is built anew from the file on the next read
        return added, replaced, unchanged

    def forget(self, lesson_id: str) -> Lesson:
        """Remove a lesson; raises LessonNotFound."""
        with self.file.lock:
            index = self._sync(locked=True)
            slot = index.by_id.get(lesson_id)
            if slot is None:
                raise LessonNotFound(lesson_id)
            lesson = index.slots[slot]
            index.remove(lesson_id)
            self._rewrite(index, [])
            return lesson  # type: ignore[return-value]

    def _modify(self, ids: Iterable[str], change) -> list[str]:
        """Apply ``change`` to each known lesson it accepts; one rewrite for all."""
        with self.file.lock:
            index = self._sync(locked=True)
            done: list[Lesson] = []
            for lesson_id in dict.fromkeys(ids):
                slot = index.by_id.get(lesson_id)
                lesson = None if slot is None else index.slots[slot]
                if lesson is not None and change(lesson):
                    index.update(lesson)
                    done.append(lesson)
            if done:
                self._rewrite(index, done)
            return [lesson.id for lesson in done]

    def boost_confidence(self, ids: Iterable[str]) -> list[str]:
        """+0.1 confidence (max 1), +1 use, last used now; returns the ids boosted."""
        now = time.time()

        def boost(lesson: Lesson) -> bool:
            lesson.confidence = round(min(1.0, lesson.confidence + BOOST), 6)
            lesson.used += 1
            lesson.last_used_ts = now
            return True

        return self._modify(ids, boost)

    def penalize_backfired(self, ids: Iterable[str], error_text: str) -> list[str]:
        """-0.1 confidence to each applied lesson whose trigger the error echoes; those that
        fall below the floor (:mod:`memory.consolidate`) are retired. Returns the ids
        penalised (retired ones included)."""
        error_terms = term_set(error_text)
        if not error_terms:
            return []

        def backfired(lesson: Lesson) -> bool:
            trigger = term_set(lesson.trigger)
            if not trigger or len(trigger & error_terms) / len(trigger) <= BACKFIRE_SHARE:
                return False
            lesson.confidence = round(max(0.0, lesson.confidence - PENALTY), 6)
            lesson.backfired += 1
            return True

        with self.file.lock:
            done = self._modify(ids, backfired)
            index = self._sync(locked=True)
            slots = [index.by_id[i] for i in done if i in index.by_id]
            floor = [index.slots[s] for s in slots if below_floor(index.slots[s])]  # type: ignore[arg-type]
            if floor:
                retire_locked(self, index, [(x, floor_reason(x)) for x in floor])  # type: ignore[misc]
            return done

    # ------------------------------------------------------------------ consolidation
    def consolidate(
        self, ids: Iterable[str] | None = None, dry_run: bool = False
    ) -> ConsolidationReport:
        """Merge near-duplicates (among ``ids``, or all) and retire what keeps backfiring."""
        return _consolidate.consolidate(self, ids, dry_run)

    def retire(self, ids: Iterable[str], reason: str) -> list[str]:
        """Move lessons to the retired file with ``reason``; returns the ids retired."""
        with self.file.lock:
            index = self._sync(locked=True)
            found = [index.slots[index.by_id[i]] for i in dict.fromkeys(ids) if i in index.by_id]
            if found:
                retire_locked(self, index, [(x, reason) for x in found])  # type: ignore[misc]
            return [x.id for x in found]  # type: ignore[union-attr]

    def _retired_file(self) -> JsonlFile[Lesson]:
        return JsonlFile(side_path(self.file, "retired"), Lesson)

    def retired(self) -> list[Lesson]:
        """The retired lessons, oldest first, with their ``retired_at`` and ``retired_reason``."""
        file = self._retired_file()
        file.refresh()
        return list(file.records)

    def restore(self, lesson_id: str) -> Lesson:
        """Bring a retired lesson back (its confidence raised to the floor, so that the next
        consolidation keeps it); raises LessonNotFound."""
        with self.file.lock:
            index = self._sync(locked=True)
            file = self._retired_file()
            with file.lock:
                file.refresh_locked()
                found = [x for x in file.records if x.id == lesson_id]
                if not found:
                    raise LessonNotFound(lesson_id)
                if lesson_id not in index.by_id:
                    lesson = found[-1].model_copy(deep=True)
                    for key in ("retired_at", "retired_reason"):
                        (lesson.__pydantic_extra__ or {}).pop(key, None)
                    lesson.confidence = max(lesson.confidence, RETIRE_CONFIDENCE)
                    index = self._apply(self.file.append_locked([lesson]))
                # written back before it leaves the retired file: a crash leaves it in both
                file.rewrite_locked([x for x in file.records if x.id != lesson_id])
            return index.slots[index.by_id[lesson_id]]  # type: ignore[return-value]
