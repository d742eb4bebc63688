"""Recall: rank the lessons of an index for a task. Three scorers, one set of layers.

All scorers use the same *effective confidence*: a lesson's stored confidence,
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

``default`` — text relevance leads, a stack prior follows::

    score = relevance * (1 + 0.15 * confidence + 0.05 * recency
                           + 0.05 * usage + 0.5 * stack_agreement) / penalty
            + 0.5 * stack_prior / penalty
    relevance = (text + 0.5 * build) / 1.5

* text: Okapi BM25 (:mod:`memory.bm25`: k1 = 1.2, b = 0.75) of the task's distinct terms over the
  lesson's trigger, fix and tags, with one round of pseudo-relevance feedback:
  the 10 terms that weigh most (tf x idf) in the 5 best lessons of a first pass
  join the query at weight 0.2, which finds lessons that say the same thing in
  other words. Normalised by the best lesson's BM25 for this task, in [0, 1];
* build (build-mates): the best text relevance among the lessons learned in the
  same build (:data:`memory.index.BUILD_WINDOW`: same source task, or same tags,
  within an hour), the lesson itself included: a build that hit the task's
  problems brings its other lessons along, below the matching one;
* stack prior: the share of the task's stack tags that the lesson is about (a
  Flask + SQLite lesson on a Flask + SQLite task: 1; a Python-only lesson on it:
  1/3, since flask implies python; untagged: 0). What a lesson is about is its
  stack tags less those its own text rules out (:func:`memory.tags.lesson_stacks`):
  a project's tags land on all of its lessons, so the lesson about ``main.tsx`` in
  a Flask + React build is tagged flask and pytest too; its text, written about a
  TypeScript file, says it is not about them. Both graders of the label sets
  count a lesson about the task's own stack as useful even when it shares no
  word with the task ("same stack, general advice that applies"), and text
  relevance alone cannot find those: the prior does, below a lesson that also
  matches the text. Lessons returned are those with some text relevance, a
  stack in common or a matching build-mate. The prior is scaled by
  ``min(1, 3 * stack_agreement)``, so that a lesson tagged with many stacks
  (a model that tags a lesson with every stack to be shown on every task) gets
  little of it: two of the task's stacks among 34 tags give 0.18, not 1;
* recency: ``1 / (1 + age_days / 30)`` with age from ``last_used_ts`` (else ``ts``);
* usage: ``log(1 + used) / log(101)``, capped at 1, so use counts saturate;
* stack agreement: the share of the lesson's stacks (as for the prior) that the
  task's stack tags cover (a Flask lesson on a Flask task: 1; a lesson tagged with five
  stacks of a mixed project of which the task has one: 0.2; untagged: 0.5;
  0 when the task names no stack);
* the adjustments together scale the relevance part by at most 1.75: they order
  relevant lessons and never lift an irrelevant one;
* trust: the whole score is multiplied by ``0.25 + 0.75 * min(1, confidence / 0.3)``
  (:data:`TRUST_FLOOR`, :data:`TRUST_FULL`), with the *stored* confidence, before
  decay: what penalties made of the lesson, not its age (age already acts through
  the effective confidence and recency, and a whole memory ages together). A lesson at
  or above a fresh lesson's confidence (0.3) is not touched; one whose penalties took it
  below is scaled down, to a quarter at 0. The 0.15 weight of confidence among the
  adjustments alone moves a score by less than a tenth, so a lesson at 0.0 that
  matches the task best used to be recalled first, above the lessons that did not
  backfire;
* the layers run on *stack* tags (languages and frameworks, with the language
  each framework implies: ``flask`` means python), so that "build" in a task
  does not let a TypeScript lesson through a Flask task, and a Python lesson
  is not penalised on a Flask task.

The prior's and the build-mates' weights (0.5 each) were chosen on the two label
sets of ``benchmarks/recall_quality.py``, from a plateau: every pair of weights in
[0.3, 0.7] scores within 0.02 of it on both sets. Reading a lesson's stacks from
its text as well as its tags (rather than its tags alone) gains +0.015
[+0.003, +0.032] nDCG@10 over all 74 tasks of the three sets, and on each set
(+0.017, +0.014, +0.013): most on front-end tasks, where lessons of mixed
Flask + React builds no longer crowd out the front-end ones
(``own_stacks=False`` gives the scorer on raw tags, to compare). Against the previous default
(text relevance alone) it gains +0.039 [+0.009, +0.072] nDCG@10 on the tuning set
and +0.040 [+0.006, +0.073] on the held-out set (paired, 95% over tasks), and
+0.047 [+0.009, +0.088] on the blind set, graded after the weights were fixed
(+0.032 before the prior's bound was added; the bound costs nothing on the others).

``build`` — build-mates at full weight, no prior (:data:`BUILD_SCORER`, a variant
measured beside it; pass the object as ``scorer``): ``relevance = (text + build) /
2`` with feedback from the 3 best lessons. It does best on the generously graded
tuning set and worst on the strictly graded held-out set, so it is not the
default. Other ideas were measured and not kept: hybrids with a static embedding
model (wordllama, 256 dimensions) or a sentence encoder (all-MiniLM-L6-v2) added
less than 0.01, well inside the noise, for a model to load on every cold start; a
linear re-ranker fitted over 25 generic features (RankNet loss, L2 chosen by nested
cross-validation) gained +0.025 over the previous default out of fold but lost
0.011 against the default with the prior, at twice the recall time; boosted trees
trained on two label sets and scored on the third were unstable between sets.

The layers, in all three: (1) a hard filter drops a lesson with tags that share
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

from memory.bm25 import as_query, term_scores
from memory.index import STACK_MASK, LessonIndex, tag_mask
from memory.lesson import Lesson
from memory.tags import infer_task_tags, normalize_tags, stack_tags
from memory.tokens import term_set

DAY = 86400.0
DECAY_AFTER_DAYS = 90.0
DECAY_TO_ZERO_DAYS = 180.0  # after the first 90
SOURCE_PENALTY = 5.0
CONTENT_PENALTY = 2.0
PRIOR_BOUND = 3.0
"""The stack prior is scaled by ``min(1, PRIOR_BOUND * stack_agreement)``."""
TRUST_FULL = 0.3
"""A fresh lesson's confidence (:data:`memory.reflection.FRESH_CONFIDENCE`): at or above
it, confidence only orders relevant lessons; below it, the whole score shrinks."""
TRUST_FLOOR = 0.25
"""What the score of a lesson at confidence 0 is multiplied by (default scorer)."""


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
    """Best text relevance among the lessons of the lesson's build (default and ``build``)."""
    prior: float = 0.0
    """Share of the task's stack tags the lesson carries, bounded (default scorer only)."""
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
    """Arrays from a scorer, one value per slot, or per candidate when ``slots`` is set;
    ``keep`` marks the lessons recall may return."""

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
    prior: np.ndarray | None = None
    """Share of the task's stack tags the lesson carries, bounded (default scorer only)."""
    slots: np.ndarray | None = None
    """When set, the ascending slots every array above is aligned with (the default
    scorer leaves out the slots it could never return, and never pays for them)."""


class Scorer(Protocol):
    name: str

    def score(
        self, index: LessonIndex, task: str, now: float, excluded: np.ndarray | None = None
    ) -> Scored: ...


def _layers(
    index: LessonIndex, task_mask: int, stack_only: bool, excluded: np.ndarray | None = None
):
    """Filter and penalty arrays for a task's tag mask (see the module docstring);
    ``excluded`` marks slots recall may not return (``exclude_tags``)."""
    n = index.alive.n
    keep = index.alive.values.copy()
    if excluded is not None:
        keep &= ~excluded
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

    def score(
        self, index: LessonIndex, task: str, now: float, excluded: np.ndarray | None = None
    ) -> Scored:
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
            index, tag_mask(infer_task_tags(task)), stack_only=False, excluded=excluded
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
        build_weight: float = 0.5,
        prior: float = 0.5,
        name: str = "default",
        own_stacks: bool = True,
    ):
        self.name = name
        self.own_stacks = own_stacks
        self.k1, self.b = k1, b
        self.w_conf, self.w_recency, self.w_usage, self.w_stack = weights
        self.fb_docs, self.fb_terms, self.fb_weight = feedback
        self.w_build = build_weight
        self.w_prior = prior

    def bm25(self, index: LessonIndex, task: str | dict[str, float]) -> np.ndarray:
        """Okapi BM25 of the task's distinct terms (or weighted terms) over every slot."""
        query = as_query(term_set(task) if isinstance(task, str) else task)
        rel = np.zeros(index.alive.n)
        n_docs = max(index.n_alive, 1)
        avgdl = max(index.total_len / n_docs, 1e-9)
        for term, weight in query.items():
            df = index.document_frequency(term)
            if df == 0:
                continue
            docs, tf = index.postings(term)  # type: ignore[misc]
            lengths = index.doc_len.values[docs]
            rel[docs] += weight * term_scores(tf, lengths, avgdl, n_docs, df, self.k1, self.b)
        return rel

    def expand(self, index: LessonIndex, task: str, first: np.ndarray) -> dict[str, float]:
        """The task's terms plus the strongest terms of the best first-pass lessons."""
        query = {term: 1.0 for term in term_set(task)}
        top = [i for i in top_slots(first, self.fb_docs) if first[i] > 0]
        n_docs = max(index.n_alive, 1)
        weight: Counter[str] = Counter()
        for i in top:
            for term, tf in index.doc_terms(i).items():
                if term not in query:
                    weight[term] += tf * math.log(n_docs / max(index.document_frequency(term), 1))
        for term, _ in weight.most_common(self.fb_terms):
            query[term] = self.fb_weight
        return query

    def score(
        self, index: LessonIndex, task: str, now: float, excluded: np.ndarray | None = None
    ) -> Scored:
        """Every part is worked out for the candidates alone (kept slots with a text
        match, a stack in common or a matching build-mate) and returned per candidate:
        on a large memory most slots are none of these, and arithmetic over every slot
        would be most of the cost. ``excluded`` slots are never candidates: they take
        no part in the feedback, the normalisation or the build-mates."""
        n = index.alive.n
        task_mask = tag_mask(stack_tags(infer_task_tags(task)))
        keep, penalty, source_hit, content_hit = _layers(
            index, task_mask, stack_only=True, excluded=excluded
        )
        raw = first_pass = self.bm25(index, task)
        if task_mask:
            shares = (self.stacks(index) & np.uint64(task_mask)) != 0
            cand = np.flatnonzero(keep & ((raw > 0) | shares))
        else:
            cand = np.flatnonzero(keep & (raw > 0))
        parts = self.adjustments(index, cand, task_mask, now)

        def widen(more: np.ndarray) -> None:  # add slots (a mask) to the candidates
            nonlocal cand, parts
            more = more.copy()
            more[cand] = False
            extra = np.flatnonzero(more)
            if len(extra):
                added = self.adjustments(index, extra, task_mask, now)
                order = np.argsort(np.concatenate([cand, extra]), kind="stable")
                cand = np.concatenate([cand, extra])[order]
                parts = {k: np.concatenate([v, added[k]])[order] for k, v in parts.items()}

        if self.fb_docs:
            first = np.zeros(n)
            first[cand] = raw[cand] * (1.0 + parts["adjust"]) / penalty[cand]
            raw = self.bm25(index, self.expand(index, task, first))
            widen(keep & (raw > 0))  # slots reached by the feedback terms alone
        matched = keep & (raw > 0)
        text = np.where(matched, raw, 0.0) / (raw[matched].max() if matched.any() else 1.0)
        build = self.build_relevance(index, text)
        if self.w_build:
            widen(keep & (build > 0))  # build-mates of a match
        text_c = text[cand]
        relevance_c = (text_c + self.w_build * build[cand]) / (1.0 + self.w_build)
        pen_c = penalty[cand]
        score_c = (relevance_c * (1.0 + parts["adjust"]) + self.w_prior * parts["prior"]) / pen_c
        score_c = score_c * parts["trust"]
        return Scored(
            score_c,
            score_c > 0,
            relevance_c,
            parts["recency"],
            parts["confidence"],
            parts["usage"],
            parts["stack"],
            pen_c,
            source_hit[cand],
            content_hit[cand],
            build[cand],
            first_pass[cand],
            parts["prior"],
            cand,
        )

    def adjustments(self, index: LessonIndex, slots: np.ndarray, task_mask: int, now: float):
        """Per slot of ``slots``: recency, effective confidence, usage, stack agreement,
        the stack prior and their weighted sum ``adjust`` (see the module docstring)."""
        age = np.maximum(now - index.last.values[slots], 0.0) / DAY
        recency = 1.0 / (1.0 + age / 30.0)
        confidence = index.confidence.values[slots] * decay_factor(age)
        usage = np.minimum(np.log1p(index.used.values[slots]) / math.log(101.0), 1.0)
        agreement = np.zeros(len(slots))
        prior = np.zeros(len(slots))
        if task_mask:
            stacks = self.stacks(index)[slots]
            n_stacks = np.bitwise_count(stacks).astype(np.float64)
            shared = np.bitwise_count(stacks & np.uint64(task_mask)).astype(np.float64)
            agreement = np.where(n_stacks > 0, shared / np.maximum(n_stacks, 1.0), 0.5)
            n_task = max(int(np.bitwise_count(np.uint64(task_mask))), 1)
            prior = shared / n_task * np.minimum(1.0, PRIOR_BOUND * agreement)
        adjust = (
            self.w_conf * confidence
            + self.w_recency * recency
            + self.w_usage * usage
            + self.w_stack * agreement
        )
        return {
            "recency": recency,
            "confidence": confidence,
            "usage": usage,
            "stack": agreement,
            "prior": prior,
            "adjust": adjust,
            "trust": trust(index.confidence.values[slots]),
        }

    def stacks(self, index: LessonIndex) -> np.ndarray:
        """Per slot, the mask of the stacks a lesson is about: read from its tags and
        text (:meth:`LessonIndex.stacks`), or from its tags alone (``own_stacks=False``)."""
        return index.stacks() if self.own_stacks else index.tags_closure.values & STACK_MASK

    def build_relevance(self, index: LessonIndex, text: np.ndarray) -> np.ndarray:
        """Per slot: the best ``text`` relevance among the slots of its build."""
        if not self.w_build:
            return np.zeros(len(text))
        return build_best(index, text)


def trust(confidence: np.ndarray) -> np.ndarray:
    """The factor a lesson's score is multiplied by for its stored confidence."""
    return TRUST_FLOOR + (1.0 - TRUST_FLOOR) * np.minimum(1.0, confidence / TRUST_FULL)


def top_slots(values: np.ndarray, k: int) -> list[int]:
    """The ``k`` slots of highest value, best first, ties by slot: what a stable argsort
    of ``-values`` would give, without sorting every slot."""
    if k <= 0 or not len(values):
        return []
    if k < len(values):
        kth = values[np.argpartition(-values, k - 1)[k - 1]]
        cand = np.flatnonzero(values >= kth)
    else:
        cand = np.arange(len(values))
    return cand[np.lexsort((cand, -values[cand]))][:k].tolist()


def build_best(index: LessonIndex, text: np.ndarray) -> np.ndarray:
    """Per slot: the best ``text`` value among the slots of its build (itself included)."""
    builds = index.builds()
    hit = np.flatnonzero(text > 0)
    best = np.zeros(index.n_builds)
    np.maximum.at(best, builds[hit], text[hit])
    return best[builds]


BUILD_SCORER = RelevanceScorer(feedback=(3, 10, 0.2), build_weight=1.0, prior=0.0, name="build")
"""The ``build`` variant: build-mates at full weight, no stack prior."""
SCORERS: dict[str, Scorer] = {
    "default": RelevanceScorer(),
    "seed": SeedScorer(),
    "build": BUILD_SCORER,
}
"""The scorers by name; builds use ``default``, the others are there to compare."""


def excluded_slots(index: LessonIndex, exclude_tags: Collection[str]) -> np.ndarray | None:
    """Per slot, whether its lesson carries one of ``exclude_tags`` (None when none are
    given). The scorers drop these before scoring, so that a lesson recall may not
    return shapes nothing of the others' scores: not the best BM25 the text relevance
    is divided by, not the feedback terms, not a build-mate's relevance."""
    if not exclude_tags:
        return None
    wanted = set(normalize_tags(list(exclude_tags))) | set(exclude_tags)
    return np.fromiter(
        (x is not None and not wanted.isdisjoint(x.tags) for x in index.slots),
        dtype=bool,
        count=index.alive.n,
    )


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
    s = scorer.score(index, task, now, excluded_slots(index, exclude_tags))
    slots = np.arange(len(s.score)) if s.slots is None else s.slots
    candidates = np.flatnonzero(s.keep)  # positions in the arrays of s
    if len(candidates) > limit:
        part = np.argpartition(-s.score[candidates], limit - 1)[:limit]
        kth = s.score[candidates[part]].min()  # keep ties at the cut, then order by slot
        candidates = candidates[s.score[candidates] >= kth]
    order = sorted(candidates.tolist(), key=lambda j: (-s.score[j], slots[j]))[:limit]
    out = []
    for j in order:
        i = int(slots[j])
        penalties = []
        if s.source_hit[j]:
            penalties.append(f"source task is another stack (/{SOURCE_PENALTY:g})")
        if s.content_hit[j]:
            penalties.append(f"untagged text implies another stack (/{CONTENT_PENALTY:g})")
        lesson = index.slots[i]
        assert lesson is not None
        parts = ScoreParts(
            relevance=float(s.relevance[j]),
            recency=float(s.recency[j]),
            confidence=float(s.confidence[j]),
            usage=float(s.usage[j]),
            stack=float(s.stack[j]),
            build=0.0 if s.build is None else float(s.build[j]),
            prior=0.0 if s.prior is None else float(s.prior[j]),
            penalty=float(s.penalty[j]),
            penalties=penalties,
        )
        out.append(
            Recalled(lesson=lesson, score=float(s.score[j]), scorer=scorer.name, parts=parts)
        )
    return out
