"""cadillac's memory: lessons learned from builds, and phase budgets learned from history.

``MemoryStore`` holds the lessons of a memory.jsonl (recall, dedup,
reinforcement); ``PhaseBudgets`` holds phase_budgets.jsonl (record a finished
phase, compute the next build's budgets). Both files are plain JSONL shared
safely between processes (:mod:`memory.jsonl`); a write that cannot be made
(a read-only file, a folder where no temporary file can be made) raises
``ReadOnlyFile`` or ``RewriteFailed``, both ``OSError``s, and changes nothing.
"""

from memory.budgets import Budget, BudgetRow, PhaseBudgets
from memory.consolidate import ConsolidationReport
from memory.jsonl import CorruptLineWarning, ReadOnlyFile, RewriteFailed
from memory.lesson import LESSON_TYPES, Lesson
from memory.notes import (
    AUTO_PINNED,
    IMPORTANCE,
    NOTE_TYPES,
    BadNote,
    Note,
    Notebook,
    NoteFolder,
    NoteNotFound,
    new_note,
    note_name,
)
from memory.prompt import format_for_prompt
from memory.recall import SCORERS, Recalled, ScoreParts
from memory.store import LessonNotFound, MemoryStats, MemoryStore
from memory.tags import KNOWN_TAGS, infer_tags_from_text, infer_task_tags

__all__ = [
    "AUTO_PINNED",
    "IMPORTANCE",
    "NOTE_TYPES",
    "BadNote",
    "Note",
    "NoteFolder",
    "NoteNotFound",
    "Notebook",
    "new_note",
    "note_name",
    "KNOWN_TAGS",
    "LESSON_TYPES",
    "SCORERS",
    "Budget",
    "BudgetRow",
    "ConsolidationReport",
    "CorruptLineWarning",
    "Lesson",
    "LessonNotFound",
    "MemoryStats",
    "MemoryStore",
    "PhaseBudgets",
    "ReadOnlyFile",
    "Recalled",
    "RewriteFailed",
    "ScoreParts",
    "format_for_prompt",
    "infer_tags_from_text",
    "infer_task_tags",
]
