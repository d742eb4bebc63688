"""A learned linear re-ranker over the default scorer's best candidates.

The ``learned`` scorer (:data:`memory.recall.LEARNED_SCORER`) takes the default
scorer's :data:`POOL` best lessons (after the layers' filter), describes each with
the generic :data:`FEATURES` below, and orders them by ``exp(w . z) / penalty``,
where ``z`` is the features standardised with :data:`MEAN` and :data:`SCALE` and
``penalty`` is the layers' 5x / 2x divisor, applied exactly as in the default.
No feature names a lesson or a word of the corpus: they are text matches (BM25,
idf-weighted coverage of the task's terms), stack-tag agreement, the lesson's
type, polarity, confidence, use, age and length, its source task's likeness to
the task, and its build-mates' relevance.

The weights were fitted by ``benchmarks/fit_ranker.py`` (numpy only,
deterministic): a pairwise logistic loss (RankNet) with an L2 penalty over the
pairs of differently graded candidates of each task, every task weighing the same,
on all 58 hand-graded tasks of ``benchmarks/recall_labels.json`` and
``benchmarks/recall_labels_heldout.json``. The script prints the cross-validated
figures (leave-one-set-out and 5-fold over tasks) and the constants to paste
here; rerun it after changing a feature.
"""

from __future__ import annotations

import math

import numpy as np

from memory.index import LessonIndex, tag_mask
from memory.lesson import LESSON_TYPES
from memory.tags import FRAMEWORK_TAGS, LANGUAGE_TAGS
from memory.tokens import term_set

POOL = 150
"""How many of the default scorer's best lessons are re-ranked."""

LANGUAGE_MASK = np.uint64(tag_mask(LANGUAGE_TAGS))
FRAMEWORK_MASK = np.uint64(tag_mask(FRAMEWORK_TAGS))

FEATURES: tuple[str, ...] = (
    "default_score",  # the default's score before the layers' penalty, / the pool's best
    "log_rank",  # log(1 + rank) under that score
    "relevance",  # the default's relevance: BM25 with feedback, / the best
    "first_pass",  # BM25 of the task alone (no feedback), / the pool's best
    "text_cover",  # idf-weighted share of the task's terms found in the lesson
    "trigger_cover",  # ... found in the trigger
    "stack_agreement",  # share of the lesson's stack tags the task has (0.5 untagged)
    "untagged",  # the lesson has no stack tag
    "framework_match",  # shares a framework tag with the task
    "language_only",  # shares a language but no framework, the task naming a framework
    "framework_conflict",  # has frameworks, the task has others and none of them
    "source_cover",  # idf-weighted share of the task's terms in the lesson's source task
    "source_stack",  # the source task's stack tags meet the task's
    "has_source",
    "build_mates",  # best relevance among the lessons of its build (itself included)
    "confidence",  # effective (decayed) confidence
    "usage",  # log(1 + used) / log(101), capped at 1
    "recency",  # 1 / (1 + age_days / 30)
    "log_length",  # log(1 + terms)
    "dont",  # polarity
    *(f"type_{t}" for t in LESSON_TYPES),
)

# Fitted by benchmarks/fit_ranker.py (lambda 10, uniform pair weights, all 58 tasks).
# The corpus has no source tasks, so the source_* features got no weight.
MEAN = np.array(
    [
        0.199451,  # default_score
        3.96543,  # log_rank
        0.20558,  # relevance
        0.22453,  # first_pass
        0.0992265,  # text_cover
        0.0305817,  # trigger_cover
        0.553019,  # stack_agreement
        0.0254579,  # untagged
        0.468243,  # framework_match
        0.257046,  # language_only
        0.206261,  # framework_conflict
        0,  # source_cover
        0,  # source_stack
        0,  # has_source
        0.349581,  # build_mates
        0.940005,  # confidence
        0.515712,  # usage
        0.495021,  # recency
        3.30983,  # log_length
        0.463047,  # dont
        0.650604,  # type_error_pattern
        0.11482,  # type_architecture
        0.106507,  # type_tool_pattern
        0.0872841,  # type_dependency
        0.0407845,  # type_performance
    ]
)
SCALE = np.array(
    [
        0.177178,  # default_score
        0.955805,  # log_rank
        0.177106,  # relevance
        0.201841,  # first_pass
        0.111597,  # text_cover
        0.0715279,  # trigger_cover
        0.314955,  # stack_agreement
        0.157511,  # untagged
        0.49899,  # framework_match
        0.437005,  # language_only
        0.40462,  # framework_conflict
        1,  # source_cover
        1,  # source_stack
        1,  # has_source
        0.263351,  # build_mates
        0.112418,  # confidence
        0.175244,  # usage
        0.131401,  # recency
        0.242903,  # log_length
        0.498633,  # dont
        0.476779,  # type_error_pattern
        0.318805,  # type_architecture
        0.308486,  # type_tool_pattern
        0.282251,  # type_dependency
        0.197791,  # type_performance
    ]
)
WEIGHTS = np.array(
    [
        0.160395,  # default_score
        -0.205871,  # log_rank
        0.137333,  # relevance
        0.0970205,  # first_pass
        -0.0294422,  # text_cover
        0.010963,  # trigger_cover
        0.219988,  # stack_agreement
        -0.0543743,  # untagged
        0.130754,  # framework_match
        -0.131786,  # language_only
        -0.131066,  # framework_conflict
        0,  # source_cover
        0,  # source_stack
        0,  # has_source
        0.39508,  # build_mates
        -0.0419817,  # confidence
        0.0441112,  # usage
        0.039862,  # recency
        -0.0540755,  # log_length
        0.0290148,  # dont
        -0.0161397,  # type_error_pattern
        -0.0645978,  # type_architecture
        0.0476317,  # type_tool_pattern
        0.0911881,  # type_dependency
        -0.0613905,  # type_performance
    ]
)


def _cover(index: LessonIndex, query: dict[str, float], slots: np.ndarray, trigger: bool):
    """Per slot in ``slots``: idf-weighted share of the query's terms that the lesson
    (or its trigger) contains."""
    found = np.zeros(len(slots))
    total = 0.0
    for term, idf in query.items():
        total += idf
        hit = index.trigger_slots(term) if trigger else (index.postings(term) or (None,))[0]
        if hit is not None and len(hit):
            found += idf * np.isin(slots, hit)
    return found / total if total else found


def task_idf(index: LessonIndex, task: str) -> dict[str, float]:
    """The task's distinct terms that some lesson has, with their BM25 idf."""
    n_docs = max(index.n_alive, 1)
    out = {}
    for term in sorted(term_set(task)):
        df = index.document_frequency(term)
        if df:
            out[term] = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    return out


def features(
    index: LessonIndex,
    task: str,
    task_mask: int,
    pool: np.ndarray,
    parts: dict[str, np.ndarray],
) -> np.ndarray:
    """The (len(pool), len(FEATURES)) matrix for the pooled slots.

    ``parts`` holds the default scorer's per-slot arrays: ``base`` (score before
    the penalty), ``relevance``, ``first`` (first-pass BM25), ``stack``,
    ``confidence``, ``usage``, ``recency`` and ``build`` (build-mate relevance).
    """
    k = len(pool)
    x = np.zeros((k, len(FEATURES)))
    if not k:
        return x
    col = {name: i for i, name in enumerate(FEATURES)}
    base = parts["base"][pool]
    x[:, col["default_score"]] = base / max(base.max(), 1e-12)
    order = np.lexsort((pool, -base))
    rank = np.empty(k)
    rank[order] = np.arange(k)
    x[:, col["log_rank"]] = np.log1p(rank)
    x[:, col["relevance"]] = parts["relevance"][pool]
    first = parts["first"][pool]
    x[:, col["first_pass"]] = first / max(first.max(), 1e-12)
    idf = task_idf(index, task)
    x[:, col["text_cover"]] = _cover(index, idf, pool, trigger=False)
    x[:, col["trigger_cover"]] = _cover(index, idf, pool, trigger=True)
    for name in ("stack", "confidence", "usage", "recency"):
        x[:, col["stack_agreement" if name == "stack" else name]] = parts[name][pool]
    x[:, col["build_mates"]] = parts["build"][pool]

    stacks = index.tags_closure.values[pool] & (LANGUAGE_MASK | FRAMEWORK_MASK)
    tmask = np.uint64(task_mask)
    frames = stacks & FRAMEWORK_MASK
    task_frames = tmask & FRAMEWORK_MASK
    x[:, col["untagged"]] = stacks == 0
    x[:, col["framework_match"]] = (frames & tmask) != 0
    if task_frames:
        shares_language = (stacks & LANGUAGE_MASK & tmask) != 0
        x[:, col["language_only"]] = ((frames & tmask) == 0) & shares_language
        x[:, col["framework_conflict"]] = (frames != 0) & ((frames & task_frames) == 0)

    src_terms = index.source_terms(pool)
    total = sum(idf.values())
    if total:
        x[:, col["source_cover"]] = [
            sum(w for t, w in idf.items() if t in terms) / total for terms in src_terms
        ]
    has_src = index.has_src.values[pool]
    x[:, col["has_source"]] = has_src
    if task_mask:
        x[:, col["source_stack"]] = has_src & ((index.src_mask.values[pool] & tmask) != 0)
    x[:, col["log_length"]] = np.log1p(index.doc_len.values[pool])
    for j, i in enumerate(pool):
        lesson = index.slots[i]
        x[j, col["dont"]] = lesson.polarity == "dont"  # type: ignore[union-attr]
        x[j, col[f"type_{lesson.type}"]] = 1.0  # type: ignore[union-attr]
    return x


def learned_scores(x: np.ndarray) -> np.ndarray:
    """``w . z`` for a feature matrix (``z`` standardised with MEAN and SCALE)."""
    return ((x - MEAN) / SCALE) @ WEIGHTS
