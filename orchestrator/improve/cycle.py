"""The improve cycle: measure, find the worst weakness, try one patch, keep it only if it lifts.

Each iteration:

1. takes the current baseline (the matrix, K repeats, train and holdout, on the
   last accepted code; the first baseline runs on the repository's HEAD in a
   detached worktree, so uncommitted changes never skew it);
2. picks the worst weakness that has not yet had ``max_attempts`` rejected
   patches (:mod:`orchestrator.improve.weaknesses`);
3. asks the improver model for search/replace edits, showing it the
   meta-lessons tagged ``self`` and the attempts already rejected
   (:mod:`orchestrator.improve.proposals`);
4. tries them in a worktree on a new branch: the project's own tests must pass
   in the sandbox, then the matrix is built with that code in the sandbox and
   scored by this process, never by the candidate (:mod:`orchestrator.improve.trial`);
5. decides with :func:`orchestrator.bench.decision.decide`: a train lift of at least
   the threshold whose paired 95% interval lies above zero, without the
   holdout falling by more than the threshold;
6. on acceptance commits exactly the files the proposal edited (anything else
   changed in the worktree rejects it), writes the meta-lesson and makes the
   candidate's results the new baseline (so the next lift is credited to the
   next patch, not to this one); on rejection removes the branch and writes a
   ``dont`` lesson tagged ``self`` so no later proposal repeats it.

It stops after ``iterations``, on its time budget, after two iterations at or
above a 0.95 score, after three iterations without a usable proposal, or when
a ``STOP`` file appears in its run folder. Every iteration leaves
``runs/improve-<id>/iter-<i>/`` (weakness, proposal, patch, test log, baseline
and candidate results, decision). Only ``--apply`` touches the user's
checkout: a fast-forward to the last accepted commit, when its work tree is
clean.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from memory import Lesson, MemoryStore
from orchestrator.bench.decision import Decision, decide
from orchestrator.bench.results import MatrixResults
from orchestrator.build.runs import new_run_id
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.improve.git import (
    Worktree,
    cycle_lock,
    files_at,
    git,
    repo_root,
    work_tree_clean,
)
from orchestrator.improve.proposals import ProposalError, apply_edits, ask_improver
from orchestrator.improve.records import ImproveConfig, ImproveSummary, IterationRecord
from orchestrator.improve.trial import MatrixRunner, run_tests
from orchestrator.improve.weaknesses import Weakness, find_weaknesses
from orchestrator.llm.client import LLMClient, ModelError

SELF_TAGS = ["cadillac", "self"]
SOURCE = "cadillac improve cycle"


def _write(path: Path, data: BaseModel | dict | str) -> None:
    if isinstance(data, BaseModel):
        data = data.model_dump_json(indent=2)
    elif isinstance(data, dict):
        data = json.dumps(data, indent=2)
    path.write_text(data + ("\n" if not data.endswith("\n") else ""), encoding="utf-8")


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
    ):
        self.home, self.runner, self.improver, self.config = home, runner, improver, config
        self.repo = repo_root(repo)
        self.say = on_event or (lambda text: None)
        self.store = MemoryStore(home.memory_path)
        self.rejected: dict[str, list[str]] = defaultdict(list)
        self.folder_override = folder
        self.summary: ImproveSummary | None = None

    def run(self) -> ImproveSummary:
        lock = cycle_lock(self.repo)
        try:
            return self._run()
        finally:
            lock.release()

    def _run(self) -> ImproveSummary:
        cfg = self.config
        base = git(self.repo, "rev-parse", "HEAD")
        s = ImproveSummary(
            id=new_run_id(),
            repo=str(self.repo),
            base_commit=base,
            tip_commit=base,
            started=time.time(),
        )
        self.summary = s
        self.folder = self.folder_override or self.home.runs_dir / f"improve-{s.id}"
        self.folder.mkdir(parents=True)
        self.improver.log_path = self.folder / "improver.llm.jsonl"
        _write(self.folder / "summary.json", s)
        self.say(f"improve run {s.id}: baseline on {base[:10]}")
        with Worktree(self.repo, None, base) as tree:
            baseline = self.runner.run(tree.path, "baseline", self.folder)
        _write(self.folder / "baseline.json", baseline)
        streak = barren = 0
        for i in range(1, cfg.iterations + 1):
            why = self._should_stop(s)
            if why:
                s.stopped_because = why
                break
            record, baseline = self._iterate(i, s, baseline)
            s.iterations.append(record)
            _write(self.folder / "summary.json", s)
            barren = barren + 1 if record.status == "no_proposal" else 0
            score = baseline.train_score or 0.0
            streak = streak + 1 if score >= cfg.good_enough else 0
            if barren >= 3:
                s.stopped_because = "three iterations in a row without a usable proposal"
                break
            if streak >= 2:
                s.stopped_because = f"train score at or above {cfg.good_enough} for two iterations"
                break
        else:
            s.stopped_because = s.stopped_because or f"{cfg.iterations} iteration(s) done"
        if cfg.apply:
            self._apply(s)
        s.ended = time.time()
        _write(self.folder / "summary.json", s)
        return s

    def _should_stop(self, s: ImproveSummary) -> str:
        if (self.folder / "STOP").exists():
            return "a STOP file appeared in the run folder"
        limit = self.config.max_seconds
        if limit is not None and time.time() - s.started > limit:
            return f"time budget of {limit:g} s spent"
        return ""

    def _pick(self, results: MatrixResults) -> Weakness | None:
        for weakness in find_weaknesses(results, self.home.runs_dir):
            if len(self.rejected[weakness.id]) < self.config.max_attempts:
                return weakness
        return None

    def _iterate(self, i: int, s: ImproveSummary, baseline: MatrixResults):
        folder = self.folder / f"iter-{i}"
        folder.mkdir()
        _write(folder / "baseline.json", baseline)
        record = IterationRecord(
            iteration=i, status="no_proposal", baseline_score=baseline.train_score
        )
        weakness = self._pick(baseline)
        if weakness is None:
            record.reason = "no weakness left to work on"
            _write(folder / "decision.json", record)
            return record, baseline
        record.weakness = weakness.id
        _write(folder / "weakness.json", weakness)
        self.say(
            f"iter {i}: weakness {weakness.id} ({weakness.signature}, cost {weakness.cost:.3f})"
        )
        try:
            proposal, answer = ask_improver(
                self.improver,
                weakness,
                files_at(self.repo, s.tip_commit),
                tuple(self.config.allow),
                self._meta_lessons(weakness),
                self._rejected_for(weakness),
            )
        except (ProposalError, ModelError) as exc:
            record.reason = f"no usable proposal: {exc}"
            self.rejected[weakness.id].append(f"(unusable proposal) {exc}")
            _write(folder / "decision.json", record)
            self.say(f"iter {i}: {record.reason}")
            return record, baseline
        _write(folder / "proposal.json", {"proposal": proposal.model_dump(), "answer": answer})
        branch = f"cadillac/improve-{s.id}-iter{i}"
        with Worktree(self.repo, branch, s.tip_commit) as tree:
            apply_edits(proposal, tree.path)
            edited = sorted({edit.file for edit in proposal.edits})
            _write(folder / "patch.diff", tree.diff(edited))
            tests = run_tests(
                tree.path, self.config.test_command, folder / "tests.log", self.config.executor
            )
            if not tests:
                decision = None
                record.status, record.reason = "rejected", "the project's own tests fail with it"
            else:
                candidate = self.runner.run(tree.path, "candidate", folder)
                _write(folder / "candidate.json", candidate)
                decision = self._decide(baseline, candidate)
                record.candidate_score = candidate.train_score
                record.train_delta, record.holdout_delta = (
                    decision.train_delta,
                    decision.holdout_delta,
                )
                record.interval = [decision.interval.low, decision.interval.high]
                record.status = "accepted" if decision.accepted else "rejected"
                record.reason = decision.reason
            stray = tree.changed_besides(edited)
            if stray:  # the worktree was read-only to the trial: nothing else may change
                record.status = "rejected"
                record.reason = f"the trial changed files outside the proposal: {', '.join(stray)}"
            if record.status == "accepted":
                target = proposal.edits[0].file
                message = (
                    f"improve: {weakness.id} in {target}: train +{decision.train_delta:.3f}"
                    f"\n\n{proposal.reason}\n\n{decision.reason}"
                )
                record.commit = tree.commit(message, edited)
                _write(folder / "patch.diff", tree.show(record.commit))
                record.branch = branch
                s.tip_commit = record.commit
                baseline = candidate
                self._meta_lesson(weakness, target, decision, i, proposal.reason)
            else:
                self._dont_lesson(weakness, proposal.reason, record, i)
        _write(folder / "decision.json", record)
        self.say(f"iter {i}: {record.status}: {record.reason}")
        return record, baseline

    def _decide(self, baseline: MatrixResults, candidate: MatrixResults) -> Decision:
        weights = {**baseline.weights(), **candidate.weights()}
        return decide(
            baseline.scores_by_task("train"),
            candidate.scores_by_task("train"),
            baseline.scores_by_task("holdout"),
            candidate.scores_by_task("holdout"),
            weights,
            self.config.threshold,
        )

    def _meta_lessons(self, weakness: Weakness) -> list[str]:
        query = f"cadillac improve weakness {weakness.signature} {' '.join(weakness.targets)}"
        out = []
        for r in self.store.recall(query, limit=20):
            lesson = r.lesson
            if "self" in lesson.tags:
                verb = "NEVER" if lesson.polarity == "dont" else "worked"
                out.append(f"{verb}: {lesson.trigger} -> {lesson.fix}")
        return out[:10]

    def _rejected_for(self, weakness: Weakness) -> list[str]:
        remembered = [
            f"{x.trigger} -> {x.fix}"
            for x in self.store.all()
            if x.polarity == "dont" and "self" in x.tags and weakness.id in x.trigger
        ]
        return list(dict.fromkeys([*self.rejected[weakness.id], *remembered]))

    def _meta_lesson(self, weakness, target, decision, i, reason) -> None:
        self.store.save(
            Lesson(
                type="architecture",
                trigger=f"weakness {weakness.id} in {target}",
                fix=f"matrix score improved by +{decision.train_delta:.3f} on iter {i}: {reason}",
                confidence=0.6,
                polarity="do",
                tags=SELF_TAGS,
                source_task=SOURCE,
            )
        )

    def _dont_lesson(self, weakness, reason, record: IterationRecord, i) -> None:
        delta = "untested" if record.train_delta is None else f"{record.train_delta:+.3f}"
        change = f"weakness {weakness.id}: {reason}"
        self.rejected[weakness.id].append(f"{reason} (delta {delta}: {record.reason})")
        self.store.save(
            Lesson(
                type="architecture",
                trigger=change[:300],
                fix=f"rejected on iter {i}, train delta {delta}: {record.reason}",
                confidence=0.5,
                polarity="dont",
                tags=SELF_TAGS,
                source_task=SOURCE,
            )
        )

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
