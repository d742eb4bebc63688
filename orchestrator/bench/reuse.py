"""The one rule for reusing baseline builds across the iterations of an improve cycle.

Within one cycle, every baseline-side build score measured on the tip commit C (the
cycle's survey, and every iteration's baseline rounds, train and holdout) goes into a
:class:`BaselinePool`, per task. While the tip stays C (no patch was accepted), a later
iteration's round that needs n baseline builds of task t first takes pool scores this
iteration has not used yet, and only the shortfall is built (and added). Once a patch is
accepted the tip moves, and :meth:`BaselinePool.start_iteration` with the new commit
empties the pool.

**Why reuse is valid.** A baseline build's score is a draw from the distribution of the
baseline code (C) with the cycle's frozen memory and budgets; it does not depend on the
candidate it was compared with. So the baseline scores of task t, in the order they were
built, are one sequence of exchangeable draws, and an iteration that needs n of them may
read the first n it has not used itself: they are distributed exactly as n fresh builds.
How many exist already (what earlier iterations happened to build) decides only what is
built now, never which draws the iteration reads or how many: the number n comes from
the iteration's own stage. Each iteration's test is therefore exact on its own. Its
outcome is correlated with earlier iterations' outcomes (they share draws), but the
night's error control is a union bound (Bonferroni: alpha per iteration is the night's
over the iterations), and a union bound needs no independence: P(any false accept) is
at most the sum of each iteration's own chance.

What must never enter the pool: a candidate's scores, even the accepted one's. They were
kept *because* they scored high (the winner's curse), so they are not fresh draws of the
new tip's code; after an accept the new baseline is measured again. Scores of another
commit than the pool's empty it (the pool only ever holds one commit's builds).
"""

from __future__ import annotations

from collections.abc import Iterable


class BaselinePool:
    """Baseline build scores of one commit, per task, with what this iteration used."""

    def __init__(self) -> None:
        self.commit: str | None = None
        self._scores: dict[str, list[float]] = {}
        self._used: dict[str, list[bool]] = {}
        """Per task and score: whether this iteration used it."""

    def _switch(self, commit: str) -> None:
        if commit != self.commit:
            self.commit = commit
            self._scores.clear()
            self._used.clear()

    def start_iteration(self, commit: str) -> None:
        """A new iteration on ``commit``: every score is unused again; another commit than
        the pool's (a patch was accepted) empties it."""
        self._switch(commit)
        self._used = {task: [False] * len(s) for task, s in self._scores.items()}

    def add(self, commit: str, task: str, scores: Iterable[float]) -> None:
        """Baseline builds of ``task`` on ``commit`` just measured; they count as used by
        this iteration (the round that built them reads them already)."""
        self._switch(commit)
        new = [float(s) for s in scores]
        self._scores.setdefault(task, []).extend(new)
        self._used.setdefault(task, []).extend([True] * len(new))

    def take(self, task: str, n: int) -> list[float]:
        """Up to ``n`` of ``task``'s scores this iteration has not used, oldest first; they
        are used from now on."""
        used = self._used.get(task, [])
        got = []
        for i, score in enumerate(self._scores.get(task, [])):
            if len(got) >= n:
                break
            if not used[i]:
                used[i] = True
                got.append(score)
        return got

    def available(self, task: str) -> int:
        """How many of ``task``'s scores this iteration could still take."""
        return self._used.get(task, []).count(False)
