"""Recalled lessons as text for a system prompt, within a character budget.

Two sections, as the seed has them: lessons to apply, then anti-patterns framed
as NEVER so that a ``dont`` lesson is not mistaken for advice. Every line
carries the lesson's id, which the model cites back (finish_phase's
``applied_lessons``) so that reinforcement reaches the right lessons. Lines go
in rank order; when the budget would be exceeded, lower-ranked lines are left
out whole (a lesson is never cut mid-sentence) and a last line says how many.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.lesson import Lesson
from memory.recall import Recalled

DO_HEADER = "## Lessons from past builds (apply these):"
DONT_HEADER = "## Anti-patterns from past builds (NEVER do these):"


def lesson_line(lesson: Lesson) -> str:
    if lesson.polarity == "dont":
        return f"- [{lesson.id}] NEVER: {lesson.trigger} (Reason: {lesson.fix})"
    return f"- [{lesson.id}] [{lesson.type}] When: {lesson.trigger} -> Do: {lesson.fix}"


def format_for_prompt(recalled: Sequence[Recalled | Lesson], max_chars: int = 4000) -> str:
    """The prompt text for ``recalled`` (best first), at most ``max_chars`` long."""
    lessons = [r.lesson if isinstance(r, Recalled) else r for r in recalled]
    chosen: list[Lesson] = []
    used = 0
    for lesson in lessons:
        header = DO_HEADER if lesson.polarity == "do" else DONT_HEADER
        opens_section = all(c.polarity != lesson.polarity for c in chosen)
        cost = len(lesson_line(lesson)) + 1 + (len(header) + 2 if opens_section else 0)
        if used + cost > max_chars:
            continue
        chosen.append(lesson)
        used += cost
    sections = []
    for polarity, header in (("do", DO_HEADER), ("dont", DONT_HEADER)):
        lines = [lesson_line(lesson) for lesson in chosen if lesson.polarity == polarity]
        if lines:
            sections.append("\n".join([header, *lines]))
    text = "\n\n".join(sections)
    left_out = len(lessons) - len(chosen)
    if left_out:
        note = f"\n({left_out} more lesson(s) left out for space)"
        if len(text) + len(note) <= max_chars:
            text += note
    return text
