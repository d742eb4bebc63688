"""The in-memory search structure over the lessons of one memory file.

Each lesson gets a *slot*; everything recall needs is kept per slot in numpy
columns (timestamps, confidence, use count, tag bitmasks, term counts) and in an
inverted index from term to the slots that contain it, with term frequencies.
Recall then scores every candidate at once with a few vector operations
instead of a Python loop over lessons.

The structure is kept up to date, never rebuilt on the hot path:

* a new lesson (an append, ours or another process's) is added to the end;
* a forgotten lesson's slot is marked dead;
* a lesson changed in place (boost, penalty, merge) has its columns rewritten.

Only a file replaced by another process makes the store build a fresh index.
Search terms come from the trigger, the fix and the tags as they were when the
lesson was indexed (a merge that adds tags updates the tag columns at once and
the tag terms at the next full load).
The index also keeps each trigger's term set and a term -> slots map of
triggers, which :mod:`memory.dedup` uses to find near-duplicates quickly.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from memory.lesson import Lesson
from memory.tags import KNOWN_TAGS, STACK_TAGS, infer_tags_from_text, stack_tags
from memory.tokens import term_set, terms

TAG_BITS = {tag: i for i, tag in enumerate(sorted(KNOWN_TAGS))}
assert len(TAG_BITS) <= 64, "tag bitmasks are uint64"


def tag_mask(tags: set[str] | frozenset[str] | list[str]) -> int:
    """The bitmask of the known tags among ``tags``."""
    mask = 0
    for tag in tags:
        bit = TAG_BITS.get(tag)
        if bit is not None:
            mask |= 1 << bit
    return mask


STACK_MASK = np.uint64(tag_mask(STACK_TAGS))


class _Column:
    """A growable numpy array (amortised O(1) append, in-place set)."""

    def __init__(self, dtype: type | np.dtype, fill: float | int | bool = 0):
        self._data = np.full(64, fill, dtype=dtype)
        self._fill = fill
        self.n = 0

    def append(self, value: float | int | bool) -> None:
        if self.n == len(self._data):
            grown = np.full(len(self._data) * 2, self._fill, dtype=self._data.dtype)
            grown[: self.n] = self._data
            self._data = grown
        self._data[self.n] = value
        self.n += 1

    def __setitem__(self, i: int, value: float | int | bool) -> None:
        self._data[i] = value

    @property
    def values(self) -> np.ndarray:
        return self._data[: self.n]


class LessonIndex:
    """Slots, columns and postings for a set of lessons."""

    def __init__(self, lessons: list[Lesson] | None = None):
        self.slots: list[Lesson | None] = []
        self.by_id: dict[str, int] = {}
        self.alive = _Column(bool, False)
        self.ts = _Column(np.float64)
        self.last = _Column(np.float64)  # last_used_ts, else ts
        self.confidence = _Column(np.float64)
        self.used = _Column(np.float64)
        self.doc_len = _Column(np.float64)  # number of terms (BM25 length)
        self.n_distinct = _Column(np.float64)  # distinct terms (seed keyword overlap)
        self.has_tags = _Column(bool, False)
        self.tags_mask = _Column(np.uint64)  # the lesson's own known tags
        self.tags_closure = _Column(np.uint64)  # ... plus the languages they imply
        self.has_src = _Column(bool, False)
        self.src_mask = _Column(np.uint64)  # tags inferred from source_task
        self.content_mask = _Column(np.uint64)  # tags inferred from trigger + fix
        self.vocab: dict[str, int] = {}
        self._post_docs: list[list[int]] = []
        self._post_tf: list[list[int]] = []
        self._arrays: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._df: list[int] = []  # live lessons per term
        self._indexed_tags: list[tuple[str, ...]] = []  # tags as they were indexed
        self.total_len = 0.0
        self.n_alive = 0
        self.trigger_terms: list[frozenset[str]] = []
        self.trigger_postings: dict[str, set[int]] = {}
        for lesson in lessons or ():
            self.add(lesson)

    # ---------------------------------------------------------------- updates
    def add(self, lesson: Lesson) -> int:
        """Index a lesson in a new slot; a lesson with a known id replaces the old slot."""
        old = self.by_id.get(lesson.id)
        if old is not None:
            self.remove(lesson.id)
        slot = len(self.slots)
        self.slots.append(lesson)
        self.by_id[lesson.id] = slot
        self.alive.append(True)
        for col in (self.ts, self.last, self.confidence, self.used, self.doc_len):
            col.append(0)
        for col in (self.n_distinct, self.tags_mask, self.tags_closure):
            col.append(0)
        for col in (self.src_mask, self.content_mask):
            col.append(0)
        self.has_tags.append(False)
        self.has_src.append(False)
        self.ts[slot] = lesson.ts
        self._set_scalars(slot, lesson)
        self._set_tags(slot, lesson)
        self.src_mask[slot] = tag_mask(infer_tags_from_text(lesson.source_task))
        self.has_src[slot] = bool(lesson.source_task)
        self.content_mask[slot] = tag_mask(infer_tags_from_text(lesson.text))

        self._indexed_tags.append(tuple(lesson.tags))
        counts = self._doc_terms(slot)
        self.doc_len[slot] = float(sum(counts.values()))
        self.n_distinct[slot] = float(len(counts))
        self.total_len += self.doc_len.values[slot]
        self.n_alive += 1
        vocab, docs, tfs = self.vocab, self._post_docs, self._post_tf
        for term, tf in counts.items():
            tid = vocab.get(term)
            if tid is None:
                tid = vocab[term] = len(docs)
                docs.append([])
                tfs.append([])
                self._df.append(0)
            self._df[tid] += 1
            docs[tid].append(slot)
            tfs[tid].append(tf)
            self._arrays.pop(tid, None)

        trig = frozenset(term_set(lesson.trigger))
        self.trigger_terms.append(trig)
        for term in trig:
            self.trigger_postings.setdefault(term, set()).add(slot)
        return slot

    def _doc_terms(self, slot: int) -> Counter[str]:
        """A slot's search terms with their counts: trigger, fix and tags as indexed."""
        lesson = self.slots[slot]
        assert lesson is not None
        return Counter(terms(f"{lesson.text} {' '.join(self._indexed_tags[slot])}"))

    def remove(self, lesson_id: str) -> None:
        """Mark a lesson's slot dead (its postings stay, masked out by ``alive``)."""
        slot = self.by_id[lesson_id]
        for term in self._doc_terms(slot):
            self._df[self.vocab[term]] -= 1
        del self.by_id[lesson_id]
        self.slots[slot] = None
        self.alive[slot] = False
        self.total_len -= self.doc_len.values[slot]
        self.n_alive -= 1
        for term in self.trigger_terms[slot]:
            self.trigger_postings[term].discard(slot)

    def update(self, lesson: Lesson) -> None:
        """Refresh the columns that boost, penalty and merge change (text stays the same)."""
        slot = self.by_id[lesson.id]
        self._set_scalars(slot, lesson)
        self._set_tags(slot, lesson)

    def _set_scalars(self, slot: int, lesson: Lesson) -> None:
        self.last[slot] = lesson.last_used_ts if lesson.last_used_ts is not None else lesson.ts
        self.confidence[slot] = lesson.confidence
        self.used[slot] = lesson.used

    def _set_tags(self, slot: int, lesson: Lesson) -> None:
        self.has_tags[slot] = bool(lesson.tags)
        self.tags_mask[slot] = tag_mask(lesson.tags)
        self.tags_closure[slot] = tag_mask(set(lesson.tags) | stack_tags(set(lesson.tags)))

    # ---------------------------------------------------------------- queries
    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(slots, term frequencies) of a term, as cached numpy arrays."""
        tid = self.vocab.get(term)
        if tid is None:
            return None
        arrays = self._arrays.get(tid)
        if arrays is None:
            arrays = (
                np.asarray(self._post_docs[tid], dtype=np.int64),
                np.asarray(self._post_tf[tid], dtype=np.float64),
            )
            self._arrays[tid] = arrays
        return arrays

    def document_frequency(self, term: str) -> int:
        """How many live lessons contain ``term``."""
        tid = self.vocab.get(term)
        return 0 if tid is None else self._df[tid]

    def doc_terms(self, slot: int) -> Counter[str]:
        return self._doc_terms(slot)

    def lessons(self) -> list[Lesson]:
        return [lesson for lesson in self.slots if lesson is not None]
