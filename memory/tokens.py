"""How lesson and task text is cut into terms for search, dedup and backfire checks.

A term is a run of lower-case letters and digits (``py_compile`` gives ``py``
and ``compile``; ``tsconfig.json`` gives ``tsconfig`` and ``json``), minus a
short list of English stop words and words that every build lesson contains
("use", "file", "error" are kept: they carry meaning in this corpus). A light
stemmer folds plural and verb endings (``tests``/``tested``/``testing`` ->
``test``) so that a task's wording matches a lesson's. The same function serves
every caller, so the index, the dedup check and the penalty check agree.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TERM = re.compile(r"[a-z0-9]+")

STOPWORDS = frozenset(
    """
    a an and are as at be been but by can could did do does doing done for from had has have
    having he her here how i if in into is it its itself just me more most my no nor not of
    off on once only or other our out over own same she should so some such than that the
    their them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours also via
    e g eg ie etc s t let lets make makes made get gets got want wants using used
    """.split()
)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Fold common English endings; leaves short words and words with digits alone."""
    if len(word) <= 4 or not word.isalpha():
        return word
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)] + keep
            if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2]:
                base = base[:-1]  # running -> run, skipped -> skip
            return base
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The text's search terms in order, with repeats (for term frequencies)."""
    return [stem(w) for w in _TERM.findall(text.lower()) if w not in STOPWORDS]


def term_set(text: str) -> set[str]:
    """The text's distinct search terms."""
    return set(terms(text))
