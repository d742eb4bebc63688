"""Growable numpy columns and term postings: the storage under the lesson index.

A :class:`Column` is a numpy array that grows by doubling, so appending one
lesson's value costs O(1) and reading the whole column is a slice, not a copy.
:class:`Postings` maps term ids to the slots that contain them: a CSR block
built in one go from sorted (term, slot, tf) triples, plus small per-term lists
for what is added later, concatenated (and cached) when a term is looked up.
This keeps bulk builds vectorised and single additions cheap.
"""

from __future__ import annotations

import numpy as np


class Column:
    """A growable numpy array (amortised O(1) append, in-place set)."""

    def __init__(self, dtype, fill=0):
        self._data = np.full(64, fill, dtype=dtype)
        self._fill = fill
        self.n = 0

    def _reserve(self, n: int) -> None:
        if n > len(self._data):
            grown = np.full(max(n, 2 * len(self._data)), self._fill, dtype=self._data.dtype)
            grown[: self.n] = self._data[: self.n]
            self._data = grown

    def extend(self, values) -> None:
        values = np.asarray(values, dtype=self._data.dtype)
        self._reserve(self.n + len(values))
        self._data[self.n : self.n + len(values)] = values
        self.n += len(values)

    def grow_to(self, n: int) -> None:
        """Pad with the fill value up to length ``n``."""
        if n > self.n:
            self._reserve(n)
            self._data[self.n : n] = self._fill
            self.n = n

    def __setitem__(self, i, value) -> None:
        self._data[i] = value

    @property
    def values(self) -> np.ndarray:
        return self._data[: self.n]


class Postings:
    """Term id -> (slots, term frequencies): a bulk-built CSR part plus per-term additions."""

    def __init__(self):
        self._slots = np.empty(0, np.int64)
        self._tf = np.empty(0, np.float64)
        self._offsets = np.zeros(1, np.int64)
        self._extra: dict[int, tuple[list[int], list[float]]] = {}
        self._cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.df = Column(np.int64)  # live lessons per term

    def add(self, term_ids: np.ndarray, slots: np.ndarray, tfs: np.ndarray, n_terms: int) -> None:
        """Add (term, slot, tf) triples, sorted by term then slot, each pair once."""
        self.df.grow_to(n_terms)
        self.df.values[:] += np.bincount(term_ids, minlength=n_terms)
        if len(self._slots) == 0 and not self._extra:
            self._slots, self._tf = slots.astype(np.int64), tfs.astype(np.float64)
            counts = np.bincount(term_ids, minlength=n_terms)
            self._offsets = np.concatenate([[0], np.cumsum(counts)])
            self._cache.clear()
            return
        for term, slot, tf in zip(term_ids.tolist(), slots.tolist(), tfs.tolist(), strict=True):
            extra = self._extra.get(term)
            if extra is None:
                extra = self._extra[term] = ([], [])
            extra[0].append(slot)
            extra[1].append(tf)
            self._cache.pop(term, None)

    @property
    def compact(self) -> bool:
        return not self._extra

    def state(self, prefix: str) -> dict[str, np.ndarray]:
        return {
            f"{prefix}_slots": self._slots.astype(np.int32),
            f"{prefix}_tf": self._tf.astype(np.float32),
            f"{prefix}_offsets": self._offsets,
            f"{prefix}_df": self.df.values,
        }

    @classmethod
    def from_state(cls, state, prefix: str) -> Postings:
        postings = cls()
        postings._slots = state[f"{prefix}_slots"].astype(np.int64)
        postings._tf = state[f"{prefix}_tf"].astype(np.float64)
        postings._offsets = state[f"{prefix}_offsets"]
        postings.df.extend(state[f"{prefix}_df"])
        return postings

    def get(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        cached = self._cache.get(term_id)
        if cached is None:
            if term_id + 1 < len(self._offsets):
                lo, hi = self._offsets[term_id], self._offsets[term_id + 1]
                slots, tf = self._slots[lo:hi], self._tf[lo:hi]
            else:
                slots, tf = self._slots[:0], self._tf[:0]
            extra = self._extra.get(term_id)
            if extra:
                slots = np.concatenate([slots, np.asarray(extra[0], np.int64)])
                tf = np.concatenate([tf, np.asarray(extra[1], np.float64)])
            cached = self._cache[term_id] = (slots, tf)
        return cached


def triples(term_ids: np.ndarray, slots: np.ndarray, n_slots_hint: int):
    """Distinct (term, slot) pairs with counts, sorted by term then slot."""
    if len(term_ids) == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    width = np.int64(max(n_slots_hint, int(slots.max()) + 1))
    keys, counts = np.unique(term_ids.astype(np.int64) * width + slots, return_counts=True)
    return keys // width, keys % width, counts
