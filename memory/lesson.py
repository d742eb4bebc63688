"""The lesson record: one line of memory.jsonl.

A lesson says: in this situation (``trigger``), do this (``fix``), or, with
polarity ``dont``, never do this. Fields beyond the schema that a line carries
are kept (``extra="allow"``) and written back on every rewrite, so files from
other tools survive us. Lines written by the earlier system have no ``id``:
:func:`content_id` derives a stable one from the line's content, and the first
rewrite stores it, so an id shown to a user today still works tomorrow.

A line whose numbers no lesson can have is invalid, like a line of bad JSON: a ``used``
or ``backfired`` above :data:`MAX_USES` (10**400 would overflow the index's float
columns) or a ``ts`` that is infinite or NaN (it would be written back as ``null``, a
line no reader takes).
:mod:`memory.jsonl` skips such a line with a warning and keeps it aside on a rewrite.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Container
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.tags import normalize_tags

LessonType = Literal["error_pattern", "architecture", "tool_pattern", "dependency", "performance"]
LESSON_TYPES: tuple[str, ...] = LessonType.__args__  # type: ignore[attr-defined]
Polarity = Literal["do", "dont"]
SOURCE_TASK_MAX = 200
SCHEMA_VERSION = 1
MAX_USES = 10**9
"""The most uses a lesson may record (a build adds one): more is an invalid line."""


class Lesson(BaseModel):
    """One thing learned from a build."""

    model_config = ConfigDict(extra="allow")

    id: str = ""
    """Short stable id (8 hex digits) that users and the model cite; set by the store."""
    ts: float = Field(default_factory=time.time, allow_inf_nan=False)
    """Unix time the lesson was first written."""
    type: LessonType
    trigger: str = Field(min_length=1)
    """The situation, in one line."""
    fix: str
    """What to do, or (polarity dont) what never to do and why."""
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    used: int = Field(default=0, ge=0, le=MAX_USES)
    """How many times a build applied it and succeeded (the seed's count; recall reads it)."""
    backfired: int = Field(default=0, ge=0, le=MAX_USES)
    """How many times a build applied it and failed on an error that echoes its trigger:
    what retirement counts (:mod:`memory.consolidate`). 0 in lines of older files."""
    polarity: Polarity = "do"
    tags: list[str] = Field(default_factory=list)
    source_task: str = ""
    """The task it was learned on, cut to 200 characters."""
    last_used_ts: float | None = Field(default=None, allow_inf_nan=False)
    """Unix time it was last reinforced; decay counts from here (or from ts)."""
    v: int = SCHEMA_VERSION

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: object) -> object:
        if isinstance(value, list | tuple | set):
            return normalize_tags(value)
        return value

    @field_validator("source_task")
    @classmethod
    def _source_task(cls, value: str) -> str:
        return value[:SOURCE_TASK_MAX]

    @property
    def text(self) -> str:
        """Trigger and fix together: what search and tag inference read."""
        return f"{self.trigger} {self.fix}"


def content_id(lesson: Lesson, salt: int = 0) -> str:
    """A stable 8-hex-digit id from the lesson's content (``salt`` resolves collisions)."""
    key = f"{lesson.type}\x1f{lesson.trigger}\x1f{lesson.fix}\x1f{lesson.ts!r}\x1f{salt}"
    return hashlib.blake2b(key.encode(), digest_size=4).hexdigest()


def assign_id(lesson: Lesson, taken: Container[str]) -> str:
    """Give ``lesson`` an id if it has none (or a taken one); return it."""
    if lesson.id and lesson.id not in taken:
        return lesson.id
    salt = 0
    candidate = content_id(lesson)
    while candidate in taken:
        salt += 1
        candidate = content_id(lesson, salt)
    lesson.id = candidate
    return candidate
