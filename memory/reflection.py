"""Turn a model's reflection into lessons: ``TYPE | TRIGGER | FIX`` and ``ANTI | TRIGGER | WHY``.

Models wrap the lines they were asked for in prose, bullets, numbering,
markdown and stray spaces; :func:`parse_reflection` keeps every line it can
use and says why it skipped each one it cannot, so the run's events show what
was lost. A line is usable when it splits on ``|`` into at least three
non-empty parts (extra parts belong to the fix). ``ANTI`` (also ``DONT``,
``NEVER``, ``ANTI-PATTERN``) makes a ``dont`` lesson of type error_pattern;
an unknown type word keeps the lesson as an error_pattern and says so. A line that
reads as an attempt to steer a later build's model (:mod:`memory.guard`) is skipped.

New lessons start at confidence 0.3 (they must be reused before they outweigh
proven ones), carry the given tags or, without them, the tags their text
implies, and remember the task they came from (cut to 200 characters).
"""

from __future__ import annotations

import re

from memory.guard import injection
from memory.lesson import LESSON_TYPES, SOURCE_TASK_MAX, Lesson
from memory.tags import infer_tags_from_text, normalize_tags

FRESH_CONFIDENCE = 0.3
_LEAD = re.compile(r"^\s*(?:[-*•+>]+|\(?\d{1,3}[.)]|#+)?\s*")
_ANTI = {"anti", "dont", "don't", "never", "anti_pattern", "antipattern", "anti-pattern"}
_ALIASES = {
    "error": "error_pattern",
    "errors": "error_pattern",
    "bug": "error_pattern",
    "tool": "tool_pattern",
    "tools": "tool_pattern",
    "arch": "architecture",
    "design": "architecture",
    "dep": "dependency",
    "deps": "dependency",
    "dependencies": "dependency",
    "perf": "performance",
}


def _clean(part: str) -> str:
    """Drop markdown emphasis around a part, and quotes that enclose all of it."""
    part = part.strip().strip("*").strip()
    if len(part) > 1 and part[0] == part[-1] and part[0] in "\"'":
        part = part[1:-1].strip()
    return part


def parse_reflection(
    text: str, tags: list[str] | None = None, source_task: str = "", ts: float | None = None
) -> tuple[list[Lesson], list[str]]:
    """The lessons in ``text`` and, for each line skipped, a reason."""
    lessons: list[Lesson] = []
    skipped: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = _LEAD.sub("", raw).strip()
        if not line or line.strip("`").strip() == "":
            continue
        if line.upper().strip(".") in ("NONE", "NO LESSONS", "N/A"):
            continue
        parts = [_clean(p) for p in line.split("|")]
        parts = [p for p in parts if p] if len(parts) > 3 else parts
        if len(parts) < 3:
            skipped.append(f"line {number}: not TYPE | TRIGGER | FIX: {raw.strip()[:120]}")
            continue
        kind, trigger, fix = parts[0], parts[1], " | ".join(parts[2:])
        if not trigger or not fix:
            skipped.append(f"line {number}: empty trigger or fix")
            continue
        why = injection(f"{trigger}\n{fix}")
        if why:  # a later build would read it: a line that steers the reader is dropped
            skipped.append(f"line {number}: {why}: refused")
            continue
        word = kind.lower().replace(" ", "_")
        polarity = "do"
        if word in _ANTI:
            word, polarity = "error_pattern", "dont"
        word = _ALIASES.get(word, word)
        if word not in LESSON_TYPES:
            skipped.append(f"line {number}: unknown type {kind!r}, kept as error_pattern")
            word = "error_pattern"
        extra = {} if ts is None else {"ts": ts}
        lessons.append(
            Lesson(
                type=word,
                trigger=trigger,
                fix=fix,
                polarity=polarity,
                confidence=FRESH_CONFIDENCE,
                tags=normalize_tags(tags) if tags else sorted(infer_tags_from_text(line)),
                source_task=source_task[:SOURCE_TASK_MAX],
                **extra,
            )
        )
    return lessons, skipped
