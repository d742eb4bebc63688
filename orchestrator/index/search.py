"""Ranked search over an index's symbols and files: BM25 on the words of each.

A symbol's document is its name (split on ``camelCase`` and ``snake_case``, counted
three times so a name outweighs a passing mention), its parent, signature, doc line and
path; a file's is its path's parts and doc line. Words are cut by
:func:`memory.tokens.terms`, the same stems lesson search uses, plus the whole name
lower-cased, so ``CodeIndex`` finds both ``code index`` and ``codeindex``. A hit whose
name is the query itself ranks first. The scoring is :class:`memory.bm25.Bm25`, the
formula lesson recall and notes use.

A test names what it tests, often several times over (``test_slugify_a_title``,
``test_slugify_cuts_long_titles`` ...), so on words alone the tests of a function outrank
the function. A hit in a test file (:func:`testmap.is_test`: ``tests/``, ``test_*.py``,
``*_test.go``, ``*.test.ts`` ...) weighs ``TEST_WEIGHT`` of its score, unless the query
asks for tests itself: it holds a word of ``TEST_WORDS`` (``test``, ``spec``, ``fixture``,
``mock`` ...) or a name that does (``test_parse``).
"""

from __future__ import annotations

import re
from collections import Counter

from memory.bm25 import Bm25
from memory.tokens import terms
from orchestrator.index.records import FileRecord, Hit, Symbol
from orchestrator.index.testmap import is_test

NAME_WEIGHT = 3
EXACT_BONUS = 2.0
TEST_WEIGHT = 0.5
"""What a hit in a test file weighs, against one in the code, unless tests are asked for."""
TEST_WORDS = frozenset(terms("test spec pytest unittest conftest fixture fake mock stub e2e"))
"""Terms that ask for tests (stems: ``tests``, ``testing``, ``fixtures``, ``mocks`` too)."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def name_words(name: str) -> str:
    """``parseHTTPRequest_fast`` -> ``parse HTTP Request fast``."""
    return _CAMEL.sub(" ", name).replace("_", " ")


def symbol_terms(symbol: Symbol) -> list[str]:
    name = terms(name_words(symbol.name)) + [symbol.name.lower()]
    rest = f"{name_words(symbol.parent or '')} {symbol.signature} {symbol.doc} {symbol.path}"
    return name * NAME_WEIGHT + terms(rest)


def file_terms(record: FileRecord) -> list[str]:
    path = record.path.replace("/", " ").replace(".", " ")
    return terms(name_words(path)) * NAME_WEIGHT + terms(record.doc)


class SearchIndex:
    """BM25 postings over symbols and files, built once per loaded index."""

    def __init__(self, symbols: list[Symbol], files: list[FileRecord]):
        self.docs: list[Symbol | FileRecord] = [*symbols, *files]
        self.bm25 = Bm25(
            Counter(symbol_terms(doc) if isinstance(doc, Symbol) else file_terms(doc))
            for doc in self.docs
        )
        tests = {path: is_test(path) for path in {doc.path for doc in self.docs}}
        self.in_tests = [tests[doc.path] for doc in self.docs]  # per document: in a test file

    def search(self, query: str, limit: int = 10, path: str | None = None) -> list[Hit]:
        wanted = set(terms(name_words(query))) | {query.strip().lower()}
        prefix = (path or "").removeprefix("./")
        tests_weight = 1.0 if wanted & TEST_WORDS else TEST_WEIGHT
        hits = [
            self._hit(i, score * (tests_weight if self.in_tests[i] else 1.0), query)
            for i, score in self.bm25.ranked(wanted)
            if _under(self.docs[i], prefix)
        ]
        hits.sort(key=lambda h: (-h.score, h.path, h.line))
        return hits[: max(limit, 0)]

    def _hit(self, i: int, score: float, query: str) -> Hit:
        doc = self.docs[i]
        if isinstance(doc, Symbol):
            exact = doc.name.lower() == query.strip().lower()
            return Hit(
                kind="symbol",
                score=round(score * (EXACT_BONUS if exact else 1), 4),
                path=doc.path,
                line=doc.start_line,
                symbol=doc,
            )
        return Hit(kind="file", score=round(score, 4), path=doc.path, line=1, file=doc)


def _under(doc: Symbol | FileRecord, prefix: str) -> bool:
    return doc.path.startswith(prefix)
