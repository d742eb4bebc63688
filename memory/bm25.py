"""Okapi BM25, written once: the formula lesson recall, notes and the code index share.

A document's score for a query is the sum over the query's terms of::

    weight * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl))
    idf = log(1 + (n_docs - df + 0.5) / (df + 0.5))

with ``k1 = 1.2`` and ``b = 0.75`` (:data:`K1`, :data:`B`), ``tf`` the term's count in
the document, ``df`` the number of documents that hold it and ``avgdl`` the mean
document length in terms (at least 1e-9, so an index of empty documents divides by
no zero). A query is a collection of terms (each of weight 1) or a mapping of term
to weight (recall's feedback terms weigh 0.2).

:func:`term_scores` is the formula for one term over the documents that hold it, on
numpy arrays; recall (:mod:`memory.recall`) calls it over its own postings, which
live in the lesson index's columns and change in place. :class:`Bm25` holds the
postings of a fixed list of documents (term counters) and scores a query over all
of them: what notes (:meth:`memory.notes.Notebook.relevant`) and the code index
(:mod:`orchestrator.index.search`) search with. Which documents take part is the
caller's choice: a document left out of the list shapes neither the idf, the
average length, nor (in recall) the normalisation.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np

K1, B = 1.2, 0.75


def idf(n_docs: int, df: int) -> float:
    """Okapi's inverse document frequency, never negative."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def term_scores(
    tf: np.ndarray,
    doc_len: np.ndarray,
    avgdl: float,
    n_docs: int,
    df: int,
    k1: float = K1,
    b: float = B,
) -> np.ndarray:
    """One term's BM25 in each document holding it (``tf`` and ``doc_len`` aligned)."""
    norm = k1 * (1.0 - b + b * doc_len / max(avgdl, 1e-9))
    return idf(n_docs, df) * tf * (k1 + 1.0) / (tf + norm)


def as_query(query: Iterable[str] | Mapping[str, float]) -> dict[str, float]:
    """A query's terms with their weights (1 for each term of a plain collection)."""
    if isinstance(query, Mapping):
        return dict(query)
    return dict.fromkeys(query, 1.0)


class Bm25:
    """The postings of a fixed list of documents, each given as its term counts."""

    def __init__(self, docs: Iterable[Mapping[str, int]], k1: float = K1, b: float = B):
        self.k1, self.b = k1, b
        lists: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        lengths: list[int] = []
        for i, counts in enumerate(docs):
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                ids, tfs = lists[term]
                ids.append(i)
                tfs.append(tf)
        self.lengths = np.asarray(lengths, dtype=np.float64)
        self.n_docs = len(lengths)
        self.avgdl = float(self.lengths.mean()) if self.n_docs else 1.0
        self.postings = {
            term: (np.asarray(ids, dtype=np.int64), np.asarray(tfs, dtype=np.float64))
            for term, (ids, tfs) in lists.items()
        }

    def scores(self, query: Iterable[str] | Mapping[str, float]) -> np.ndarray:
        """Each document's BM25 for ``query``, in document order (0 where no term is held)."""
        out = np.zeros(self.n_docs)
        for term, weight in as_query(query).items():
            found = self.postings.get(term)
            if found is None:
                continue
            ids, tf = found
            part = term_scores(
                tf, self.lengths[ids], self.avgdl, self.n_docs, len(ids), self.k1, self.b
            )
            out[ids] += weight * part
        return out

    def ranked(self, query: Iterable[str] | Mapping[str, float]) -> list[tuple[int, float]]:
        """The documents scoring above 0 as ``(position, score)``, best first, ties in
        document order."""
        scores = self.scores(query)
        hit = np.flatnonzero(scores > 0)
        order = hit[np.lexsort((hit, -scores[hit]))]
        return [(int(i), float(scores[i])) for i in order]


__all__ = ["B", "K1", "Bm25", "as_query", "idf", "term_scores"]
