"""The improve cycle: find the worst weakness, try one patch, keep it only if it really lifts.

The cycle first surveys the code it starts from (the matrix, train and holdout, a couple
of repeats) for its first weakness and the night's starting score. Then each iteration:

1. picks the worst weakness of the *train* tasks (the holdout stays held out: none of its
   failures or checks reach the improver) that has not yet had ``max_attempts`` rejected
   patches (:mod:`orchestrator.improve.weaknesses`);
2. asks the improver for search/replace edits, showing it the cycle's own lessons and
   the attempts already rejected (:mod:`orchestrator.improve.proposals`,
   :mod:`orchestrator.improve.lessons`);
3. applies them in a worktree on a new branch; the project's own tests run on the
   baseline's code and then there, in the same sandbox, and a test that fails only with
   the patch rejects it (:mod:`orchestrator.improve.suite`; one that fails on both is the
   environment's);
4. measures the candidate against the baseline: round after round, both sides at once,
   from the same frozen memory and with the same seeds (:mod:`orchestrator.improve.rounds`),
   through the decision's looks — a cheap screen, the full stage, a confirmation, and the
   holdout only for a would-be accept — each of which may drop it
   (:func:`orchestrator.bench.decision.evaluate`, with alpha = the night's alpha over the
   iterations); the candidate's code builds, the cycle's own code scores. While no patch is
   accepted the baseline is the same commit, so its earlier builds (the survey's, every
   round's) serve later rounds and only the shortfall is built
   (:mod:`orchestrator.bench.reuse`), never for the weakness's own tasks, whose builds
   picked it: theirs are built afresh beside the candidate's;
5. on acceptance commits exactly the files the proposal edited (anything else changed in
   the worktree rejects it), writes the lesson and goes on from the new code; on rejection
   removes the branch and remembers it, so no later proposal repeats it;
6. tells the plugins of the decision (their ``improve_decision`` hook).

The weaknesses are read from every baseline build of the tip (the survey's and every
round's; after an accept, the accepted candidate's builds).

It stops after ``iterations``, on its time budget, at its spend or token cap (between
builds, cleanly), after two iterations whose tip scored at or above 0.95 by its own
baseline builds (an accepted candidate's scores were kept for being high, so a new tip
counts once an iteration measured it), after three
iterations without a usable proposal, when a ``STOP`` file appears in its run folder, or
on Ctrl-C or SIGTERM (its trials are killed, its worktrees removed, its records say so).
A cycle that fails (its survey's trial leaves no results, a bug) records ``failed``, the
reason and its end before the error goes on to the command.
Every iteration leaves ``runs/improve-<id>/iter-<i>/`` (weakness, proposal, patch, test
log, every round's results, decision). Only ``--apply`` touches the user's checkout: a
fast-forward to the last accepted commit, when its work tree is clean.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path

from pydantic import BaseModel

from orchestrator.bench.decision import accepted, evaluate, weighted_mean
from orchestrator.bench.results import MatrixResults, merge_results
from orchestrator.bench.reuse import BaselinePool
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.hooks import Hooks
from orchestrator.improve.estimate import Estimate, cannot_finish
from orchestrator.improve.git import Worktree, cycle_lock, files_at, git, repo_root, work_tree_clean
from orchestrator.improve.lessons import SelfLessons, told
from orchestrator.improve.lifetime import CycleBudget
from orchestrator.improve.proposals import ProposalError, apply_edits, ask_improver
from orchestrator.improve.records import ImproveConfig, ImproveSummary, IterationRecord
from orchestrator.improve.rounds import Books, Reuse, Rounds
from orchestrator.improve.suite import SuiteRun, SuiteVerdict, compare
from orchestrator.improve.trial import CapReached, MatrixRunner, run_tests
from orchestrator.improve.weaknesses import Weakness, find_weaknesses
from orchestrator.llm.client import LLMClient, ModelError
from orchestrator.loop.runs import new_run_id
from orchestrator.sandbox.files import replace_file


def _write(path: Path, data: BaseModel | dict | str) -> None:
    if isinstance(data, BaseModel):
        data = data.model_dump_json(indent=2)
    elif isinstance(data, dict):
        data = json.dumps(data, indent=2)
    replace_file(path, data + ("\n" if not data.endswith("\n") else ""))  # read while written


class ImproveCycle:
    def __init__(
        self,
        home: Home,
        repo: Path,
        runner: MatrixRunner,
        improver: LLMClient,
        config: ImproveConfig,
        on_event: Callable[[str], None] | None = None,
        folder: Path | None = None,
        hooks: Hooks | None = None,
    ):
        self.home, self.runner, self.improver, self.config = home, runner, improver, config
        self.hooks = Hooks.load() if hooks is None else hooks
        """The plugins told of each iteration's decision (None: the installed ones)."""
        self.repo = repo_root(repo)
        self.say = on_event or (lambda text: None)
        self.lessons = SelfLessons(home)
        self.rejected: dict[str, list[str]] = defaultdict(list)
        self.folder_override = folder
        self.summary: ImproveSummary | None = None
        self.books = Books(max_cost_usd=config.max_cost_usd, max_tokens=config.max_tokens)
        self.baseline_tests: dict[str, SuiteRun] = {}
        """The project's tests on each commit an iteration started from."""
        self.pool = BaselinePool()
        """The tip's baseline build scores, reused by later iterations while it stays the tip."""
        self.tip_builds: list[MatrixResults] = []
        """Every baseline build of the tip so far (the survey's, every round's)."""
        self.picking: MatrixResults | None = None
        """What the weaknesses are read from: the tip's builds (after an accept, the
        accepted candidate's)."""
        self.tasks: dict[str, str] = {}
        self.weights: dict[str, float] = {}
        """The matrix's tasks (id -> split) and weights, as the survey measured them."""
        self.budget: CycleBudget | None = None
        """Its part of the repository's lifetime error budget (None: the night's bound alone)."""
        self.estimate: Estimate | None = None
        """What the cycle expects to spend (:func:`orchestrator.improve.setup.make_cycle`
        gives it), said first, and again once the survey measured a build."""
        self.built: list[MatrixResults] = []
        """Every round's builds (both sides): what a build costs, measured."""
        self.asked = 0
        """Proposals asked of the improver."""

    def run(self) -> ImproveSummary:
        lock = cycle_lock(self.repo)
        try:
            return self._run()
        finally:
            lock.release()

    def _run(self) -> ImproveSummary:
        self._grant()  # a ledger that cannot be read stops it here, before anything is made
        cfg = self.config
        base = git(self.repo, "rev-parse", "HEAD")
        s = ImproveSummary(
            id=new_run_id(),
            repo=str(self.repo),
            base_commit=base,
            tip_commit=base,
            started=time.time(),
            alpha=cfg.alpha,
            lifetime=self.budget.figure if self.budget is not None else None,
        )
        self.summary = s
        self.folder = self.folder_override or self.home.runs_dir / f"improve-{s.id}"
        self.folder.mkdir(parents=True)
        self.improver.log_path = self.folder / "improver.llm.jsonl"
        self._save(s)
        try:
            self._loop(s)
        except KeyboardInterrupt:
            s.status = s.stopped_because = "interrupted"
            self._save(s, ended=True)
            raise
        except CapReached as exc:
            s.stopped_because = str(exc)
        except Exception as exc:  # the survey's trial left nothing, a bug: said, then raised
            s.status = "failed"
            s.stopped_because = (
                str(exc)
                if isinstance(exc, CadillacError)
                else f"internal error: {type(exc).__name__}: {exc}"
            )
            self._save(s, ended=True)
            raise
        if cfg.apply:
            self._apply(s)
        s.status = "finished"
        self._save(s, ended=True)
        return s

    def _loop(self, s: ImproveSummary) -> None:
        cfg = self.config
        for line in self.estimate.lines() if self.estimate is not None else []:
            self.say(line)
        if self.budget is not None:
            self.say(f"{self.budget.figure.sentence()}; each iteration's alpha now {cfg.alpha:.4g}")
        self.say(f"improve run {s.id}: survey of {s.base_commit[:10]}")
        self.pool.start_iteration(s.base_commit)
        with Worktree(self.repo, None, s.base_commit) as tree:
            survey = Rounds(
                self.runner,
                self.folder,
                tree.path,
                None,
                f"{s.id}:0",
                self.books,
                Reuse(self.pool, s.base_commit),
            )
            try:
                survey("survey", cfg.survey_repeats, True)
            except CapReached as exc:
                s.stopped_because = str(exc)
                return
        reference = survey.pooled("baseline")
        _write(self.folder / "baseline.json", reference)
        self.built += survey.parts["baseline"]
        if self.estimate is not None:  # what a build costs, now measured
            self.estimate.measure(self.built, "the survey")
            self.say(self.estimate.money())
            self.say(self.estimate.timing())
        self.tasks = {t.task_id: t.split for t in reference.tasks}
        self.weights = reference.weights()
        self.tip_builds = list(survey.parts["baseline"])
        self.picking = reference
        streak = barren = 0
        for i in range(1, cfg.iterations + 1):
            why = self._should_stop(s)
            if why:
                s.stopped_because = why
                return
            record = self._iterate(i, s)
            s.iterations.append(record)
            self._save(s)
            self._tell(s, record)
            if record.status == "stopped":
                s.stopped_because = record.reason
                return
            barren = barren + 1 if record.status == "no_proposal" else 0
            # the tip's own baseline builds only: an accepted candidate's scores were kept
            # for being high (the winner's curse), so a new tip counts once re-measured
            tip = record.tip_score
            streak = streak + 1 if tip is not None and tip >= cfg.good_enough else 0
            if barren >= 3:
                s.stopped_because = "three iterations in a row without a usable proposal"
                return
            if streak >= 2:
                s.stopped_because = f"train score at or above {cfg.good_enough} for two iterations"
                return
        s.stopped_because = f"{cfg.iterations} iteration(s) done"

    def _grant(self) -> None:
        """Open this cycle's part of the repository's lifetime budget: each iteration's
        alpha is what it grants, when smaller than the night's share."""
        cfg = self.config
        if cfg.lifetime_alpha is not None:
            self.budget = CycleBudget(self.home, self.repo, cfg.lifetime_alpha)
            grant = self.budget.open(cfg.iterations, cfg.night_share)
            self.config = cfg.model_copy(update={"granted_alpha": grant})

    def _book(self, kind: str, s: ImproveSummary, i: int) -> None:
        """A measured iteration (its alpha, before its first round) or a kept patch."""
        if self.budget is not None:
            s.lifetime = self.budget.book(kind, s.id, i, self.config.alpha)

    def _tell(self, s: ImproveSummary, record: IterationRecord) -> None:
        """The plugins' ``improve_decision``: the record, with the run's id, repo and folder."""
        decision = record.model_dump(mode="json")
        decision.update(
            improve_id=s.id, repo=s.repo, folder=str(self.folder / f"iter-{record.iteration}")
        )
        self.hooks.report(self.hooks.call("improve_decision", decision=decision), None)

    def _save(self, s: ImproveSummary, ended: bool = False) -> None:
        s.builds, s.tokens, s.cost_usd = self.books.builds, self.books.tokens, self.books.cost_usd
        if ended:
            s.ended = time.time()
        _write(self.folder / "summary.json", s)

    def _should_stop(self, s: ImproveSummary) -> str:
        if (self.folder / "STOP").exists():
            return "a STOP file appeared in the run folder"
        limit = self.config.max_seconds
        if limit is not None and time.time() - s.started > limit:
            return f"time budget of {limit:g} s spent"
        try:
            self.books.left()
        except CapReached as exc:
            return str(exc)
        return self._cannot_finish()

    def _cannot_finish(self) -> str:
        """Why the spend caps cannot finish another iteration at its most ("" when they
        can): :func:`orchestrator.improve.estimate.cannot_finish`."""
        cfg, books = self.config, self.books
        asked = max(1, self.asked)
        caps = {
            "cost": (cfg.max_cost_usd, books.cost_usd or 0.0, (books.improver_cost or 0.0) / asked),
            "tokens": (cfg.max_tokens, books.tokens, books.improver_tokens / asked),
        }
        return cannot_finish(cfg.decision, self.tasks, self.built, caps)

    def _pick(self) -> Weakness | None:
        for weakness in find_weaknesses(self.picking, self.home.runs_dir, split="train"):
            if len(self.rejected[weakness.id]) < self.config.max_attempts:
                return weakness
        return None

    def _tip_score(self) -> float | None:
        """The tip's train score from its own baseline builds (None: none yet)."""
        return merge_results(self.tip_builds).train_score if self.tip_builds else None

    def _iterate(self, i: int, s: ImproveSummary) -> IterationRecord:
        folder = self.folder / f"iter-{i}"
        folder.mkdir()
        record = IterationRecord(
            iteration=i,
            status="no_proposal",
            baseline_score=self._tip_score(),
            tip_score=self._tip_score(),
        )
        weakness = self._pick()
        if weakness is None:
            record.reason = "no weakness left to work on"
            _write(folder / "decision.json", record)
            return record
        record.weakness = weakness.id
        _write(folder / "weakness.json", weakness)
        self.say(
            f"iter {i}: weakness {weakness.id} ({weakness.signature}, cost {weakness.cost:.3f})"
        )
        self.asked += 1
        try:
            proposal, answer = ask_improver(
                self.improver,
                weakness,
                files_at(self.repo, s.tip_commit),
                tuple(self.config.allow),
                self.lessons.for_improver(weakness),
                list(
                    dict.fromkeys(
                        [*self.rejected[weakness.id], *self.lessons.rejected_for(weakness)]
                    )
                ),
            )
        except (ProposalError, ModelError) as exc:
            record.reason = f"no usable proposal: {exc}"
            self.rejected[weakness.id].append(f"(unusable proposal) {exc}")
            _write(folder / "decision.json", record)
            self.say(f"iter {i}: {record.reason}")
            return record
        finally:
            self.books.improver(self.improver.totals)
        _write(folder / "proposal.json", {"proposal": proposal.model_dump(), "answer": answer})
        branch = f"cadillac/improve-{s.id}-iter{i}"
        self.pool.start_iteration(s.tip_commit)
        reuse = Reuse(self.pool, s.tip_commit, self.tasks, frozenset(weakness.tasks))
        with (
            Worktree(self.repo, branch, s.tip_commit) as tree,
            Worktree(self.repo, None, s.tip_commit) as base,
        ):
            apply_edits(proposal, tree.path)
            edited = sorted({edit.file for edit in proposal.edits})
            _write(folder / "patch.diff", tree.diff(edited))
            rounds = Rounds(
                self.runner, folder, base.path, tree.path, f"{s.id}:{i}", self.books, reuse
            )
            tests = self._tests(base.path, tree.path, s.tip_commit, folder)
            record.tests = tests.note
            if not tests.ok:
                record.status, record.reason = "rejected", tests.note
            else:
                self._book("test", s, i)  # spent from here on, whatever comes of it
                try:
                    self._decide(record, rounds)
                except CapReached as exc:
                    record.status, record.reason = "stopped", str(exc)
            record.builds, record.reused = rounds.builds, rounds.reused
            stray = tree.changed_besides(edited)
            if stray and record.status == "accepted":  # the worktree was read-only to the trial
                record.status = "rejected"
                record.reason = f"the trial changed files outside the proposal: {', '.join(stray)}"
            self.tip_builds += rounds.parts.get("baseline", [])
            self.built += [res for side in rounds.parts.values() for res in side]
            if self.tip_builds:  # every baseline build of the tip so far: every round's
                self.picking = merge_results(self.tip_builds)
            if record.status == "accepted":
                target = proposal.edits[0].file
                message = (
                    f"improve: {weakness.id} in {target}: train +{record.train_delta:.3f}"
                    f"\n\n{proposal.reason}\n\n{record.reason}"
                )
                record.commit = tree.commit(message, edited)
                _write(folder / "patch.diff", tree.show(record.commit))
                record.branch = branch
                s.tip_commit = record.commit
                # the new tip's weaknesses are what its builds (the candidate's) showed; its
                # score is unknown until its own baseline builds measure it
                self.tip_builds = []
                self.picking = rounds.pooled("candidate") or self.picking
                self.lessons.kept(weakness, target, record.train_delta or 0.0, i, proposal.reason)
                self._book("kept", s, i)
            elif record.status == "rejected":
                delta = "untested" if record.train_delta is None else f"{record.train_delta:+.3f}"
                why = told(record)  # of the holdout, only that it vetoed
                self.rejected[weakness.id].append(f"{proposal.reason} (delta {delta}: {why})")
                self.lessons.rejected(weakness, proposal.reason, delta, why, i)
        record.tip_score = self._tip_score()
        _write(folder / "decision.json", record)
        self.say(f"iter {i}: {record.status}: {record.reason}")
        return record

    def _tests(self, base: Path, tree: Path, commit: str, folder: Path) -> SuiteVerdict:
        """The project's tests on the baseline's code first (once per commit: its log in
        each iteration's ``tests-baseline.log``), then with the patch (``tests.log``), in
        the same sandbox; what fails only with the patch rejects it."""
        run = partial(run_tests, command=self.config.test_command, executor=self.config.executor)
        baseline = self.baseline_tests.get(commit)
        if baseline is None:
            baseline = self.baseline_tests[commit] = run(base, log=folder / "tests-baseline.log")
        else:
            replace_file(folder / "tests-baseline.log", baseline.log)
        verdict = compare(baseline, run(tree, log=folder / "tests.log"))
        if verdict.ok and not baseline.ok:
            self.say(f"{folder.name}: {verdict.note}")
        return verdict

    def _decide(self, record: IterationRecord, rounds: Rounds) -> None:
        stages = evaluate(rounds, self.weights, self.config.decision, self.config.alpha)
        last = stages[-1]
        record.stages = stages
        record.train_delta, record.p = last.train.lift, last.train.p
        record.holdout_delta = last.holdout.lift if last.holdout else None
        record.status = "accepted" if accepted(stages) else "rejected"
        record.reason = last.reason
        record.candidate_score = weighted_mean(rounds.scores.candidate_train, self.weights)
        record.baseline_score = weighted_mean(rounds.scores.baseline_train, self.weights)

    def _apply(self, s: ImproveSummary) -> None:
        if s.tip_commit == s.base_commit:
            s.apply_note = "nothing to apply: no patch was accepted"
            return
        if not work_tree_clean(self.repo):
            s.apply_note = "not applied: the checked-out work tree has uncommitted changes"
            return
        if git(self.repo, "rev-parse", "HEAD") != s.base_commit:
            s.apply_note = "not applied: the checked-out branch moved during the cycle"
            return
        git(self.repo, "merge", "-q", "--ff-only", s.tip_commit)
        s.applied, s.apply_note = True, f"fast-forwarded to {s.tip_commit[:10]}"


def latest_improve_run(home: Home) -> Path:
    """The newest improve run's folder, standalone or inside a nightly run."""
    found = [*home.runs_dir.glob("improve-*"), *home.runs_dir.glob("nightly-*/improve")]
    runs = sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)
    if not runs:
        raise CadillacError(f"no improve runs in {home.runs_dir}")
    return runs[0]
