"""Recall: rank the lessons of an index for a task. Three scorers, one set of layers.

Both scorers use the same *effective confidence*: a lesson's stored confidence,
decayed linearly once it has gone 90 days without use (age counted from
``last_used_ts``, else ``ts``). The factor is ``1`` up to 90 days, falls by
``1/180`` per day after that (``0.5`` at 180 days) and stops at ``0`` (at 270
days). The decay is applied while scoring; the file is never rewritten for it.

``seed`` — the earlier system's formula, kept for comparison::

    score = 2 * overlap + recency + confidence + 0.1 * used

* relevance (``overlap``): distinct task terms found among the lesson's terms,
  divided by the lesson's distinct terms (:mod:`memory.tokens`), in [0, 1];
* recency: ``1 / (1 + age_days)`` with age from ``ts``;
* the layers run on the strict task tags (:func:`infer_task_tags`, phase tags
  included) exactly as the seed writes them. Every lesson gets a score, so a
  heavily used lesson outranks relevant ones: that is the flaw it documents.

``default`` — relevance leads::

    score = relevance * (1 + 0.15 * confidence + 0.05 * recency
                           + 0.05 * usage + 0.5 * stack_agreement)

* relevance: Okapi BM25 (k1 = 1.2, b = 0.75) of the task's distinct terms over
  the lesson's trigger, fix and tags, with one round of pseudo-relevance
  feedback: the 10 terms that weigh most (tf x idf) in the 5 best lessons of a
  first pass join the query at weight 0.2, which finds lessons that say the
  same thing in other words. Normalised by the best lesson's BM25 for this task,
  in [0, 1]. Only lessons with some relevance are returned;
* recency: ``1 / (1 + age_days / 30)`` with age from ``last_used_ts`` (else ``ts``);
* usage: ``log(1 + used) / log(101)``, capped at 1, so use counts saturate;
* stack agreement: the share of the lesson's stack tags that the task's stack
  tags cover (a Flask lesson on a Flask task: 1; a lesson tagged with five
  stacks of a mixed project of which the task has one: 0.2; untagged: 0.5;
  0 when the task names no stack);
* the adjustments together scale a score by at most 1.75: they order relevant
  lessons and never lift an irrelevant one (relevance 0 stays 0);
* the layers run on *stack* tags (languages and frameworks, with the language
  each framework implies: ``flask`` means python), so that "build" in a task
  does not let a TypeScript lesson through a Flask task, and a Python lesson
  is not penalised on a Flask task.

``build`` — the default with build-mates (:data:`BUILD_SCORER`, a variant measured
beside it; pass the object as ``scorer``)::

    relevance = (text + build) / 2

where ``text`` is the default's relevance (with feedback from the 3 best lessons)
and ``build`` the best text relevance among the lessons learned in the same build
(:data:`memory.index.BUILD_WINDOW`: same source task, or same tags, within an hour),
the lesson itself included: a build that hit the task's problems brings its other
lessons along, below the matching one. It gains on the generously graded tuning
set (nDCG@10 0.523 -> 0.593) and loses on the strictly graded held-out set
(0.516 -> 0.491), so it is not the default. A hybrid with a static embedding model
(wordllama, 256 dimensions) was measured too and not kept: it added less than 0.01
on the tuning set, well inside the noise, for a model to load on every cold start.

``learned`` — the default's best 150 lessons re-ranked by a linear model over
generic features (:mod:`memory.rank`, :data:`LEARNED_SCORER`, opt-in: pass the
object). Out of fold (benchmarks/fit_ranker.py) it adds +0.031 / +0.017 nDCG@10
(tuning / held-out, leave-one-set-out) and +0.029 / +0.017 (5-fold), short of the
+0.02 on both sets a new default needs, at about twice the default's recall time.
The layers apply unchanged: its score is ``exp(w . z) / penalty``.

The layers, in both: (1) a hard filter drops a lesson with tags that share
none with the task's tags (untagged lessons survive); (2) a lesson whose
source task's inferred tags share none with the task's is divided by 5;
(3) an untagged lesson without a source task whose text implies another stack
is divided by 2. All layers are off when the task has no tags.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from pydantic import BaseModel, Field

from memory import rank
from memory.index import STACK_MASK, LessonIndex, tag_mask
from memory.lesson import Lesson
from memory.tags import infer_task_tags, stack_tags
from memory.tokens import term_set

DAY = 86400.0
DECAY_AFTER_DAYS = 90.0
DECAY_TO_ZERO_DAYS = 180.0  # after the first 90
SOURCE_PENALTY = 5.0
CONTENT_PENALTY = 2.0


class ScoreParts(BaseModel):
    """How a recalled lesson's score was made."""

    relevance: float
    recency: float
    confidence: float
    """Effective (decayed) confidence."""
    usage: float
    stack: float = 0.0
    """Share of the lesson's stack tags the task shares (default scorer only)."""
    build: float = 0.0
    """Best text relevance among the lessons of the lesson's build (``build`` scorer only)."""
    penalty: float = 1.0
    """What the score was divided by."""
    penalties: list[str] = Field(default_factory=list)
    """Which layers penalised it."""


class Recalled(BaseModel):
    """A lesson recall chose, with its score and the score's parts."""

    lesson: Lesson
    score: float
    scorer: str
    parts: ScoreParts


def decay_factor(age_days: np.ndarray | float) -> np.ndarray | float:
    """1 up to 90 days, then linearly down to 0 at 270 days."""
    return np.clip(1.0 - (np.asarray(age_days) - DECAY_AFTER_DAYS) / DECAY_TO_ZERO_DAYS, 0.0, 1.0)


@dataclass
class Scored:
    """Per-slot arrays from a scorer; ``keep`` marks the candidates."""

    score: np.ndarray
    keep: np.ndarray
    relevance: np.ndarray
    recency: np.ndarray
    confidence: np.ndarray
    usage: np.ndarray
    stack: np.ndarray
    penalty: np.ndarray
    source_hit: np.ndarray
    content_hit: np.ndarray
    build: np.ndarray | None = None
    first: np.ndarray | None = None
    """First-pass BM25 of the task alone, before feedback (default scorer only)."""


class Scorer(Protocol):
    name: str

    def score(self, index: LessonIndex, task: str, now: float) -> Scored: ...


def _layers(index: LessonIndex, task_mask: int, stack_only: bool):
    """Filter and penalty arrays for a task's tag mask (see the module docstring)."""
    n = index.alive.n
    keep = index.alive.values.copy()
    penalty = np.ones(n)
    no = np.zeros(n, dtype=bool)
    if not task_mask:
        return keep, penalty, no, no
    tmask = np.uint64(task_mask)
    if stack_only:
        tags = index.tags_closure.values & STACK_MASK
        src = index.src_mask.values & STACK_MASK
        content = index.content_mask.values & STACK_MASK
        has_tags = tags != 0
    else:
        tags, src = index.tags_mask.values, index.src_mask.values
        content, has_tags = index.content_mask.values, index.has_tags.values
    keep &= ~has_tags | ((tags & tmask) != 0)
    has_src = index.has_src.values
    source_hit = has_src & (src != 0) & ((src & tmask) == 0)
    content_hit = ~has_tags & ~has_src & (content != 0) & ((content & tmask) == 0)
    penalty[source_hit] *= SOURCE_PENALTY
    penalty[content_hit] *= CONTENT_PENALTY
    return keep, penalty, source_hit, content_hit


class SeedScorer:
    """The seed's formula; see the module docstring."""

    name = "seed"

    def score(self, index: LessonIndex, task: str, now: float) -> Scored:
        n = index.alive.n
        overlap = np.zeros(n)
        for term in term_set(task):
            found = index.postings(term)
            if found is not None:
                overlap[found[0]] += 1.0
        relevance = 2.0 * overlap / np.maximum(index.n_distinct.values, 1.0)
        recency = 1.0 / (1.0 + np.maximum(now - index.ts.values, 0.0) / DAY)
        confidence = index.confidence.values * decay_factor((now - index.last.values) / DAY)
        usage = 0.1 * index.used.values
        keep, penalty, source_hit, content_hit = _layers(
            index, tag_mask(infer_task_tags(task)), stack_only=False
        )
        score = (relevance + recency + confidence + usage) / penalty
        stack = np.zeros(len(score))
        return Scored(
            score,
            keep,
            relevance,
            recency,
            confidence,
            usage,
            stack,
            penalty,
            source_hit,
            content_hit,
        )


class RelevanceScorer:
    """BM25 relevance (with one feedback pass) and bounded adjustments; see the module docstring."""

    name = "default"

    def __init__(
        self,
        k1: float = 1.2,
        b: float = 0.75,
        weights: tuple[float, float, float, float] = (0.15, 0.05, 0.05, 0.5),
        feedback: tuple[int, int, float] = (5, 10, 0.2),
        build_weight: float = 0.0,
        name: str = "default",
    ):
        self.name = name
        self.k1, self.b = k1, b
        self.w_conf, self.w_recency, self.w_usage, self.w_stack = weights
        self.fb_docs, self.fb_terms, self.fb_weight = feedback
        self.w_build = build_weight

    def bm25(self, index: LessonIndex, task: str | dict[str, float]) -> np.ndarray:
        """Okapi BM25 of the task's distinct terms (or weighted terms) over every slot."""
        query = {term: 1.0 for term in term_set(task)} if isinstance(task, str) else task
        rel = np.zeros(index.alive.n)
        n_docs = max(index.n_alive, 1)
        avgdl = max(index.total_len / n_docs, 1e-9)
        for term, weight in query.items():
            df = index.document_frequency(term)
            if df == 0:
                continue
            docs, tf = index.postings(term)  # type: ignore[misc]
            idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            norm = self.k1 * (1.0 - self.b + self.b * index.doc_len.values[docs] / avgdl)
            rel[docs] += weight * idf * tf * (self.k1 + 1.0) / (tf + norm)
        return rel

    def expand(self, index: LessonIndex, task: str, first: np.ndarray) -> dict[str, float]:
        """The task's terms plus the strongest terms of the best first-pass lessons."""
        query = {term: 1.0 for term in term_set(task)}
        top = [i for i in np.argsort(-first, kind="stable")[: self.fb_docs] if first[i] > 0]
        n_docs = max(index.n_alive, 1)
        weight: Counter[str] = Counter()
        for i in top:
            for term, tf in index.doc_terms(i).items():
                if term not in query:
                    weight[term] += tf * math.log(n_docs / max(index.document_frequency(term), 1))
        for term, _ in weight.most_common(self.fb_terms):
            query[term] = self.fb_weight
        return query

    def score(self, index: LessonIndex, task: str, now: float) -> Scored:
        task_mask = tag_mask(stack_tags(infer_task_tags(task)))
        keep, penalty, source_hit, content_hit = _layers(index, task_mask, stack_only=True)
        age = np.maximum(now - index.last.values, 0.0) / DAY
        recency = 1.0 / (1.0 + age / 30.0)
        confidence = index.confidence.values * decay_factor(age)
        usage = np.minimum(np.log1p(index.used.values) / math.log(101.0), 1.0)
        agreement = np.zeros(index.alive.n)
        if task_mask:
            stacks = index.tags_closure.values & STACK_MASK
            n_stacks = np.bitwise_count(stacks).astype(np.float64)
            shared = np.bitwise_count(stacks & np.uint64(task_mask)).astype(np.float64)
            agreement = np.where(n_stacks > 0, shared / np.maximum(n_stacks, 1.0), 0.5)
        adjust = (
            self.w_conf * confidence
            + self.w_recency * recency
            + self.w_usage * usage
            + self.w_stack * agreement
        )
        factor = (1.0 + adjust) / penalty
        raw = first_pass = self.bm25(index, task)
        if self.fb_docs:
            first = np.where(keep & (raw > 0), raw * factor, 0.0)
            raw = self.bm25(index, self.expand(index, task, first))
        text = raw / (raw[keep & (raw > 0)].max() if (keep & (raw > 0)).any() else 1.0)
        build = self.build_relevance(index, np.where(keep, text, 0.0))
        relevance = (text + self.w_build * build) / (1.0 + self.w_build)
        keep &= relevance > 0
        return Scored(
            relevance * factor,
            keep,
            relevance,
            recency,
            confidence,
            usage,
            agreement,
            penalty,
            source_hit,
            content_hit,
            build,
            first_pass,
        )

    def build_relevance(self, index: LessonIndex, text: np.ndarray) -> np.ndarray:
        """Per slot: the best ``text`` relevance among the slots of its build."""
        if not self.w_build:
            return np.zeros(len(text))
        return build_best(index, text)


def build_best(index: LessonIndex, text: np.ndarray) -> np.ndarray:
    """Per slot: the best ``text`` value among the slots of its build (itself included)."""
    builds = index.builds()
    hit = np.flatnonzero(text > 0)
    best = np.zeros(index.n_builds)
    np.maximum.at(best, builds[hit], text[hit])
    return best[builds]


class LearnedScorer:
    """The default's best :data:`memory.rank.POOL` lessons, re-ranked by a fitted linear
    model over generic features (:mod:`memory.rank`); the layers as in the default."""

    def __init__(self, pool: int = rank.POOL, weights=None, name: str = "learned"):
        self.name = name
        self.pool = pool
        self.weights = weights  # (mean, scale, weights); None: memory.rank's constants
        self.base = RelevanceScorer()

    def pool_features(self, index: LessonIndex, task: str, now: float):
        """(the default's Scored, the pooled slots best first, their feature matrix)."""
        s = self.base.score(index, task, now)
        cand = np.flatnonzero(s.keep)
        cand = cand[np.lexsort((cand, -s.score[cand]))][: self.pool]
        parts = {
            "base": s.score * s.penalty,
            "relevance": s.relevance,
            "first": s.first,
            "stack": s.stack,
            "confidence": s.confidence,
            "usage": s.usage,
            "recency": s.recency,
            "build": build_best(index, np.where(s.keep, s.relevance, 0.0)),
        }
        task_mask = tag_mask(stack_tags(infer_task_tags(task)))
        s.build = parts["build"]
        return s, cand, rank.features(index, task, task_mask, cand, parts)

    def score(self, index: LessonIndex, task: str, now: float) -> Scored:
        s, pool, x = self.pool_features(index, task, now)
        if self.weights is None:
            z = rank.learned_scores(x)
        else:
            mean, scale, w = self.weights
            z = ((x - mean) / scale) @ w
        score = np.zeros(len(s.score))
        if len(pool):
            learned = np.exp(z - z.max()) / s.penalty[pool]
            score[pool] = learned
            rest = s.keep.copy()
            rest[pool] = False
            if rest.any():  # below the pool, in the default's order
                score[rest] = s.score[rest] * (0.5 * learned.min() / s.score[rest].max())
        s.score = score
        return s


BUILD_SCORER = RelevanceScorer(feedback=(3, 10, 0.2), build_weight=1.0, name="build")
"""The ``build`` variant: a lesson also gets the relevance of its build-mates."""
LEARNED_SCORER = LearnedScorer()
"""The ``learned`` re-ranker (:mod:`memory.rank`)."""
SCORERS: dict[str, Scorer] = {
    "default": RelevanceScorer(),
    "seed": SeedScorer(),
    "build": BUILD_SCORER,
    "learned": LEARNED_SCORER,
}
"""The scorers by name; builds use ``default``, the others are there to compare."""


def recall(
    index: LessonIndex,
    task: str,
    limit: int = 10,
    scorer: str | Scorer = "default",
    now: float | None = None,
    exclude_tags: Collection[str] = (),
) -> list[Recalled]:
    """The ``limit`` best lessons for ``task`` under the named scorer (or a scorer object),
    best first; never a lesson carrying one of ``exclude_tags``."""
    if isinstance(scorer, str):
        if scorer not in SCORERS:
            raise ValueError(f"unknown scorer {scorer!r}; choose one of {', '.join(SCORERS)}")
        scorer = SCORERS[scorer]
    if limit <= 0 or index.n_alive == 0:
        return []
    now = time.time() if now is None else now
    s = scorer.score(index, task, now)
    candidates = np.flatnonzero(s.keep)
    if exclude_tags:
        excluded = set(exclude_tags)
        candidates = np.array(
            [i for i in candidates if excluded.isdisjoint(index.slots[i].tags)], dtype=int
        )
    if len(candidates) > limit:
        part = np.argpartition(-s.score[candidates], limit - 1)[:limit]
        kth = s.score[candidates[part]].min()  # keep ties at the cut, then order by slot
        candidates = candidates[s.score[candidates] >= kth]
    order = sorted(candidates.tolist(), key=lambda i: (-s.score[i], i))[:limit]
    out = []
    for i in order:
        penalties = []
        if s.source_hit[i]:
            penalties.append(f"source task is another stack (/{SOURCE_PENALTY:g})")
        if s.content_hit[i]:
            penalties.append(f"untagged text implies another stack (/{CONTENT_PENALTY:g})")
        lesson = index.slots[i]
        assert lesson is not None
        parts = ScoreParts(
            relevance=float(s.relevance[i]),
            recency=float(s.recency[i]),
            confidence=float(s.confidence[i]),
            usage=float(s.usage[i]),
            stack=float(s.stack[i]),
            build=0.0 if s.build is None else float(s.build[i]),
            penalty=float(s.penalty[i]),
            penalties=penalties,
        )
        out.append(
            Recalled(lesson=lesson, score=float(s.score[i]), scorer=scorer.name, parts=parts)
        )
    return out
