"""The in-memory search structure over the lessons of one memory file.

Each lesson gets a *slot*; everything recall needs is kept per slot in numpy
columns (timestamps, confidence, use count, tag bitmasks, term counts) and in
two inverted indexes from term to slots: one over the whole lesson (trigger,
fix and tags, with term frequencies, for BM25) and one over triggers alone
(for :mod:`memory.dedup`). Recall then scores every candidate with a few vector
operations instead of a Python loop over lessons.

Building is vectorised, because a long-lived memory is large: the words of
every trigger, fix and tag list are cut in one C pass
(:func:`memory.tokens.words_of_fields`), mapped to ids through one dict, and
everything per *word* (stop word, stem, implied tags) is computed once per
distinct word rather than once per occurrence; postings are then one
``np.unique`` and a CSR layout (:mod:`memory.arrays`). Later additions go to
small per-term lists beside the CSR part, so the structure is kept up to date,
never rebuilt on the hot path:

* a new lesson (an append, ours or another process's) is added to the end;
* a forgotten lesson's slot is marked dead (``alive``), its counts subtracted;
* a lesson changed in place (boost, penalty, merge) has its columns rewritten.

Each slot also has the *stacks* its lesson is about (:meth:`LessonIndex.stacks`: its
stack tags less those its own text rules out, :func:`memory.tags.lesson_stacks`),
worked out when first asked for, once per distinct pair of tag and text masks.

Each slot also has the *build* its lesson was learned in (:data:`BUILD_WINDOW`),
worked out when first asked for: lessons with the same source task, or, without
one, the same tags, written within an hour of that build's first lesson. Recall
lets a lesson share its build-mates' relevance (:mod:`memory.recall`: half of it
in the default scorer, all of it in the ``build`` variant). An untagged lesson
without a source task says nothing of where it came from and is a build of its own.

Only a file replaced by another process makes the store build a fresh index,
and for a large memory even that starts from a snapshot (:mod:`memory.snapshot`).
Search terms come from the trigger, the fix and the tags as they were when the
lesson was indexed (a merge that adds tags updates the tag columns at once and
the tag terms at the next full load).
"""

from __future__ import annotations

from collections import Counter
from itertools import islice

import numpy as np

from memory.arrays import Column, Postings, triples
from memory.gcpause import paused_gc
from memory.lesson import Lesson
from memory.tags import (
    KNOWN_TAGS,
    STACK_TAGS,
    TAG_WORDS,
    implied_by,
    infer_tags_from_text,
    lesson_stacks,
    special_hits,
    stack_tags,
)
from memory.tags import word_tags as _word_tags
from memory.tokens import FIELD_BREAK, term_set, terms, terms_of, words_of_fields

TAG_BITS = {tag: i for i, tag in enumerate(sorted(KNOWN_TAGS))}
assert len(TAG_BITS) <= 64, "tag bitmasks are uint64"


def tag_mask(tags) -> int:
    """The bitmask of the known tags among ``tags``."""
    mask = 0
    for tag in tags:
        bit = TAG_BITS.get(tag)
        if bit is not None:
            mask |= 1 << bit
    return mask


STACK_MASK = np.uint64(tag_mask(STACK_TAGS))
_BIT_TAGS = {bit: tag for tag, bit in TAG_BITS.items()}
BUILD_WINDOW = 3600.0
"""Seconds after a build's first lesson within which a lesson of the same key joins it."""


class LessonIndex:
    """Slots, columns and postings for a set of lessons."""

    def __init__(self, lessons: list[Lesson] | None = None):
        self.slots: list[Lesson | None] = []
        self.by_id: dict[str, int] = {}
        self.alive = Column(bool, False)
        self.ts = Column(np.float64)
        self.last = Column(np.float64)  # last_used_ts, else ts
        self.confidence = Column(np.float64)
        self.used = Column(np.float64)
        self.doc_len = Column(np.float64)  # number of terms (BM25 length)
        self.n_distinct = Column(np.float64)  # distinct terms (seed keyword overlap)
        self.has_tags = Column(bool, False)
        self.tags_mask = Column(np.uint64)  # the lesson's own known tags
        self.tags_closure = Column(np.uint64)  # ... plus the languages they imply
        self.has_src = Column(bool, False)
        self.src_mask = Column(np.uint64)  # tags inferred from source_task
        self.content_mask = Column(np.uint64)  # tags inferred from trigger + fix
        self._build = Column(np.int64)  # the build each lesson was learned in (see builds())
        self._stacks = Column(np.uint64)  # the stacks each lesson is about (see stacks())
        self._stacks_of: dict[tuple[int, int], int] = {}
        self.n_builds = 0
        # The open build (its number, its first lesson's ts) per source task, and per tags.
        self._open_builds: tuple[dict[str, tuple[int, float]], dict[tuple, tuple[int, float]]]
        self._open_builds = ({}, {})
        self.total_len = 0.0
        self.n_alive = 0
        self.vocab: dict[str, int] = {}  # term -> term id
        self._word_ids: dict[bytes, int] = {}
        self._word_term = Column(np.int64, -1)  # word id -> term id, -1 for a stop word
        self._word_mask = Column(np.uint64)  # word id -> tags the word implies
        self._postings = Postings()
        self._trigger_postings = Postings()
        self._indexed_tags: list[tuple[str, ...]] = []
        self._tag_masks: dict[tuple[str, ...], tuple[int, int]] = {}
        self._src_masks: dict[str, int] = {}
        self._src_terms: dict[str, frozenset[str]] = {}
        if lessons:
            self.add_many(lessons)

    # ---------------------------------------------------------------- updates
    def add(self, lesson: Lesson) -> int:
        """Index one lesson in a new slot; returns the slot."""
        self.add_many([lesson])
        return len(self.slots) - 1

    def _word_ids_of(self, tokens: list[bytes]) -> np.ndarray:
        ids = self._word_ids
        known = len(ids)
        for word in set(tokens).difference(ids):
            ids[word] = len(ids)
        if len(ids) > known:  # new words: decide their term and tags once per word
            new = list(islice(reversed(ids), len(ids) - known))[::-1]
            vocab = self.vocab
            term_ids = [
                -1 if term is None or word == FIELD_BREAK else vocab.setdefault(term, len(vocab))
                for word, term in zip(new, terms_of(new), strict=True)
            ]
            self._word_term.extend(term_ids)
            self._word_mask.extend([tag_mask(_word_tags(w)) if w in TAG_WORDS else 0 for w in new])
        return np.fromiter(map(ids.__getitem__, tokens), np.int64, len(tokens))

    def add_many(self, lessons: list[Lesson]) -> None:
        """Index lessons in new slots, in order (vectorised; see the module docstring)."""
        if lessons:
            first = len(self.slots)
            self._add_columns(lessons)
            self._add_text(lessons, first)

    def _add_columns(self, lessons: list[Lesson]) -> None:
        """Slots and the per-lesson columns that do not depend on the text."""
        first, n = len(self.slots), len(lessons)
        for i, lesson in enumerate(lessons):
            if lesson.id in self.by_id:
                self.remove(lesson.id)
            self.by_id[lesson.id] = first + i
        self.slots.extend(lessons)
        self.alive.extend(np.ones(n, bool))
        self.n_alive += n
        tags = [tuple(x.tags) for x in lessons]
        self._indexed_tags.extend(tags)
        self.ts.extend(np.fromiter((x.ts for x in lessons), np.float64, n))
        self.last.extend(
            np.fromiter(
                (x.ts if x.last_used_ts is None else x.last_used_ts for x in lessons), np.float64, n
            )
        )
        self.confidence.extend(np.fromiter((x.confidence for x in lessons), np.float64, n))
        self.used.extend(np.fromiter((x.used for x in lessons), np.float64, n))
        tag_masks = [self._tag_masks_of(key) for key in tags]
        self.has_tags.extend([bool(key) for key in tags])
        self.tags_mask.extend(np.fromiter((m[0] for m in tag_masks), np.uint64, n))
        self.tags_closure.extend(np.fromiter((m[1] for m in tag_masks), np.uint64, n))
        self.has_src.extend(np.fromiter((bool(x.source_task) for x in lessons), bool, n))

    def builds(self) -> np.ndarray:
        """Per slot, the build its lesson was learned in (see the module docstring).

        Worked out on first use and then for new slots only, in one pass with the
        garbage collector paused, so that the first recall after a cold start over
        100,000 lessons pays about a tenth of a second for it, not seconds.
        """
        done = self._build.n
        if done < len(self.slots):
            with paused_gc():  # one key tuple per lesson: see memory/gcpause.py
                self._build.extend(self._builds_of(done))
        return self._build.values

    def stacks(self) -> np.ndarray:
        """Per slot, the mask of the stacks its lesson is about (see the module docstring);
        worked out on first use and then for new slots only."""
        done = self._stacks.n
        if done < len(self.slots):
            tags = self.tags_closure.values[done:] & STACK_MASK
            text = self.content_mask.values[done:] & STACK_MASK
            pairs, where = np.unique(np.stack([tags, text], axis=1), axis=0, return_inverse=True)
            masks = np.fromiter(
                (self._stack_mask(int(a), int(b)) for a, b in pairs), np.uint64, len(pairs)
            )
            self._stacks.extend(masks[where.reshape(-1)])
        return self._stacks.values

    def _stack_mask(self, tags: int, text: int) -> int:
        key = (tags, text)
        mask = self._stacks_of.get(key)
        if mask is None:
            names = (_BIT_TAGS[b] for b in range(64) if tags >> b & 1)
            said = frozenset(_BIT_TAGS[b] for b in range(64) if text >> b & 1)
            mask = self._stacks_of[key] = tag_mask(lesson_stacks(frozenset(names), said))
        return mask

    def _builds_of(self, first: int) -> list[int]:
        """The builds of the slots from ``first`` on: each joins the open build of its
        key when within :data:`BUILD_WINDOW` of that build's first lesson, else opens one.
        The key is the source task, else the sorted tags; the two never meet."""
        by_source, by_tags = self._open_builds
        sorted_tags: dict[tuple, tuple] = {}
        out: list[int] = []
        n_builds = self.n_builds
        slots = self.slots[first:]
        stamps = self.ts.values[first:].tolist()
        for lesson, tags, ts in zip(slots, self._indexed_tags[first:], stamps, strict=True):
            if lesson is None:  # forgotten before its build was asked for
                out.append(n_builds)
                n_builds += 1
                continue
            if lesson.source_task:
                key, table = lesson.source_task, by_source
            elif tags:
                key = sorted_tags.get(tags) or sorted_tags.setdefault(tags, tuple(sorted(tags)))
                table = by_tags
            else:
                out.append(n_builds)
                n_builds += 1
                continue
            found = table.get(key)
            if found is not None and abs(ts - found[1]) <= BUILD_WINDOW:
                out.append(found[0])
                continue
            out.append(n_builds)
            table[key] = (n_builds, ts)
            n_builds += 1
        self.n_builds = n_builds
        return out

    def _add_text(self, lessons: list[Lesson], first: int) -> None:
        """Postings, lengths and inferred tags: everything read from the lessons' text."""
        n = len(lessons)
        # One pass over every trigger, fix and tag list: word ids, and for each
        # word its slot and field (0 trigger, 1 fix, 2 tags).
        fields: list[str] = []
        for lesson in lessons:
            fields += (lesson.trigger, lesson.fix, " ".join(lesson.tags))
        word_ids = self._word_ids_of(words_of_fields(fields))
        breaks = word_ids == self._word_ids[FIELD_BREAK]
        field_no = np.cumsum(breaks) - breaks
        word_ids, field_no = word_ids[~breaks], field_no[~breaks]
        rel_slot, field = np.divmod(field_no, 3)
        token_slot = rel_slot + first

        # content tags: OR of the text words' masks, then phrases and file extensions
        masks = np.where(field < 2, self._word_mask.values[word_ids], np.uint64(0))
        counts = np.bincount(rel_slot, minlength=n)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        content = np.zeros(n, np.uint64)
        if len(masks):
            nonempty = counts > 0
            content[nonempty] = np.bitwise_or.reduceat(masks, starts[nonempty])
        positions, found, text_starts = special_hits([x.text.lower() for x in lessons])
        if positions:
            tag_bits = {tag: tag_mask(implied_by(tag)) for tag in set(found)}
            docs = np.searchsorted(np.asarray(text_starts), np.asarray(positions), "right") - 1
            bits = np.fromiter(map(tag_bits.__getitem__, found), np.uint64, len(found))
            np.bitwise_or.at(content, docs, bits)
        self.content_mask.extend(content)
        self.src_mask.extend(np.fromiter(map(self._src_mask, lessons), np.uint64, n))

        term_ids = self._word_term.values[word_ids]
        real = term_ids >= 0
        n_terms = len(self.vocab)
        t_terms, t_slots, t_tf = triples(term_ids[real], token_slot[real], first + n)
        self._postings.add(t_terms, t_slots, t_tf, n_terms)
        lengths = np.bincount(rel_slot[real], minlength=n).astype(np.float64)
        self.doc_len.extend(lengths)
        self.total_len += float(lengths.sum())
        self.n_distinct.extend(np.bincount(t_slots - first, minlength=n).astype(np.float64))
        trig = real & (field == 0)
        g_terms, g_slots, g_tf = triples(term_ids[trig], token_slot[trig], first + n)
        self._trigger_postings.add(g_terms, g_slots, g_tf, n_terms)

    # ---------------------------------------------------------------- snapshots
    def text_state(self) -> dict[str, np.ndarray] | None:
        """The text-derived arrays, for :mod:`memory.snapshot`; None unless compact."""
        if self.n_alive != len(self.slots) or not (
            self._postings.compact and self._trigger_postings.compact
        ):
            return None
        words = list(self._word_ids)
        return {
            "words": np.frombuffer(b" ".join(words), np.uint8),
            "word_term": self._word_term.values,
            "word_mask": self._word_mask.values,
            "vocab": np.frombuffer("\n".join(self.vocab).encode(), np.uint8),
            "doc_len": self.doc_len.values,
            "n_distinct": self.n_distinct.values,
            "content_mask": self.content_mask.values,
            "src_mask": self.src_mask.values,
            **self._postings.state("terms"),
            **self._trigger_postings.state("trigger"),
        }

    @classmethod
    def from_text_state(cls, state, lessons: list[Lesson]) -> LessonIndex:
        """An index of ``lessons`` whose text-derived arrays come from ``text_state``."""
        index = cls()
        index._add_columns(lessons)
        words = state["words"].tobytes().split(b" ") if len(state["words"]) else []
        index._word_ids = {w: i for i, w in enumerate(words)}
        index._word_term.extend(state["word_term"])
        index._word_mask.extend(state["word_mask"])
        vocab = state["vocab"].tobytes().decode().split("\n") if len(state["vocab"]) else []
        index.vocab = {term: i for i, term in enumerate(vocab)}
        for name in ("doc_len", "n_distinct", "content_mask", "src_mask"):
            getattr(index, name).extend(state[name])
        index.total_len = float(index.doc_len.values.sum())
        index._postings = Postings.from_state(state, "terms")
        index._trigger_postings = Postings.from_state(state, "trigger")
        return index

    def _tag_masks_of(self, key: tuple[str, ...]) -> tuple[int, int]:
        masks = self._tag_masks.get(key)
        if masks is None:
            own = set(key)
            masks = self._tag_masks[key] = (tag_mask(own), tag_mask(own | stack_tags(own)))
        return masks

    def _src_mask(self, lesson: Lesson) -> int:
        src = lesson.source_task
        mask = self._src_masks.get(src)
        if mask is None:
            mask = self._src_masks[src] = tag_mask(infer_tags_from_text(src))
        return mask

    def remove(self, lesson_id: str) -> None:
        """Mark a lesson's slot dead and take its terms out of the document frequencies."""
        slot = self.by_id.pop(lesson_id)
        lesson = self.slots[slot]
        assert lesson is not None
        for postings, text in (
            (self._postings, f"{lesson.text} {' '.join(self._indexed_tags[slot])}"),
            (self._trigger_postings, lesson.trigger),
        ):
            for term in term_set(text):
                postings.df.values[self.vocab[term]] -= 1
        self.slots[slot] = None
        self.alive[slot] = False
        self.total_len -= self.doc_len.values[slot]
        self.n_alive -= 1

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
        key = tuple(lesson.tags)
        self.has_tags[slot] = bool(key)
        self.tags_mask[slot], self.tags_closure[slot] = self._tag_masks_of(key)
        if slot < self._stacks.n:
            self._stacks[slot] = self._stack_mask(
                int(self.tags_closure.values[slot] & STACK_MASK),
                int(self.content_mask.values[slot] & STACK_MASK),
            )

    # ---------------------------------------------------------------- queries
    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(slots, term frequencies) of a search term; dead slots included."""
        tid = self.vocab.get(term)
        return None if tid is None else self._postings.get(tid)

    def document_frequency(self, term: str) -> int:
        """How many live lessons contain ``term``."""
        tid = self.vocab.get(term)
        return (
            0 if tid is None or tid >= self._postings.df.n else int(self._postings.df.values[tid])
        )

    def trigger_slots(self, term: str) -> np.ndarray:
        """Slots of the lessons whose trigger has ``term``; dead slots included."""
        tid = self.vocab.get(term)
        return np.empty(0, np.int64) if tid is None else self._trigger_postings.get(tid)[0]

    def trigger_frequency(self, term: str) -> int:
        tid = self.vocab.get(term)
        df = self._trigger_postings.df
        return 0 if tid is None or tid >= df.n else int(df.values[tid])

    def doc_terms(self, slot: int) -> Counter[str]:
        """A slot's search terms with their counts: trigger, fix and tags as indexed."""
        lesson = self.slots[slot]
        assert lesson is not None
        return Counter(terms(f"{lesson.text} {' '.join(self._indexed_tags[slot])}"))

    def source_terms(self, slots) -> list[frozenset[str]]:
        """The search terms of each slot's source task (empty without one), cached per text."""
        cache, out = self._src_terms, []
        for i in slots:
            lesson = self.slots[i]
            src = lesson.source_task if lesson is not None else ""
            found = cache.get(src)
            if found is None:
                found = cache[src] = frozenset(term_set(src))
            out.append(found)
        return out

    def lessons(self) -> list[Lesson]:
        return [lesson for lesson in self.slots if lesson is not None]
