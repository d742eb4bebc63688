"""Keeping a growing memory useful: retire lessons that keep backfiring, merge restatements.

Retirement. A lesson is *below the floor* when its confidence is under
:data:`RETIRE_CONFIDENCE` after at least :data:`RETIRE_MIN_USES` applications, those
that helped (``used``, +0.1 each from :meth:`MemoryStore.boost_confidence`) and those
that backfired (``backfired``, -0.1 each from :meth:`MemoryStore.penalize_backfired`)
together: it was applied often enough to be judged, and its penalties have outweighed
its boosts. Counting the backfires matters: ``used`` grows only on a boost, so a lesson
that only ever backfired would otherwise sit at confidence 0 forever, never judged. A
fresh lesson (0.3) that backfires three times in a row is retired on the third. A young
lesson is never retired for a low confidence alone. A retired lesson is
moved, never deleted: it is appended to ``<memory file>.retired.jsonl`` with
``retired_at`` (unix time) and ``retired_reason``, and ``restore`` puts it back.

Consolidation merges near-duplicates through the store's own dedup rule
(:mod:`memory.dedup`), exactly as ``add`` merges a restatement: the lessons are
taken in file order, and each one that :func:`memory.dedup.find_duplicate` matches
among the earlier kept ones is folded into it by :func:`memory.dedup.merge_into`
(the earlier lesson keeps its id and wording). Merged-away lessons are appended to
``<memory file>.merged.jsonl`` with ``merged_into`` and ``merged_at``. Then what is
below the floor is retired. ``ids`` limits both to the given lessons (the in-band
memory tool passes the lessons it recalled).

No line is lost: the side files are written (and fsynced) before the memory file is
rewritten (:mod:`memory.jsonl`: lock, temporary file, fsync, rename; torn and invalid
lines go to the rejected file), so a crash between the two leaves a lesson in both
files, never in neither. All of it happens under the memory file's lock, after reading
what other processes wrote. A dry run computes the same report and writes nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from memory.dedup import find_duplicate, merge_into
from memory.index import LessonIndex
from memory.jsonl import JsonlFile
from memory.lesson import Lesson

RETIRE_CONFIDENCE = 0.2
"""A lesson with a confidence below this ..."""
RETIRE_MIN_USES = 3
"""... after at least this many applications (helped or backfired) is retired."""
BACKFIRE_REASON = "kept backfiring"


def applications(lesson: Lesson) -> int:
    """How many times builds applied the lesson and judged it: helped plus backfired."""
    return lesson.used + lesson.backfired


def below_floor(lesson: Lesson) -> bool:
    """Whether a lesson has been applied enough and kept backfiring (see the module
    docstring)."""
    return applications(lesson) >= RETIRE_MIN_USES and lesson.confidence < RETIRE_CONFIDENCE


def floor_reason(lesson: Lesson) -> str:
    return (
        f"{BACKFIRE_REASON}: confidence {lesson.confidence:g} < {RETIRE_CONFIDENCE:g}"
        f" after {applications(lesson)} applications ({lesson.backfired} backfired)"
    )


def side_path(memory_file: JsonlFile[Lesson], kind: str) -> Path:
    """``<memory file>.<kind>.jsonl`` beside the file the data is in (a link's target)."""
    target = memory_file.target
    return target.with_name(f"{target.name}.{kind}.jsonl")


def append_durably(file: JsonlFile[Lesson], records: list[Lesson]) -> None:
    """Append under the file's lock and fsync, so the records survive a crash that follows."""
    if not records:
        return
    file.append(records)
    fd = os.open(file.target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ConsolidationReport(BaseModel):
    """What a consolidation merged and retired (or would have, for a dry run)."""

    before: int
    """Lessons in the memory before."""
    after: int
    """Lessons in the memory after."""
    merged: list[tuple[str, list[str]]]
    """(kept id, ids merged into it), in file order."""
    retired: list[str]
    """Ids retired (moved to the retired file)."""
    dry_run: bool = False

    def line(self) -> str:
        n_merged = sum(len(ids) for _, ids in self.merged)
        verb = "would merge" if self.dry_run else "merged"
        retire = "would retire" if self.dry_run else "retired"
        tail = " (dry run, nothing written)" if self.dry_run else ""
        return (
            f"{self.before} -> {self.after} lessons: {verb} {n_merged} into {len(self.merged)},"
            f" {retire} {len(self.retired)}{tail}"
        )


@dataclass
class Plan:
    """The lessons a consolidation changes: the kept ones (merged into) and those that go."""

    kept: list[Lesson]
    merged_away: list[tuple[Lesson, str]]
    """(lesson, id it was merged into)."""
    retired: list[tuple[Lesson, str]]
    """(lesson, reason)."""
    groups: list[tuple[str, list[str]]]


def plan(lessons: list[Lesson], dry_run: bool) -> Plan:
    """Merge restatements among ``lessons`` (file order) and pick what is below the floor.

    One index of all of them is built at once, every slot dead; a lesson that matches
    no earlier kept one comes alive, so :func:`find_duplicate` sees exactly the kept
    lessons before it, as ``add`` would have. Lessons are changed in place unless
    ``dry_run`` (then copies are).
    """
    work = [x.model_copy(deep=True) for x in lessons] if dry_run else lessons
    kept = LessonIndex(work)
    kept.alive.values[:] = False
    groups: dict[str, list[str]] = {}
    merged_away: list[tuple[Lesson, str]] = []
    changed: dict[str, Lesson] = {}
    alive: list[Lesson] = []
    for slot, lesson in enumerate(work):
        stored = find_duplicate(kept, lesson)
        if stored is None:
            kept.alive[slot] = True
            alive.append(lesson)
            continue
        merge_into(stored, lesson)
        groups.setdefault(stored.id, []).append(lesson.id)
        merged_away.append((lesson, stored.id))
        changed[stored.id] = stored
    retired = [(x, floor_reason(x)) for x in alive if below_floor(x)]
    gone = {x.id for x, _ in retired}
    return Plan(
        kept=[x for i, x in changed.items() if i not in gone],
        merged_away=merged_away,
        retired=retired,
        groups=list(groups.items()),
    )


def stamped(lesson: Lesson, **fields) -> Lesson:
    """A copy of ``lesson`` with extra fields (kept by ``extra="allow"``)."""
    copy = lesson.model_copy(deep=True)
    for key, value in fields.items():
        setattr(copy, key, value)
    return copy


def consolidate(store, ids: Iterable[str] | None = None, dry_run: bool = False):
    """See the module docstring; ``store`` is a :class:`memory.store.MemoryStore`."""
    with store.file.lock:
        index = store._sync(locked=True)
        before = index.n_alive
        if ids is None:
            chosen = index.lessons()
        else:
            slots = sorted({index.by_id[i] for i in ids if i in index.by_id})
            chosen = [index.slots[s] for s in slots]
        p = plan(chosen, dry_run)
        gone = len(p.merged_away) + len(p.retired)
        report = ConsolidationReport(
            before=before,
            after=before - gone,
            merged=p.groups,
            retired=[x.id for x, _ in p.retired],
            dry_run=dry_run,
        )
        if dry_run or not gone:
            return report
        now = time.time()
        merged_file = JsonlFile(side_path(store.file, "merged"), Lesson)
        append_durably(
            merged_file, [stamped(x, merged_into=kid, merged_at=now) for x, kid in p.merged_away]
        )
        removed = [x.id for x, _ in p.merged_away]
        retire_locked(store, index, p.retired, now, changed=p.kept, removed=removed)
        return report


def retire_locked(
    store,
    index: LessonIndex,
    lessons: list[tuple[Lesson, str]],
    now: float | None = None,
    changed: list[Lesson] = (),  # type: ignore[assignment]
    removed: Iterable[str] = (),
) -> None:
    """Append ``lessons`` to the retired file, then rewrite the memory without them.

    The caller holds the memory file's lock. Lessons merged away (already written to
    the merged file) are removed too: those in ``index`` that are not kept.
    """
    now = time.time() if now is None else now
    retired_file = JsonlFile(side_path(store.file, "retired"), Lesson)
    append_durably(
        retired_file, [stamped(x, retired_at=now, retired_reason=why) for x, why in lessons]
    )
    live = set(index.by_id)
    for lesson_id in removed:
        if lesson_id in live:
            index.remove(lesson_id)
    for lesson, _ in lessons:
        if lesson.id in index.by_id:
            index.remove(lesson.id)
    for lesson in changed:
        if lesson.id in index.by_id:
            index.update(lesson)
    store._rewrite(index, list(changed))
