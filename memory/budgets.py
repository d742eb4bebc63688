"""Phase budgets learned from history: phase_budgets.jsonl and compute_budgets.

Every finished phase appends one :class:`BudgetRow` (rounds used, files, task
tags, outcome). A phase's budget for a new task is::

    min(10 * default, max(default, ceil(p90(rounds of matching rows) * 1.2)))

where matching rows are rows of that phase whose tags share at least one tag
with the task's, and p90 is numpy's linear-interpolation percentile. With
fewer than 3 matching rows (or no task tags) the default stands. The ceiling
(:data:`CEILING`) keeps a history of runaway phases (rows of hundreds of rounds
that ran out of a large budget, or rows from another system) from granting a
phase a budget that is no longer a limit; the reason says when it cut. Each
:class:`Budget` carries the numbers and a sentence saying which rule decided,
so a user can see why a phase got its rounds. The phases and their default rounds are
given by the caller (cadillac passes ``phases.DEFAULT_ROUNDS``; this package imports
nothing else of cadillac's). Rows of other phases (review, wiring, from the earlier
system) are kept in the file but not used.

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
from memory.tags import normalize_tags

MIN_SAMPLES = 3
HEADROOM = 1.2
PERCENTILE = 90
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


class Budget(BaseModel):
    """The rounds a phase gets for a task, and why."""

    phase: str
    rounds: int
    default: int
    samples: int
    """Matching history rows."""
    p90: float | None
    reason: str


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
        by_phase: dict[str, list[int]] = {phase: [] for phase in self.defaults}
        if wanted:
            for row in self.rows():
                if row.phase in by_phase and wanted.intersection(row.tags):
                    by_phase[row.phase].append(row.rounds)
        return {
            phase: _budget(phase, self.defaults[phase], by_phase[phase], bool(wanted))
            for phase in self.defaults
        }


def _budget(phase: str, default: int, rounds: list[int], have_tags: bool) -> Budget:
    n = len(rounds)
    if not have_tags:
        return Budget(
            phase=phase,
            rounds=default,
            default=default,
            samples=0,
            p90=None,
            reason="default: no task tags to match history by",
        )
    if n < MIN_SAMPLES:
        return Budget(
            phase=phase,
            rounds=default,
            default=default,
            samples=n,
            p90=None,
            reason=f"default: {n} matching row(s), fewer than {MIN_SAMPLES}",
        )
    p90 = float(np.percentile(np.asarray(rounds, dtype=float), PERCENTILE))
    scaled = p90 * HEADROOM
    wanted = math.ceil(round(scaled, 9))
    if wanted <= default:
        reason = f"default: p90 {p90:g} x {HEADROOM} = {scaled:.1f} is within it"
        return Budget(
            phase=phase, rounds=default, default=default, samples=n, p90=p90, reason=reason
        )
    reason = f"history: p90 {p90:g} x {HEADROOM} = {scaled:.1f} over {n} matching rows"
    ceiling = CEILING * default
    if wanted > ceiling:
        reason += f", capped at {CEILING}x the default ({ceiling})"
        wanted = ceiling
    return Budget(phase=phase, rounds=wanted, default=default, samples=n, p90=p90, reason=reason)


__all__ = ["Budget", "BudgetRow", "PhaseBudgets"]
