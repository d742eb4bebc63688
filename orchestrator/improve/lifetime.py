"""The false-accept budget over a repository's life: every night's alpha comes out of it.

The decision rule bounds each night: a night with no real improvement keeps anything with
chance at most ``night_alpha``. Nights add up, though: at 1.3% a night, about a third of
30-night months keep at least one patch that is noise. So every iteration that measures a
patch also spends from one budget per repository, ``lifetime_alpha`` (default
:data:`DEFAULT_BUDGET`), and the chance that *any* patch kept over the repository's life is
noise is at most what was spent (the union bound: each measured iteration falsely
accepts with chance at most its own alpha, whatever the others did).

**The schedule (alpha spending).** The T-th measured iteration of a repository may spend
``budget * (curve(T) - curve(T - 1))`` with ``curve(T) = 1 - sqrt(K / (T + K))``
(K = :data:`SPREAD`): the whole budget is never spent, the first iterations get the most,
and later ones less and less (the 100th about an 80th of the first), so a repository
can be improved for a long time and its figure keeps its meaning. A cycle of I iterations
is granted, for each, the mean of the next I shares (a cycle's iterations share one alpha,
as the rule's Bonferroni split always had them), and never more than the night's own
share (``night_alpha / iterations``): the night's bound holds as before. Only iterations
that measure spend (one without a usable proposal, or whose patch failed the project's
tests, cannot keep anything); an iteration books its alpha *before* its first round, so a
cycle killed mid-round has spent it.

**The ledger.** ``error_budget.jsonl`` in the home (beside the nightly's records and
lock): one line per measured iteration (``test``) and per kept patch (``kept``), keyed by
the repository's first commit, appended under a file lock, never rewritten. A line that
cannot be read stops the cycle with one line naming it: the budget is never guessed, and
nothing is written over what is there.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from filelock import FileLock, Timeout
from pydantic import BaseModel, Field, ValidationError

from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.sandbox.files import append_file, read_regular, what_is

DEFAULT_BUDGET = 0.1
"""The chance that any patch kept over a repository's life is noise, at most."""
SPREAD = 5
"""K of the schedule: how fast the shares fall (the first is about budget / 2K)."""
LOCK_TIMEOUT_S = 60
LEDGER_LIMIT = 64_000_000


def curve(tests: int) -> float:
    """The share of the budget the first ``tests`` measured iterations may spend together."""
    return 1.0 - math.sqrt(SPREAD / (tests + SPREAD))


class Entry(BaseModel):
    """One line of the ledger."""

    v: int = 1
    kind: Literal["test", "kept"]
    """test: an iteration began measuring a patch at ``alpha``; kept: it was accepted."""
    repo: str
    """The repository's first commit (the same in every clone and worktree)."""
    path: str = ""
    """Where the repository was, for people."""
    improve_id: str = ""
    iteration: int = Field(default=0, ge=0)
    alpha: float = Field(default=0.0, ge=0, le=1)
    budget: float = Field(gt=0, lt=1)
    """The lifetime alpha in force when the line was written."""
    ts: float = Field(default_factory=time.time)


class Lifetime(BaseModel):
    """A repository's running figure: what its summary and the nightly report show."""

    budget: float
    """The lifetime alpha: the bound the budget keeps."""
    spent: float
    """Alpha spent over the repository's life: the chance that any patch kept so far is
    noise is at most this."""
    tests: int
    """Iterations that measured a patch, over the repository's life."""
    kept: int
    """Patches kept over the repository's life."""
    alpha: float | None = None
    """The alpha each iteration of this cycle was granted."""

    def sentence(self) -> str:
        return (
            f"lifetime error budget: {self.spent:.4f} of {self.budget:g} spent over "
            f"{self.tests} measured iteration(s); the chance that any of the {self.kept} "
            f"patch(es) kept so far is noise is at most {self.spent:.2%}"
        )


@dataclass
class Standing:
    """What the ledger says of one repository."""

    tests: int = 0
    spent: float = 0.0
    kept: int = 0

    def grant(self, budget: float, iterations: int, cap: float) -> float:
        """The alpha each of a cycle's ``iterations`` may use (see the module docstring):
        the mean of the next shares, within what is left, and at most ``cap``."""
        share = budget * (curve(self.tests + iterations) - curve(self.tests))
        room = max(0.0, budget - self.spent)
        return min(cap, min(share, room) / iterations)


def first_commit(repo: Path) -> str:
    """The repository's identity in the ledger: its first commit (the earliest root)."""
    from orchestrator.improve.git import git

    roots = git(repo, "rev-list", "--max-parents=0", "HEAD").split()
    return sorted(roots)[0]


class ErrorBudget:
    """A repository's lifetime budget in the home's ledger."""

    def __init__(self, home: Home, repo: Path, budget: float):
        self.path = home.error_budget_path
        self.repo, self.budget = repo, budget
        self.key = first_commit(repo)
        self._lock = FileLock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT_S)

    def _held(self):
        try:
            return self._lock.acquire()
        except Timeout:
            raise CadillacError(
                f"{self.path} is locked by another process for over {LOCK_TIMEOUT_S} s"
            ) from None

    def _entries(self, settled: bool = True) -> list[Entry]:
        """Every line of the ledger; CadillacError naming one that cannot be read. Not
        ``settled`` (read without the lock), a last line still being written is left out."""
        if what_is(self.path) == "nothing":
            return []
        try:
            data = read_regular(self.path, LEDGER_LIMIT + 1)
        except OSError as exc:
            raise CadillacError(f"{self.path} cannot be read: {exc.strerror or exc}") from None
        if len(data) > LEDGER_LIMIT:
            raise CadillacError(f"{self.path} is over {LEDGER_LIMIT:,} bytes: not a ledger")
        lines = data.split(b"\n")
        if not settled:
            lines = lines[:-1]  # what follows the last newline may be an append under way
        out = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                out.append(Entry.model_validate_json(line))
            except ValidationError as exc:
                error = exc.errors()[0]
                where = ".".join(str(p) for p in error["loc"])
                why = f"{where}: {error['msg']}" if where else error["msg"]
                raise CadillacError(
                    f"{self.path} line {number} cannot be read ({why}); the error budget is "
                    "never guessed: mend or remove that line, nothing was started"
                ) from None
        return out

    def standing(self, locked: bool = True) -> Standing:
        """The repository's standing. Not ``locked``: read without taking the lock, so
        nothing is made (a check before a cycle starts)."""
        if not locked:
            return self._standing(self._entries(settled=False))
        with self._held():
            return self._standing(self._entries())

    def _standing(self, entries: list[Entry]) -> Standing:
        mine = [e for e in entries if e.repo == self.key]
        tests = [e for e in mine if e.kind == "test"]
        return Standing(
            tests=len(tests),
            spent=sum(e.alpha for e in tests),
            kept=sum(1 for e in mine if e.kind == "kept"),
        )

    def book(self, kind: str, improve_id: str, iteration: int, alpha: float = 0.0) -> None:
        """Append one line (a measured iteration's alpha before its first round, or a kept
        patch), under the lock, after reading the ledger whole: a bad line stops it."""
        entry = Entry(
            kind=kind,
            repo=self.key,
            path=str(self.repo),
            improve_id=improve_id,
            iteration=iteration,
            alpha=alpha,
            budget=self.budget,
        )
        with self._held():
            self._entries()
            append_file(self.path, entry.model_dump_json() + "\n")


class CycleBudget:
    """One cycle's part of its repository's budget: the alpha granted each of its
    iterations, what it booked, and the running figure its summary shows."""

    def __init__(self, home: Home, repo: Path, budget: float):
        self.ledger = ErrorBudget(home, repo, budget)
        self.figure = Lifetime(budget=budget, spent=0.0, tests=0, kept=0)

    def open(self, iterations: int, cap: float) -> float:
        """The alpha each of ``iterations`` is granted (at most ``cap``); CadillacError when
        the budget leaves none."""
        now = self.ledger.standing()
        grant = now.grant(self.ledger.budget, iterations, cap)
        if grant <= 0:
            raise CadillacError(
                f"the lifetime error budget of {self.ledger.repo} ({self.ledger.budget:g}, in "
                f"{self.ledger.path}) is spent: no patch could be kept; give a larger "
                "--lifetime-alpha (a weaker bound over the repository's life)"
            )
        self.figure = Lifetime(
            budget=self.ledger.budget, spent=now.spent, tests=now.tests, kept=now.kept, alpha=grant
        )
        return grant

    def book(self, kind: str, improve_id: str, iteration: int, alpha: float) -> Lifetime:
        """A measured iteration at ``alpha`` (``test``) or a kept patch (``kept``), in the
        ledger and the figure; the figure."""
        spent = alpha if kind == "test" else 0.0
        self.ledger.book(kind, improve_id, iteration, spent)
        if kind == "test":
            self.figure.tests += 1
            self.figure.spent += spent
        else:
            self.figure.kept += 1
        return self.figure


def lifetime_grant(home: Home, repo: Path, config) -> float | None:
    """What a cycle of ``config`` would be granted per iteration now (None: no lifetime
    budget); reads the ledger only."""
    if config.lifetime_alpha is None:
        return None
    standing = ErrorBudget(home, repo, config.lifetime_alpha).standing(locked=False)
    return standing.grant(config.lifetime_alpha, config.iterations, config.night_share)
