"""When a new lesson is a restatement of a stored one, and what a merge keeps.

Two lessons are duplicates when they have the same type and polarity and the
term sets of their triggers (:mod:`memory.tokens`) overlap by more than 70%,
measured as Jaccard similarity ``|A & B| / |A | B|``. A ``do`` and a ``dont``
lesson with the same trigger contradict each other; both are kept, and
reinforcement decides between them.

Finding duplicates must not read every trigger on every save. With Jaccard
above ``t``, two sets share more than ``t * |A|`` terms, so a match must contain
at least one of the ``|A| - ceil(t * |A|) + 1`` *rarest* terms of the new
trigger (prefix filtering). Only the triggers posted under those few rare terms,
and of a compatible size, are compared exactly.

A merge folds the new lesson into the stored one, which keeps its id, ts,
type, polarity, trigger and fix (the stored wording is the one that earned its
confidence). It takes the union of the tags, the sum of the use counts and of the
backfire counts, the later ``last_used_ts``, and the new source task if it had
none. The confidence keeps the penalised history (:func:`merged_confidence`): a
lesson that was ever penalised (a backfire counted, or a confidence below a fresh
lesson's 0.3, as in files written before backfires were counted) keeps its own
confidence, and only when neither side was penalised does the higher one win. A
reflection that restates a lesson penalised to 0.1 brings a fresh 0.3 with no record
behind it; taking the higher one would undo the penalties, and the restatement would
retire never. Fields only the new lesson carries are added. So the new lesson's own wording,
its trigger and fix where they differ from the stored ones, is dropped;
:func:`dropped_by_merge` names it, so that whoever added the lesson can be told (and
can forget the stored lesson and add theirs, if their wording is the better one).
"""

from __future__ import annotations

import math

from memory.index import LessonIndex
from memory.lesson import Lesson
from memory.reflection import FRESH_CONFIDENCE
from memory.tags import normalize_tags
from memory.tokens import term_set

MERGE_THRESHOLD = 0.7


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def find_duplicate(
    index: LessonIndex, lesson: Lesson, threshold: float = MERGE_THRESHOLD
) -> Lesson | None:
    """The stored lesson that ``lesson`` would merge into, or None."""
    new = frozenset(term_set(lesson.trigger))
    if not new:
        return None
    rare_first = sorted(new, key=lambda term: (index.trigger_frequency(term), term))
    prefix = len(new) - math.ceil(threshold * len(new)) + 1
    lo, hi = threshold * len(new), len(new) / threshold
    best: tuple[float, int] | None = None
    seen: set[int] = set()
    alive = index.alive.values
    for term in rare_first[: max(prefix, 1)]:
        for slot in index.trigger_slots(term).tolist():
            if slot in seen or not alive[slot]:
                continue
            seen.add(slot)
            stored = index.slots[slot]
            if stored is None or stored.type != lesson.type or stored.polarity != lesson.polarity:
                continue
            other = term_set(stored.trigger)
            if not lo <= len(other) <= hi:
                continue
            score = jaccard(new, other)
            if score > threshold and (best is None or (score, -slot) > (best[0], -best[1])):
                best = (score, slot)
    return None if best is None else index.slots[best[1]]


def dropped_by_merge(stored: Lesson, new: Lesson) -> dict[str, str]:
    """The wording of ``new`` that a merge into ``stored`` did not keep: field -> text."""
    return {
        name: getattr(new, name)
        for name in ("trigger", "fix")
        if getattr(new, name).strip() != getattr(stored, name).strip()
    }


def penalised(lesson: Lesson) -> bool:
    """Whether a lesson's confidence carries penalties (see the module docstring)."""
    return lesson.backfired > 0 or lesson.confidence < FRESH_CONFIDENCE


def merged_confidence(stored: Lesson, new: Lesson) -> float:
    """The lowest confidence of the penalised sides, else the higher of the two."""
    marked = [x.confidence for x in (stored, new) if penalised(x)]
    return min(marked) if marked else max(stored.confidence, new.confidence)


def merge_into(stored: Lesson, new: Lesson) -> Lesson:
    """Fold ``new`` into ``stored`` in place (see the module docstring); return ``stored``."""
    stored.tags = normalize_tags([*stored.tags, *new.tags])
    stored.confidence = merged_confidence(stored, new)
    stored.used = stored.used + new.used
    stored.backfired = stored.backfired + new.backfired
    if new.last_used_ts is not None:
        stored.last_used_ts = max(stored.last_used_ts or 0.0, new.last_used_ts)
    if not stored.source_task and new.source_task:
        stored.source_task = new.source_task
    extra = stored.__pydantic_extra__
    for key, value in (new.__pydantic_extra__ or {}).items():
        if extra is not None and key not in extra:
            extra[key] = value
    return stored
