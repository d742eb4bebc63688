"""Ranked search over an index's symbols and files: BM25 on the words of each.

A symbol's document is its name (split on ``camelCase`` and ``snake_case``, counted
three times so a name outweighs a passing mention), its parent, signature, doc line and
path; a file's is its path's parts and doc line. Words are cut by
:func:`memory.tokens.terms`, the same stems lesson search uses, plus the whole name
lower-cased, so ``CodeIndex`` finds both ``code index`` and ``codeindex``. A hit whose
name is the query itself ranks first.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

from memory.tokens import terms
from orchestrator.index.records import FileRecord, Hit, Symbol

K1, B = 1.2, 0.75
NAME_WEIGHT = 3
EXACT_BONUS = 2.0
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
    """Postings from term to documents, built once per loaded index."""

    def __init__(self, symbols: list[Symbol], files: list[FileRecord]):
        self.docs: list[Symbol | FileRecord] = [*symbols, *files]
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths = []
        for i, doc in enumerate(self.docs):
            counts = Counter(symbol_terms(doc) if isinstance(doc, Symbol) else file_terms(doc))
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((i, tf))
        self.lengths = lengths
        self.average = (sum(lengths) / len(lengths)) if lengths else 1.0

    def search(self, query: str, limit: int = 10, path: str | None = None) -> list[Hit]:
        scores: dict[int, float] = defaultdict(float)
        wanted = set(terms(name_words(query))) | {query.strip().lower()}
        n = len(self.docs)
        for term in wanted:
            posting = self.postings.get(term, [])
            idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for i, tf in posting:
                norm = K1 * (1 - B + B * self.lengths[i] / self.average)
                scores[i] += idf * tf * (K1 + 1) / (tf + norm)
        prefix = (path or "").removeprefix("./")
        hits = [self._hit(i, s, query) for i, s in scores.items() if _under(self.docs[i], prefix)]
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
