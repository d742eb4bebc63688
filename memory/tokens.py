"""How lesson and task text is cut into terms for search, dedup and backfire checks.

A term is a run of lower-case letters and digits (``py_compile`` gives ``py``
and ``compile``; ``tsconfig.json`` gives ``tsconfig`` and ``json``), minus a
short list of English stop words, stemmed by the Snowball English stemmer
(PyStemmer) so that ``tests``, ``tested`` and ``testing`` all match ``test``.
Words that look generic but carry meaning in build lessons ("error", "file",
"use") are kept. The same function serves every caller, so the index, the
dedup check and the backfire check agree on what a word is.
"""

from __future__ import annotations

from functools import lru_cache

import Stemmer

# Bytes outside [a-z0-9] become spaces and A-Z becomes a-z, so that
# ``text.encode().translate(_TABLE).split()`` cuts words in one C pass. Non-ASCII
# letters separate words, as they would with the regex ``[a-z0-9]+``.
_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")
_TABLE = bytes(c + 32 if 65 <= c <= 90 else (c if c in _ALNUM else 32) for c in range(256))

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

_STEMMER = Stemmer.Stemmer("english")


def words(text: str) -> list[bytes]:
    """The text's lower-case words (runs of ASCII letters and digits), as bytes."""
    return text.encode("utf-8", "replace").translate(_TABLE).split()


@lru_cache(maxsize=1 << 18)
def term_of(word: bytes) -> str | None:
    """A word's search term: None for a stop word, else its Snowball stem."""
    text = word.decode("ascii")
    if text in STOPWORDS:
        return None
    return _STEMMER.stemWord(text) if text.isalpha() else text


def terms_of(batch: list[bytes]) -> list[str | None]:
    """``term_of`` for many words at once (one call into the stemmer)."""
    out: list[str | None] = [None] * len(batch)
    alpha: list[int] = []
    for i, word in enumerate(batch):
        text = word.decode("ascii")
        if text in STOPWORDS:
            continue
        if text.isalpha():
            alpha.append(i)
        else:
            out[i] = text
    stems = _STEMMER.stemWords([batch[i].decode("ascii") for i in alpha])
    for i, stemmed in zip(alpha, stems, strict=True):
        out[i] = stemmed
    return out


# Bulk cutting: fields joined by a NUL that the table keeps, so one split gives
# every field's words with b"\x00" tokens between fields.
_BULK_TABLE = b"\x00" + _TABLE[1:]
FIELD_BREAK = b"\x00"


def words_of_fields(fields: list[str]) -> list[bytes]:
    """The words of many texts in one pass, with ``FIELD_BREAK`` after each text."""
    if any("\x00" in f for f in fields):  # a NUL inside a text would end it early
        fields = [f.replace("\x00", " ") for f in fields]
    joined = " \x00 ".join(fields)
    return (joined + " \x00").encode("utf-8", "replace").translate(_BULK_TABLE).split()


def terms(text: str) -> list[str]:
    """The text's search terms in order, with repeats (for term frequencies)."""
    return [t for t in map(term_of, words(text)) if t is not None]


def term_set(text: str) -> set[str]:
    """The text's distinct search terms."""
    return set(terms(text))
