"""What an improve cycle's rounds build and read, through the real cycle on matrices in this
process whose scores depend on the code they are given:

* the baseline side builds only what earlier builds of the same tip cannot serve (the
  pool of :mod:`orchestrator.bench.reuse`), and nothing after an accept; the weakness's
  own tasks are always built afresh, as many as the decision's ``fresh`` asks;
* weaknesses are read from every round's builds, not the first round's folder alone;
* the "good enough" stop never counts an accepted candidate's own (selected) scores.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orchestrator.bench.decision import DecisionConfig
from orchestrator.bench.results import MatrixResults, TaskRun, TaskStats
from orchestrator.home import Home
from orchestrator.improve.cycle import ImproveCycle
from orchestrator.improve.records import ImproveConfig
from orchestrator.improve.trial import RoundSpec
from orchestrator.llm.backends import register_script
from orchestrator.llm.client import LLMClient, LLMConfig

QUICK = [sys.executable, "-c", "pass"]
TRAIN = tuple(f"t{i}" for i in range(10))
MARK = "<!-- lifts -->"
"""What an accepted patch adds to phases/build.md: the code's builds score higher with it."""


def note(n: int, mark: str = "") -> dict:
    return {
        "file": "phases/build.md",
        "search": "# Phase: build\n",
        "replace": f"# Phase: build\n{mark}<!-- note {n} -->\n",
    }


def improver(*marks: str):
    """Proposes a note each time, the n-th with ``marks[n]`` (none past the list)."""
    asked: list[str] = []

    def propose(messages, tools):
        asked.append(messages[-1]["content"])
        n = len(asked) - 1
        mark = marks[n] if n < len(marks) else ""
        return json.dumps({"reason": f"note {n}", "edits": [note(n, mark)]})

    return propose, asked


class ByCode:
    """A matrix whose builds score by the code: ``t0`` always fails (0.0), the other train
    tasks score ``low`` without MARK in phases/build.md and ``high`` with it, the holdout
    tasks ``0.5`` without MARK and ``dropped`` with it. Every request is kept:
    (iteration folder, label, tasks, repeats)."""

    def __init__(
        self,
        low: float = 0.5,
        high: float = 1.0,
        events: dict | None = None,
        holdout: tuple[str, ...] = ("h1",),
        dropped: float = 0.5,
        cost: float | None = None,
    ):
        self.low, self.high, self.holdout, self.dropped = low, high, holdout, dropped
        self.cost = cost
        """What each build costs (USD), as a priced model's builds record it."""
        self.asked: list[tuple[str, str, list[str] | None, int]] = []
        self.events = events or {}
        """label -> (task, tool error) repeated in that round's build of the task."""

    def score(self, task: str, split: str, marked: bool) -> float:
        if split == "holdout":
            return self.dropped if marked else 0.5
        if task == "t0":
            return 0.0
        return self.high if marked else self.low

    def run(self, code: Path, label: str, folder: Path, round: RoundSpec) -> MatrixResults:
        self.asked.append((folder.name, label, round.tasks, round.repeats))
        marked = MARK in (code / "phases" / "build.md").read_text()
        runs_dir = folder / f"{label}-trial" / "home" / "runs"
        runs, stats = [], []
        for task in [*TRAIN, *self.holdout]:
            split = "holdout" if task in self.holdout else "train"
            if round.split not in ("all", split) or task not in (round.tasks or [task]):
                continue
            score = self.score(task, split, marked)
            for r in range(round.repeats):
                run_id = f"20270101-000000-{len(self.asked):03x}{len(runs):03x}"
                (runs_dir / run_id).mkdir(parents=True)
                said = self.events.get(label)
                if said and said[0] == task:
                    error = {"tool": "edit_file", "ok": False, "error": said[1]}
                    line = json.dumps({"kind": "tool", "phase": "build", "data": error})
                    (runs_dir / run_id / "events.jsonl").write_text((line + "\n") * 3)
                runs.append(
                    TaskRun(
                        task_id=task,
                        repeat=r,
                        run_id=run_id,
                        status="passed",
                        reached_validate=True,
                        score=score,
                        verdict="scored",
                        failure="" if score == 1.0 else f"test_{task}: assert False",
                        cost_usd=self.cost,
                        tokens=1000,
                        seconds=30.0,
                    )
                )
            stats.append(
                TaskStats(
                    task_id=task, split=split, weight=1.0, scores=[score] * round.repeats,
                    mean=score, spread=0.0, cost_usd=None, seconds=0,
                )
            )  # fmt: skip
        return MatrixResults(
            id=label, matrix="by-code", model="by-code", repeats=round.repeats,
            split=round.split, started=0, runs=runs, tasks=stats, runs_dir=str(runs_dir),
            cost_usd=None if self.cost is None else self.cost * len(runs),
            tokens=1000 * len(runs),
        )  # fmt: skip


RULE = DecisionConfig(baseline_repeats=2, fresh_ratio=1, full_repeats=2, confirm_repeats=1)
"""Builds per train task: the baseline 2 (the weakness's: 1 per candidate build, afresh),
the candidate 1 at the screen, 2 after the full stage, 3 after the confirmation."""


def run_cycle(home, repo, runner, script, **cfg) -> tuple:
    client = LLMClient(LLMConfig(model=register_script(f"rounds-{id(script)}", script)))
    cfg.setdefault("decision", RULE)
    cfg.setdefault("survey_repeats", 1)
    cfg.setdefault("max_attempts", 100)
    cfg.setdefault("lifetime_alpha", 0.1)  # as improve and nightly keep it
    config = ImproveConfig(test_command=QUICK, **cfg)
    summary = ImproveCycle(Home(home), repo, runner, client, config).run()
    return summary, Path(home) / "runs" / f"improve-{summary.id}"


def test_an_unchanged_tip_reuses_its_baseline_builds_and_an_accept_starts_afresh(home, repo):
    runner = ByCode()
    propose, _ = improver()  # notes only: nothing lifts
    summary, folder = run_cycle(home, repo, runner, propose, iterations=3)
    first, second, third = summary.iterations
    assert [it.status for it in summary.iterations] == ["rejected"] * 3
    assert [st.stage for st in first.stages] == ["screen"]  # no lift: dropped at the screen
    assert first.weakness == second.weakness and "t0" in first.weakness
    # survey: 1 repeat of all 11 tasks. Iteration 1's screen wants 2 baseline builds of
    # t1..t9, takes the survey's and builds 1 more, and builds t0 (the weakness's task: its
    # builds picked it, so never reused) once, beside the candidate's 10
    assert first.reused == {"screen": 9}
    assert first.builds == {"screen": 10 + 10}
    # iteration 2: the survey's and iteration 1's builds of the same tip serve all but t0
    assert second.reused == {"screen": 18}
    assert second.builds == {"screen": 1 + 10}
    assert third.reused == second.reused and third.builds == second.builds
    baseline = [
        (where, label, tasks, n) for where, label, tasks, n in runner.asked if "baseline" in label
    ]
    assert baseline == [
        (folder.name, "survey-baseline", None, 1),
        ("iter-1", "screen-baseline", None, 1),  # every train task: 1 more each
        ("iter-2", "screen-baseline", ["t0"], 1),
        ("iter-3", "screen-baseline", ["t0"], 1),
    ]
    # the records of the rounds hold the builds made, the books count only those
    assert summary.builds == 11 + sum(sum(it.builds.values()) for it in summary.iterations)
    made = sum(len(json.loads(p.read_text())["runs"]) for p in folder.glob("iter-*/rounds/*.json"))
    assert made == summary.builds - 11
    assert first.baseline_score == second.baseline_score == 0.45  # t0 0, the rest 0.5

    runner = ByCode()
    propose, _ = improver(MARK)  # the first patch lifts t1..t9 from 0.5 to 1.0
    summary, folder = run_cycle(home, repo, runner, propose, iterations=3)
    accepted, after, again = summary.iterations
    assert accepted.status == "accepted", accepted.reason
    # settled at the full stage (p 1/8193 <= 30% of 0.05/3); the holdout (3 a side) takes
    # h1's survey build and builds 2
    assert [st.stage for st in accepted.stages] == ["screen", "full", "confirm"]
    assert accepted.reused == {"screen": 9, "holdout": 1}
    assert accepted.builds == {"screen": 10 + 10, "full": 1 + 10, "holdout": 2 + 3}
    assert after.status == "rejected" and after.reused == {}  # a new tip: nothing to reuse
    assert after.builds == {"screen": 18 + 1 + 10}
    assert after.baseline_score == 0.9  # the new tip, measured afresh
    assert again.reused == {"screen": 18}  # the new tip's own builds, reused


def test_a_round_builds_each_shortfall_in_a_trial_of_its_own(home, repo):
    runner = ByCode()
    propose, _ = improver()
    rule = RULE.model_copy(update={"baseline_repeats": 4, "fresh_ratio": 3})
    summary, folder = run_cycle(
        home, repo, runner, propose, iterations=1, survey_repeats=2, decision=rule
    )
    (it,) = summary.iterations
    screen = sorted((label, tasks, n) for _, label, tasks, n in runner.asked if "screen-" in label)
    # t0 (the weakness's) 3 afresh; t1..t9 2 each beyond the survey's 2
    assert screen == [
        ("screen-baseline", ["t0"], 3),
        ("screen-baseline-2", list(TRAIN[1:]), 2),
        ("screen-candidate", None, 1),
    ]  # the candidate's in parallel with them
    assert it.reused == {"screen": 18}
    assert it.builds == {"screen": 3 + 18 + 10}
    for label in ("screen-baseline", "screen-baseline-2", "screen-candidate"):
        assert (folder / "iter-1" / "rounds" / f"{label}.json").is_file(), label


def test_weaknesses_are_read_from_every_rounds_builds(home, repo):
    """A tool error only the screen round's baseline builds repeat is iteration 2's weakness
    (the merged rounds once kept the first round's folder, the survey's, alone, and never
    saw it)."""
    error = "The search text occurs 2 times in app.py; include more lines"
    runner = ByCode(events={"screen-baseline": ("t0", error)}, low=1.0)
    propose, asked = improver()
    summary, folder = run_cycle(home, repo, runner, propose, iterations=2, max_attempts=1)
    first, second = summary.iterations
    assert "t0" in first.weakness and first.status == "rejected"
    weakness = json.loads((folder / "iter-2" / "weakness.json").read_text())
    assert weakness["kind"] == "tool" and weakness["signature"].startswith(
        "tool:edit_file:The search text occurs 2 times"
    )
    assert "The search text occurs 2 times" in asked[1]


def test_good_enough_counts_the_tips_own_builds_not_the_accepted_candidates(home, repo):
    """An accepted candidate's scores were kept for being high (the winner's curse): they
    do not count toward two iterations at or above the "good enough" score; the new tip's
    own builds do, once an iteration measured them."""
    propose, _ = improver(MARK)
    summary, _ = run_cycle(home, repo, ByCode(), propose, iterations=4, good_enough=0.85)
    first, *rest = summary.iterations
    assert first.status == "accepted" and first.candidate_score == 0.9
    assert first.tip_score is None  # unknown until the new tip is measured
    assert [it.baseline_score for it in rest] == [it.tip_score for it in rest] == [0.9, 0.9]
    # counted: iterations 2 and 3 (the new tip's builds), not 1 (the candidate's)
    assert len(summary.iterations) == 3
    assert "0.85 for two iterations" in summary.stopped_because
