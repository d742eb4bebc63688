"""Rounds of builds for one patch: the baseline's code and the candidate's, side by side.

Each stage of the decision (:func:`orchestrator.bench.decision.evaluate`) asks for a new
round; :class:`Rounds` runs it for both sides at once (two trials in parallel, so time of
day, provider load and cache warmth fall on both alike), from the same frozen memory,
with the same seed, and keeps every round's results on disk
(``iter-<i>/rounds/<stage>-<side>.json``) and pooled per side. It also keeps the
cycle's books: builds, tokens and cost spent, and what is left under the caps, which it
hands to each round so no build starts past them.

**Reused baseline builds.** The decision says how many builds each side needs per task
(the baseline's may differ from the candidate's: all of them at the screen, none later).
The baseline side builds only what the cycle's
:class:`~orchestrator.bench.reuse.BaselinePool` cannot serve (:class:`Reuse`): a round
that needs n builds of a task takes the tip's scores this iteration has not used yet and
builds the shortfall, in one trial per shortfall (``<stage>-baseline.json``, then
``<stage>-baseline-2.json`` ...), each building only its tasks. What it built goes into
the pool. The tasks of the weakness the iteration works on are never served from the
pool: that weakness was picked *because* of those tasks' baseline builds (they failed),
so their scores are no fresh draws for this iteration's test (reused, they would lower
the baseline where the patch aims, and a patch that does nothing would look like a lift);
they get the decision's ``fresh`` count, built beside the candidate's at every look.
The records say how many scores each stage reused; the books count only builds made.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.bench.decision import Round
from orchestrator.bench.results import NOT_BUILT, MatrixResults, merge_results
from orchestrator.bench.reuse import BaselinePool
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
class Reuse:
    """What a round's baseline side may take instead of building (see the module docstring)."""

    pool: BaselinePool
    commit: str
    """The baseline's commit: the pool serves only its own commit's scores."""
    tasks: dict[str, str] = field(default_factory=dict)
    """The matrix's tasks and their splits (task id -> train or holdout); empty before the
    survey measured them, when nothing is taken and the whole split is built."""
    fresh: frozenset[str] = frozenset()
    """Tasks always built afresh: the iteration's weakness's (its builds picked it)."""


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
    reuse: Reuse | None = None
    """None: every baseline build is made (nothing is kept for later rounds either)."""
    parts: dict[str, list[MatrixResults]] = field(default_factory=dict)
    """Per side, the results of the builds made (reused scores have none)."""
    builds: dict[str, int] = field(default_factory=dict)
    """Per stage, the builds made (both sides)."""
    reused: dict[str, int] = field(default_factory=dict)
    """Per stage that took any, the baseline scores taken from the pool instead of built."""
    scores: Round = field(default_factory=Round)
    """Every round's scores as the decision read them (reused ones included)."""

    def __call__(
        self,
        stage: str,
        repeats: int,
        holdout: bool,
        *,
        tasks: Collection[str] | None = None,
        baseline: int | None = None,
        fresh: int | None = None,
    ) -> Round:
        """A round of both sides (the decision's ``Measure``): ``repeats`` candidate builds
        per train task (only of ``tasks`` when given, none for an empty collection) and,
        with ``holdout``, per holdout task; the baseline's ``baseline`` per task (None:
        ``repeats``), the pool's first, and ``fresh`` (None: as ``baseline``) per task the
        pool may not serve, all built."""
        cost, tokens = self.books.left()
        split = "all" if holdout else "train"
        seed = zlib.crc32(f"{self.seed_key}:{stage}".encode()) & 0x7FFFFFFF
        want = repeats if baseline is None else baseline
        plan = self._plan(split, repeats, tasks, want, want if fresh is None else fresh)
        chosen, taken, short = plan
        jobs: dict[str, list[tuple[str, Path, RoundSpec]]] = {"baseline": []}
        for n, (need, ids) in enumerate(short):
            label = f"{stage}-baseline" + (f"-{n + 1}" if n else "")
            spec = RoundSpec(need, split, seed, tasks=ids)
            jobs["baseline"].append((label, self.baseline_code, spec))
        if self.candidate_code is not None and repeats and chosen != []:
            spec = RoundSpec(repeats, split, seed, tasks=chosen)
            jobs["candidate"] = [(f"{stage}-candidate", self.candidate_code, spec)]
        planned = {label: _planned(spec, len(self.reuse.tasks) if self.reuse else 0)
                   for side in jobs.values() for label, _, spec in side}  # fmt: skip
        total = sum(planned.values()) or 1
        for side in jobs.values():  # the remaining spend is shared by the builds planned
            for label, _, spec in side:
                share = planned[label] / total
                spec.max_cost_usd = None if cost is None else cost * share
                spec.max_tokens = None if tokens is None else max(1, int(tokens * share))
        (self.folder / "rounds").mkdir(parents=True, exist_ok=True)
        results: dict[str, list[MatrixResults]] = {}
        capped: CapReached | None = None
        busy = {side: side_jobs for side, side_jobs in jobs.items() if side_jobs}
        with ThreadPoolExecutor(max_workers=max(1, len(busy))) as pool:
            futures = {side: pool.submit(self._side, side_jobs) for side, side_jobs in busy.items()}
            try:
                for side, future in futures.items():
                    made, cut = future.result()
                    for label, res in made:
                        self._book(stage, label, res)
                    results[side] = [res for _, res in made]
                    if cut is not None:  # what it built still cost: book it, then stop
                        label, exc = cut
                        capped = capped or exc
                        if exc.spent is not None:
                            self._book(stage, label, exc.spent)
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the trials die, then we go
                getattr(self.runner, "interrupt", lambda: None)()
                raise
        for side, made in results.items():
            self.parts.setdefault(side, []).extend(made)
        self._keep(results.get("baseline", []))
        if taken:
            self.reused[stage] = self.reused.get(stage, 0) + sum(map(len, taken.values()))
        if capped is not None:
            raise capped
        known = self.reuse.tasks if self.reuse is not None else {}
        base = _scores(results.get("baseline", []), taken, known)
        alone = self.candidate_code is None  # the survey: the baseline's builds are all
        cand = base if alone else _scores(results.get("candidate", []), {}, known)
        measured = Round(
            baseline_train=base["train"],
            candidate_train=cand["train"],
            baseline_holdout=base["holdout"],
            candidate_holdout=cand["holdout"],
        )
        self.scores = self.scores + measured
        return measured

    def _plan(
        self,
        split: str,
        repeats: int,
        tasks: Collection[str] | None,
        baseline: int,
        fresh: int,
    ) -> tuple[list[str] | None, dict[str, list[float]], list[tuple[int, list[str] | None]]]:
        """(the tasks of the round, None for the whole split; the scores taken from the pool,
        per task; the baseline's builds: (repeats, tasks or None) per trial, most first).
        A task wants ``baseline`` builds, the pool's first, or ``fresh`` when the pool may
        not serve it (built)."""
        known = self.reuse.tasks if self.reuse is not None else {}
        if not known:
            if tasks is not None:
                raise ValueError("a round of some tasks needs the matrix's tasks (the survey's)")
            return None, {}, [(baseline, None)] if baseline else []
        chosen = [
            t
            for t, where in sorted(known.items())
            if (where == "train" and (tasks is None or t in tasks))
            or (where == "holdout" and split == "all")
        ]
        reuse = self.reuse
        serving = reuse is not None and reuse.pool.commit == reuse.commit
        taken: dict[str, list[float]] = {}
        need: dict[int, list[str]] = {}
        for task in chosen:
            if task in reuse.fresh and known[task] == "train":
                got, n = [], fresh
            else:
                got, n = (reuse.pool.take(task, baseline) if serving else []), baseline
            if got:
                taken[task] = got
            if n - len(got):
                need.setdefault(n - len(got), []).append(task)
        whole = tasks is None
        short = [
            (n, None if whole and ids == chosen else ids)
            for n, ids in sorted(need.items(), reverse=True)
        ]
        return (None if whole else chosen), taken, short

    def _side(self, jobs: list[tuple[str, Path, RoundSpec]]):
        """One side's trials, one after the other: ([(label, results)], (label, the cap that
        cut a trial) or None); no trial starts after a cut."""
        made: list[tuple[str, MatrixResults]] = []
        for label, code, spec in jobs:
            try:
                made.append((label, self.runner.run(code, label, self.folder, spec)))
            except CapReached as exc:
                return made, (label, exc)
        return made, None

    def _keep(self, made: list[MatrixResults]) -> None:
        """The baseline builds just made go into the pool (used by this iteration already)."""
        if self.reuse is None:
            return
        for res in made:
            for task, scores in res.scores_by_task().items():
                self.reuse.pool.add(self.reuse.commit, task, scores)

    def _book(self, stage: str, label: str, res: MatrixResults) -> None:
        """Count a trial's builds in the books and keep its results on disk."""
        self.books.add(res)
        path = self.folder / "rounds" / f"{label}.json"
        replace_file(path, json.dumps(res.model_dump(mode="json"), indent=2) + "\n")
        self.builds[stage] = self.builds.get(stage, 0) + built(res)

    def pooled(self, side: str) -> MatrixResults | None:
        parts = self.parts.get(side)
        return merge_results(parts) if parts else None


def _planned(spec: RoundSpec, known: int) -> int:
    """Builds a trial is asked for (a whole split of unknown size counts as ``known`` or 1
    task: the sides then share alike)."""
    return spec.repeats * (len(spec.tasks) if spec.tasks is not None else max(known, 1))


def _scores(
    made: list[MatrixResults], taken: dict[str, list[float]], splits: dict[str, str]
) -> dict[str, dict[str, list[float]]]:
    """Per split, task id -> scores: those taken from the pool first, then those built."""
    out: dict[str, dict[str, list[float]]] = {"train": {}, "holdout": {}}
    for task, scores in taken.items():
        out[splits[task]].setdefault(task, []).extend(scores)
    for res in made:
        for split in ("train", "holdout"):
            for task, scores in res.scores_by_task(split).items():
                out[split].setdefault(task, []).extend(scores)
    return out
