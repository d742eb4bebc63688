"""What an improve cycle's rounds build and read, through the real cycle on matrices in this
process whose scores depend on the code they are given:

* the baseline side builds only what earlier builds of the same tip cannot serve (the
  pool of :mod:`orchestrator.bench.reuse`), and nothing after an accept; the weakness's
  own tasks are always built afresh;
* weaknesses are read from every round's builds, not the first round's folder alone;
* the "good enough" stop never counts an accepted candidate's own (selected) scores.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orchestrator.bench.decision import DecisionConfig
from orchestrator.bench.results import MatrixResults, TaskRun, TaskStats
from orchestrator.bench.reuse import BaselinePool
from orchestrator.home import Home
from orchestrator.improve.cycle import ImproveCycle
from orchestrator.improve.records import ImproveConfig
from orchestrator.improve.rounds import Books, Reuse, Rounds
from orchestrator.improve.trial import RoundSpec
from orchestrator.llm.backends import register_script
from orchestrator.llm.client import LLMClient, LLMConfig

QUICK = [sys.executable, "-c", "pass"]
TRAIN = tuple(f"t{i}" for i in range(10))
RULE = DecisionConfig(baseline_repeats=2, full_repeats=2, confirm_repeats=1, holdout_repeats=1)
"""A small rule: builds score alike within a task here, more repeats would only cost time."""
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
    propose, _ = improver()  # notes only: nothing lifts, and the screen drops each
    summary, folder = run_cycle(home, repo, runner, propose, iterations=3)
    first, second, third = summary.iterations
    assert [it.status for it in summary.iterations] == ["rejected"] * 3
    assert [st.stage for st in first.stages] == ["screen"]
    # survey: 1 build of each of the 11 tasks. The screen reads 2 baseline builds per train
    # task: it takes the survey's and builds one more of each
    assert first.reused == {"screen": 10} and first.builds == {"screen": 10 + 10}
    # iterations 2 and 3: the survey's and iteration 1's builds of the same tip serve it all
    assert second.reused == third.reused == {"screen": 20}
    assert second.builds == third.builds == {"screen": 10}  # the candidate's alone
    baseline = [
        (where, label, tasks, n) for where, label, tasks, n in runner.asked if "baseline" in label
    ]
    assert baseline == [
        (folder.name, "survey-baseline", None, 1),
        ("iter-1", "screen-baseline", None, 1),
    ]
    # the records of the rounds hold the builds made, and the books count only those
    assert summary.builds == 11 + sum(sum(it.builds.values()) for it in summary.iterations)
    made = sum(len(json.loads(p.read_text())["runs"]) for p in folder.glob("iter-*/rounds/*.json"))
    assert made == summary.builds - 11
    assert first.baseline_score == second.baseline_score == 0.45  # t0 0, the rest 0.5

    runner = ByCode()
    propose, _ = improver(MARK)  # the first patch lifts t1..t9 from 0.5 to 1.0
    summary, folder = run_cycle(home, repo, runner, propose, iterations=3)
    accepted, after, again = summary.iterations
    assert accepted.status == "accepted" and accepted.reused == {"screen": 10, "holdout": 1}
    assert after.status == "rejected" and after.reused == {}  # a new tip: nothing to reuse
    assert after.builds == {"screen": 2 * 10 + 10}
    assert after.baseline_score == 0.9  # the new tip, measured afresh
    assert again.reused == {"screen": 20}  # the new tip's own builds, reused


def test_a_round_builds_each_shortfall_in_a_trial_of_its_own(home, repo, tmp_path):
    """Tasks the pool holds more of than others: one trial per shortfall, each with its
    tasks; what they built goes into the pool, used by this iteration already."""
    runner = ByCode()
    pool = BaselinePool()
    pool.add("c", "t0", [0.0])
    for task in TRAIN[1:5]:
        pool.add("c", task, [0.5, 0.5])
    pool.start_iteration("c")
    splits = {**dict.fromkeys(TRAIN, "train"), "h1": "holdout"}
    rounds = Rounds(
        runner, tmp_path / "iter-1", repo, repo, "k:1", Books(), Reuse(pool, "c", splits)
    )
    measured = rounds("screen", 1, False, baseline=3)
    assert (
        sorted((label, tasks, n) for _, label, tasks, n in runner.asked)
        == [
            ("screen-baseline", list(TRAIN[5:]), 3),  # none in the pool
            ("screen-baseline-2", ["t0"], 2),
            ("screen-baseline-3", list(TRAIN[1:5]), 1),
            ("screen-candidate", None, 1),  # the whole train split
        ]
    )
    assert measured.baseline_train == {t: [0.0] * 3 if t == "t0" else [0.5] * 3 for t in TRAIN}
    assert rounds.reused == {"screen": 1 + 4 * 2}
    assert rounds.builds == {"screen": 5 * 3 + 2 + 4 + 10}
    assert all(pool.available(t) == 0 for t in TRAIN)
    for label in ("screen-baseline", "screen-baseline-2", "screen-baseline-3"):
        assert (tmp_path / "iter-1" / "rounds" / f"{label}.json").is_file(), label
    pool.start_iteration("c")  # the next iteration finds 3 of each
    assert {pool.available(t) for t in TRAIN} == {3}


def test_weaknesses_are_read_from_every_rounds_builds(home, repo):
    """A tool error only the screen's baseline builds repeat, not the survey's, is
    iteration 2's weakness (merged rounds kept the first round's folder alone, the
    survey's here, and never saw it)."""
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
