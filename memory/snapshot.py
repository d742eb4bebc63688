"""A derived cache of a large memory's text index, so a cold start does not re-read every word.

Indexing the text of 100,000 lessons (cutting words, stemming, postings,
inferred tags) takes seconds; loading the arrays it produced takes a tenth of
that. After a full build of a memory of at least ``MIN_LESSONS`` lessons the
store writes those arrays to ``<memory file>.index.npz`` beside the memory
file (atomically: a temporary file renamed into place). A later cold start
uses the snapshot only when it provably describes the lessons now in the file:

* the code that cuts and tags words is the same (a signature of the tokenizer,
  the stop words and the tag tables, stored in the snapshot);
* the snapshot's lessons, in order, are the file's first lessons, with the
  same ids and the same fingerprint of everything the index reads (trigger,
  fix, tags, source task). Confidence and use counts are not in the
  fingerprint: they are read from the file every time, so boosts and penalties
  by other processes never make the snapshot stale;
* lessons appended since then are few (at most a tenth, or 1,000): they are
  indexed on top.

Anything else (a forgotten or merged lesson, a changed tokenizer, a damaged
file) means a full build and a fresh snapshot. The file is a cache: deleting
it is always safe, and failing to write it (a read-only home) is ignored.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from memory import tags, tokens
from memory.index import TAG_BITS, LessonIndex
from memory.lesson import Lesson
from orchestrator.sandbox.files import replacing

FORMAT = 1
MIN_LESSONS = 5000


def snapshot_path(memory_path: Path) -> Path:
    return memory_path.with_name(memory_path.name + ".index.npz")


def signature() -> str:
    """Changes whenever a change of code would index the same text differently."""
    parts = {
        "format": FORMAT,
        "stopwords": sorted(tokens.STOPWORDS),
        "table": tokens._TABLE.hex(),
        "stemmer": "snowball-english",
        "tag_bits": TAG_BITS,
        "implies": {k: sorted(v) for k, v in sorted(tags._IMPLIES.items())},
        "phrases": tags._PHRASES,
        "extensions": tags._EXTENSIONS,
    }
    return hashlib.blake2b(json.dumps(parts, sort_keys=True).encode(), digest_size=16).hexdigest()


def fingerprints(lessons: list[Lesson]) -> np.ndarray:
    """One 64-bit hash per lesson of the fields the text index reads."""
    out = np.empty(len(lessons), np.uint64)
    for i, x in enumerate(lessons):
        key = "\x1f".join((x.trigger, x.fix, "\x1e".join(x.tags), x.source_task))
        out[i] = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
    return out


def save(index: LessonIndex, path: Path) -> bool:
    """Write the index's snapshot; False when the index is not compact or the write fails."""
    state = index.text_state()
    if state is None:
        return False
    lessons = index.lessons()
    state["ids"] = np.array([x.id for x in lessons])
    state["fingerprints"] = fingerprints(lessons)
    state["signature"] = np.frombuffer(signature().encode(), np.uint8)
    try:
        with replacing(path, durable=False) as fh:  # a cache: no fsync
            np.savez(fh, **state)
    except OSError:
        return False
    return True


def load(path: Path, lessons: list[Lesson]) -> LessonIndex | None:
    """An index of ``lessons`` built from a valid snapshot, or None (see the module docstring)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            state = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, KeyError, EOFError):
        return None
    try:
        if state["signature"].tobytes().decode() != signature():
            return None
        ids, prints = state["ids"], state["fingerprints"]
        m = len(ids)
        if m > len(lessons) or len(lessons) - m > max(1000, m // 10):
            return None
        head = lessons[:m]
        if not np.array_equal(ids, np.array([x.id for x in head])):
            return None
        if not np.array_equal(prints, fingerprints(head)):
            return None
        index = LessonIndex.from_text_state(state, head)
    except (KeyError, ValueError, UnicodeDecodeError, IndexError):
        return None
    index.add_many(lessons[m:])
    return index
