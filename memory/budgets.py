"""Phase budgets learned from history: phase_budgets.jsonl and compute_budgets.

Every finished phase appends one :class:`BudgetRow` (rounds used, files, task
tags, outcome). A phase's budget for a new task is::

    min(10 * default, max(default, ceil(p90(rounds of matching passed rows) * 1.2),
                          median(rounds of matching exhausted rows)))

*Matching* is the seed's ``tag_overlap(r.tags, task_tags)``, read as an overlap of
the two tag sets, not a single shared tag: a row matches when the tags it shares
with the task are at least half of the tags the two have between them (Jaccard
``|R & T| / |R | T| >= 0.5``, :data:`MATCH_SHARE`). The sets compared are the stack
tags with the languages they imply (:func:`memory.tags.stack_tags`: ``flask`` means
python; phase and layout tags such as ``build`` or ``modular`` say nothing of the
rounds a stack needs), or the raw tags when the task has no stack tag. One shared
``python`` is not enough, so a pygame task that keeps failing does not set the
budget of a Flask task; a task tagged ``pygame`` matches rows tagged ``pygame``.

*Passed* rows (outcome ``passed``, or no outcome: rows written by the earlier system,
which recorded completed phases) say how many rounds a phase needed; p90 is numpy's
linear-interpolation percentile over them. With fewer than 3 matching passed rows
(or no task tags) they say nothing and the default stands.

*Exhausted* rows (``budget_exhausted``) are censored: the phase needed more than
the rounds it had, by how much nobody knows. They never take part in the
percentile and never get the headroom, since a phase that ran out of N rounds and
is given 1.2 N runs out of those, and the next budget is 1.44 N: that was the
ratchet that took every Python task's build budget from 30 to 243. They are only a
floor: with at least 3 matching exhausted rows, the budget is not set below their
median, the rounds that most such phases already had and used up. A floor can
never exceed a budget some phase was already given, so budgets rise only on
phases that passed. Rows with outcome ``error`` (the model could not be reached)
say nothing about the rounds a phase needs and are not used.

The ceiling (:data:`CEILING`) keeps a history of runaway phases (rows of hundreds of
rounds, or rows from another system) from granting a phase a budget that is no
longer a limit; the reason says when it cut. Each :class:`Budget` carries the
numbers and a sentence saying which rule decided, so a user can see why a phase
got its rounds. The phases and their default rounds are given by the caller
(cadillac passes ``phases.DEFAULT_ROUNDS``; this package imports nothing else of
cadillac's). Rows of other phases (review, wiring, from the earlier system) are
kept in the file but not used.

A row is history only if its numbers are ones a phase can have: ``rounds`` at most
:data:`MAX_ROUNDS` and a finite ``ts``. A row with ``rounds`` of 10**400 (or any count
no phase ever ran) is damage, not history, and would overflow the percentile; like any
other invalid line it is skipped with a warning and left in the file (:mod:`memory.jsonl`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.jsonl import JsonlFile
from memory.tags import normalize_tags, stack_tags

MIN_SAMPLES = 3
HEADROOM = 1.2
PERCENTILE = 90
MATCH_SHARE = 0.5
"""A row matches a task when the tags they share are at least this share of their union."""
CEILING = 10
"""A phase's budget is at most this many times its default, whatever the history says."""
MAX_ROUNDS = 1_000_000
"""The most rounds a row may record; a larger count is an invalid row, skipped with a warning."""
Outcome = Literal["passed", "budget_exhausted", "error"]


class BudgetRow(BaseModel):
    """One finished phase."""

    model_config = ConfigDict(extra="allow")

    ts: float = Field(default_factory=time.time, allow_inf_nan=False)
    phase: str = Field(min_length=1)
    rounds: int = Field(ge=0, le=MAX_ROUNDS)
    n_files: int = Field(default=0, ge=0)
    tags: list[str] = Field(default_factory=list)
    outcome: Outcome | None = None
    """None in rows written by the earlier system."""
    v: int = 1

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: object) -> object:
        return normalize_tags(value) if isinstance(value, list | tuple | set) else value


USED_SHOWN = 50
"""How many of the rows a budget used it names (the run's record holds every budget)."""


class UsedRow(BaseModel):
    """A history row a budget was computed from (its ``ts`` finds it in the file)."""

    ts: float
    tags: list[str]
    rounds: int
    outcome: Outcome | None


class Budget(BaseModel):
    """The rounds a phase gets for a task, and why."""

    phase: str
    rounds: int
    default: int
    samples: int
    """Matching passed history rows."""
    p90: float | None
    reason: str
    used: list[UsedRow] = Field(default_factory=list)
    """The matching rows it was computed from (passed and exhausted), oldest first: the
    last :data:`USED_SHOWN` of ``used_total``."""
    used_total: int = 0

    def sources(self) -> str:
        """Which rows were used, in a few words: ``3 rows tagged go, cli; 1 tagged go``."""
        if not self.used:
            return "no matching rows"
        counts: dict[str, int] = {}
        for row in self.used:
            key = ", ".join(sorted(stack_tags(set(row.tags))) or row.tags) or "(no tags)"
            counts[key] = counts.get(key, 0) + 1
        parts = [f"{n} tagged {key}" for key, n in sorted(counts.items(), key=lambda kv: -kv[1])]
        total, shown = self.used_total or len(self.used), len(self.used)
        head = f"{total} row{'s' if total != 1 else ''}"
        head += f" (the last {shown}: " if shown < total else " ("
        return head + "; ".join(parts) + ")"


class PhaseBudgets:
    """The phase-budget history in one JSONL file."""

    def __init__(self, path: str | os.PathLike[str], defaults: Mapping[str, int]):
        """``defaults``: phase name -> its rounds when history is silent, in build order."""
        self.file: JsonlFile[BudgetRow] = JsonlFile(path, BudgetRow)
        self.defaults = dict(defaults)

    @property
    def path(self):
        return self.file.path

    def close(self) -> None:
        """Release the history file's descriptor (see :mod:`memory.jsonl`); reads reopen it."""
        self.file.close()

    def rows(self) -> list[BudgetRow]:
        self.file.refresh()
        return list(self.file.records)

    def record_phase_outcome(
        self,
        phase: str,
        rounds: int,
        n_files: int = 0,
        tags: list[str] | set[str] | tuple[str, ...] = (),
        outcome: Outcome | None = None,
    ) -> BudgetRow:
        """Append the row for one finished phase."""
        if phase not in self.defaults:
            raise ValueError(f"unknown phase {phase!r}; phases are {', '.join(self.defaults)}")
        row = BudgetRow(
            phase=phase, rounds=rounds, n_files=n_files, tags=list(tags), outcome=outcome
        )
        self.file.append([row])
        return row

    def compute_budgets(
        self, task_tags: set[str] | list[str] | tuple[str, ...]
    ) -> dict[str, Budget]:
        """Each phase's budget for a task with these tags (see the module docstring)."""
        wanted = set(normalize_tags(task_tags))
        passed: dict[str, list[int]] = {phase: [] for phase in self.defaults}
        exhausted: dict[str, list[int]] = {phase: [] for phase in self.defaults}
        used: dict[str, list[UsedRow]] = {phase: [] for phase in self.defaults}
        if wanted:
            for row in self.rows():
                if row.phase not in passed or not matches(row.tags, wanted):
                    continue
                if row.outcome in (None, "passed"):
                    passed[row.phase].append(row.rounds)
                elif row.outcome == "budget_exhausted":
                    exhausted[row.phase].append(row.rounds)
                else:
                    continue
                used[row.phase].append(
                    UsedRow(ts=row.ts, tags=row.tags, rounds=row.rounds, outcome=row.outcome)
                )
        budgets = {
            phase: _budget(
                phase, self.defaults[phase], passed[phase], exhausted[phase], bool(wanted)
            )
            for phase in self.defaults
        }
        for phase, budget in budgets.items():
            if budget.reason.startswith("default: no task tags"):
                continue
            budget.used, budget.used_total = used[phase][-USED_SHOWN:], len(used[phase])
        return budgets


def matches(row_tags: list[str] | set[str], task_tags: set[str]) -> bool:
    """The seed's ``tag_overlap``: the shared tags are at least :data:`MATCH_SHARE` of all
    (stack tags with the languages they imply, when the task has any)."""
    task, row = stack_tags(set(task_tags)), stack_tags(set(row_tags))
    if not task:
        task, row = set(task_tags), set(row_tags)
    union = row | task
    return bool(union) and len(row & task) >= MATCH_SHARE * len(union)


def _budget(
    phase: str, default: int, rounds: list[int], exhausted: list[int], have_tags: bool
) -> Budget:
    n = len(rounds)

    def budget(value: int, p90: float | None, reason: str) -> Budget:
        return Budget(phase=phase, rounds=value, default=default, samples=n, p90=p90, reason=reason)

    if not have_tags:
        return budget(default, None, "default: no task tags to match history by")
    p90 = None
    if n < MIN_SAMPLES:
        wanted, reason = default, f"default: {n} matching passed row(s), fewer than {MIN_SAMPLES}"
    else:
        p90 = float(np.percentile(np.asarray(rounds, dtype=float), PERCENTILE))
        scaled = p90 * HEADROOM
        wanted = math.ceil(round(scaled, 9))
        if wanted <= default:
            wanted, reason = (
                default,
                f"default: p90 {p90:g} x {HEADROOM} = {scaled:.1f} is within it",
            )
        else:
            reason = f"history: p90 {p90:g} x {HEADROOM} = {scaled:.1f} over {n} matching rows"
    if len(exhausted) >= MIN_SAMPLES:
        floor = math.ceil(float(np.median(np.asarray(exhausted, dtype=float))))
        if floor > wanted:
            wanted = floor
            reason += (
                f"; raised to {floor}, the median of {len(exhausted)} matching rows"
                " that ran out of rounds"
            )
    ceiling = CEILING * default
    if wanted > ceiling:
        reason += f", capped at {CEILING}x the default ({ceiling})"
        wanted = ceiling
    return budget(wanted, p90, reason)


__all__ = ["Budget", "BudgetRow", "PhaseBudgets", "UsedRow", "matches"]
