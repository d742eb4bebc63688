"""Rounds of builds for one patch: the baseline's code and the candidate's, side by side.

Each stage of the decision (:func:`orchestrator.bench.decision.evaluate`) asks for a new
round; :class:`Rounds` runs it for both sides at once (two trials in parallel, so time of
day, provider load and cache warmth fall on both alike), from the same frozen memory,
with the same seed, and keeps every round's results on disk
(``iter-<i>/rounds/<stage>-<side>.json``) and pooled per side. It also keeps the
cycle's books: builds, tokens and cost spent, and what is left under the caps, which it
hands to each round so no build starts past them.
"""

from __future__ import annotations

import json
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.bench.decision import Round
from orchestrator.bench.results import NOT_BUILT, MatrixResults, merge_results
from orchestrator.improve.trial import CapReached, MatrixRunner, RoundSpec
from orchestrator.sandbox.files import replace_file


def built(results: MatrixResults) -> int:
    """How many builds a round really made (not the ones a cap left unstarted)."""
    return sum(1 for run in results.runs if run.status not in NOT_BUILT)


@dataclass
class Books:
    """What the cycle spent (its rounds of builds, and its improver), and its caps."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    builds: int = 0
    build_tokens: int = 0
    build_cost: float | None = None
    improver_tokens: int = 0
    improver_cost: float | None = None

    @property
    def tokens(self) -> int:
        return self.build_tokens + self.improver_tokens

    @property
    def cost_usd(self) -> float | None:
        known = [c for c in (self.build_cost, self.improver_cost) if c is not None]
        return sum(known) if known else None

    def add(self, results: MatrixResults) -> None:
        self.builds += built(results)
        self.build_tokens += results.tokens
        if results.cost_usd is not None:
            self.build_cost = (self.build_cost or 0.0) + results.cost_usd

    def improver(self, totals) -> None:
        """The improver's spend so far (its client's running totals)."""
        self.improver_tokens = totals.tokens_in + totals.tokens_out
        self.improver_cost = totals.cost_usd

    def left(self) -> tuple[float | None, int | None]:
        """(cost, tokens) still allowed; raises CapReached when either is spent."""
        spent = self.cost_usd or 0.0
        cost = None if self.max_cost_usd is None else self.max_cost_usd - spent
        tokens = None if self.max_tokens is None else self.max_tokens - self.tokens
        if cost is not None and cost <= 0:
            raise CapReached(f"the spend cap of {self.max_cost_usd:g} USD was reached")
        if tokens is not None and tokens <= 0:
            raise CapReached(f"the token cap of {self.max_tokens:,} was reached")
        return cost, tokens


@dataclass
class Rounds:
    """The rounds of one iteration (a ``Measure`` for the decision)."""

    runner: MatrixRunner
    folder: Path
    baseline_code: Path
    candidate_code: Path | None
    """None: measure the baseline alone (the cycle's first survey)."""
    seed_key: str
    books: Books
    parts: dict[str, list[MatrixResults]] = field(default_factory=dict)
    builds: dict[str, int] = field(default_factory=dict)

    def __call__(self, stage: str, repeats: int, holdout: bool) -> Round:
        cost, tokens = self.books.left()
        split = "all" if holdout else "train"
        seed = zlib.crc32(f"{self.seed_key}:{stage}".encode()) & 0x7FFFFFFF
        sides = {"baseline": self.baseline_code}
        if self.candidate_code is not None:
            sides["candidate"] = self.candidate_code
        # the remaining spend is shared by the sides of the round
        share = len(sides)
        spec = RoundSpec(
            repeats=repeats,
            split=split,
            seed=seed,
            max_cost_usd=None if cost is None else cost / share,
            max_tokens=None if tokens is None else max(1, tokens // share),
        )
        (self.folder / "rounds").mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=len(sides)) as pool:
            futures = {
                side: pool.submit(self.runner.run, code, f"{stage}-{side}", self.folder, spec)
                for side, code in sides.items()
            }
            results: dict[str, MatrixResults] = {}
            capped: CapReached | None = None
            try:
                for side, future in futures.items():
                    try:
                        results[side] = future.result()
                    except CapReached as exc:  # what it built still cost: book it, then stop
                        capped = capped or exc
                        if exc.spent is not None:
                            self._book(stage, side, exc.spent)
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the trials die, then we go
                getattr(self.runner, "interrupt", lambda: None)()
                raise
        for side, res in results.items():
            self._book(stage, side, res)
            self.parts.setdefault(side, []).append(res)
        if capped is not None:
            raise capped
        base, cand = results["baseline"], results.get("candidate", results["baseline"])
        return Round(
            baseline_train=base.scores_by_task("train"),
            candidate_train=cand.scores_by_task("train"),
            baseline_holdout=base.scores_by_task("holdout"),
            candidate_holdout=cand.scores_by_task("holdout"),
        )

    def _book(self, stage: str, side: str, res: MatrixResults) -> None:
        """Count a round's builds in the books and keep its results on disk."""
        self.books.add(res)
        path = self.folder / "rounds" / f"{stage}-{side}.json"
        replace_file(path, json.dumps(res.model_dump(mode="json"), indent=2) + "\n")
        self.builds[stage] = self.builds.get(stage, 0) + built(res)

    def pooled(self, side: str) -> MatrixResults | None:
        parts = self.parts.get(side)
        return merge_results(parts) if parts else None
