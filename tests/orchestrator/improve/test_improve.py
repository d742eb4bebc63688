"""The improve cycle, offline: scripted builders and improvers on a throwaway git repository."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from memory import MemoryStore
from orchestrator.bench.decision import DecisionConfig
from orchestrator.bench.results import MatrixResults, TaskRun, TaskStats
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.improve.cycle import ImproveCycle
from orchestrator.improve.git import cycle_lock
from orchestrator.improve.records import ImproveConfig
from orchestrator.improve.trial import RoundSpec, SandboxedMatrix
from orchestrator.llm.backends import register_script
from orchestrator.llm.client import LLMClient, LLMConfig
from tests.fakes.improve_policies import SENTENCE
from tests.orchestrator.conftest import git

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

ROOT = Path(__file__).resolve().parents[3]
SMALL = ROOT / "tests" / "fixtures" / "matrix_small"
LIFT = ROOT / "tests" / "fixtures" / "matrix_lift"  # five train tasks: enough for alpha 0.05
BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"
QUICK_RULE = DecisionConfig(baseline_repeats=2, fresh_ratio=1, full_repeats=2, confirm_repeats=1)
"""The scripted builder is deterministic: more builds would only cost time. Per train task
the baseline 2 (the weakness's 1 per candidate build, afresh), the candidate 1, 2, 3."""


def answer(edits: list[dict], reason: str) -> str:
    return json.dumps({"reason": reason, "edits": edits})


ADD_SENTENCE = {
    "file": "phases/build.md",
    "search": "# Phase: build\n",
    "replace": f"# Phase: build\n\n{SENTENCE}\n",
}


def cycle(home, repo, improver_script, runner=None, matrix=LIFT, **cfg) -> ImproveCycle:
    improver = LLMClient(
        LLMConfig(model=register_script(f"improver-{id(improver_script)}", improver_script))
    )
    runner = runner or SandboxedMatrix(Home(home), matrix, LLMConfig(model=BUILDER), jobs=2)
    cfg.setdefault("decision", QUICK_RULE)
    cfg.setdefault("survey_repeats", 1)
    cfg.setdefault(
        "test_command",
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_smoke.py"],
    )
    return ImproveCycle(Home(home), repo, runner, improver, ImproveConfig(**cfg))


def test_a_patch_that_lifts_the_score_is_committed_and_remembered(home, repo):
    base = git(repo, "rev-parse", "HEAD")
    build_md = (repo / "phases/build.md").read_text()
    summary = cycle(
        home, repo, [answer([ADD_SENTENCE], "say how digits count")], iterations=1
    ).run()

    (it,) = summary.iterations
    assert it.status == "accepted", it.reason
    assert it.train_delta == pytest.approx(0.35)  # wf-a* 0.75 -> 1, wf-b* 0.5 -> 1
    # after the full stage each task has 2 builds a side (the weakness's 2 fresh ones, the
    # others' survey build and one more): of its C(4, 2) = 6 splits only the observed one
    # has the whole lift, so p = 1/6^5, at most 30% of alpha 0.05: settled, no confirmation
    assert it.p == pytest.approx(1 / 6**5) and it.baseline_score == pytest.approx(0.65)
    assert it.candidate_score == 1.0
    assert [st.stage for st in it.stages] == ["screen", "full", "confirm"]
    assert all(st.go_on for st in it.stages) and "settled" in it.stages[1].reason
    # the screen: the candidate once per train task; the baseline's second build of 4 tasks
    # (the survey serves the first) and the weakness's task once, afresh. The full stage: one
    # more candidate build a task and one of the weakness's task. The holdout (3 a side) for
    # the would-be accept: the survey's holdout build serves one
    assert it.builds == {"screen": 5 + 5, "full": 1 + 5, "holdout": 2 + 3}
    assert it.reused == {"screen": 4, "holdout": 1}
    assert git(repo, "rev-parse", "HEAD") == base  # the checkout is untouched without --apply
    assert (repo / "phases/build.md").read_text() == build_md
    assert git(repo, "status", "--porcelain") == ""
    message = git(repo, "log", "-1", "--format=%B", it.branch)
    assert it.weakness in message and "+0.350" in message
    assert SENTENCE in git(repo, "show", f"{it.branch}:phases/build.md")
    assert git(repo, "worktree", "list").count("\n") == 0  # only the main worktree is left

    folder = Path(home) / "runs" / f"improve-{summary.id}" / "iter-1"
    for name in ("weakness.json", "proposal.json", "patch.diff", "tests.log", "decision.json"):
        assert (folder / name).is_file(), name
    for stage in ("screen", "full", "holdout"):
        for side in ("baseline", "candidate"):
            assert (folder / "rounds" / f"{stage}-{side}.json").is_file(), (stage, side)
    assert not (folder / "rounds" / "confirm-candidate.json").exists()
    assert SENTENCE in (folder / "patch.diff").read_text()
    assert json.loads((folder / "decision.json").read_text())["status"] == "accepted"

    (meta,) = MemoryStore(Path(home) / "self_memory.jsonl").all()  # apart from build lessons
    assert not (Path(home) / "memory.jsonl").exists() or not [
        x for x in MemoryStore(Path(home) / "memory.jsonl").all() if "self" in x.tags
    ]
    assert meta.type == "architecture" and meta.polarity == "do" and meta.confidence == 0.6
    assert meta.trigger == f"weakness {it.weakness} in phases/build.md"
    assert meta.fix.startswith("matrix score improved by +0.350 on iter 1: say how digits count")
    assert meta.tags == ["cadillac", "self"] and meta.source_task == "cadillac improve cycle"


def test_apply_fast_forwards_a_clean_checkout(home, repo):
    quick = {"test_command": [sys.executable, "-c", "pass"]}
    summary = cycle(
        home,
        repo,
        [answer([ADD_SENTENCE], "digits")],
        runner=Lift(11),
        iterations=1,
        apply=True,
        **quick,
    ).run()
    assert summary.applied and summary.iterations[0].status == "accepted"
    assert git(repo, "rev-parse", "HEAD") == summary.tip_commit
    assert SENTENCE in (repo / "phases/build.md").read_text()


def test_a_patch_without_lift_is_rejected_and_the_next_proposal_sees_it(home, repo):
    seen: list[str] = []

    def improver(messages, tools):
        seen.append(messages[-1]["content"])
        if len(seen) <= 2:
            edit = {
                "file": "phases/build.md",
                "search": "# Phase: build\n",
                "replace": f"# Phase: build\n\nWrite clear code ({len(seen)}).\n",
            }
            return answer([edit], f"clearer code {len(seen)}")
        edit = {"file": "tests/test_smoke.py", "search": "assert", "replace": "assert True or"}
        return answer([edit], "relax the test")

    summary = cycle(home, repo, improver, iterations=3).run()
    first, second, third = summary.iterations
    assert first.status == second.status == "rejected" and first.train_delta == 0.0
    assert "looks like noise (p = 1.000)" in first.reason
    assert [st.stage for st in first.stages] == ["screen"]
    # dropped at the screen. The survey's builds (one of each task) serve the screen's
    # baseline, but for the weakness's own task, built afresh; one more of each is built
    assert first.weakness == second.weakness
    assert first.reused == {"screen": 4}
    assert first.builds == {"screen": 5 + 5}
    # the same tip: the survey's and iteration 1's builds serve all of iteration 2's but
    # the weakness's task
    assert second.reused == {"screen": 8}
    assert second.builds == {"screen": 1 + 5}
    assert git(repo, "branch", "--list", "cadillac/*") == ""  # its branch is gone
    assert third.status == "no_proposal" and "outside the allow-list" in third.reason
    assert "clearer code 1" in seen[1] and first.weakness in seen[1]
    assert "clearer code 2" in seen[2]
    dont = [x for x in MemoryStore(Path(home) / "self_memory.jsonl").all() if x.polarity == "dont"]
    assert dont and all(first.weakness in x.trigger and "self" in x.tags for x in dont)
    assert not (Path(home) / "runs" / f"improve-{summary.id}" / "iter-3" / "rounds").exists()


def test_a_patch_that_breaks_the_projects_tests_is_rejected_even_if_it_would_lift(home, repo):
    breaker = {"file": "phases/system.md", "search": "You are the builder", "replace": "You build"}
    summary = cycle(
        home, repo, [answer([ADD_SENTENCE, breaker], "digits, shorter")], iterations=1
    ).run()
    (it,) = summary.iterations
    assert it.status == "rejected" and "tests fail" in it.reason
    folder = Path(home) / "runs" / f"improve-{summary.id}" / "iter-1"
    assert "1 failed" in (folder / "tests.log").read_text()
    assert not (folder / "rounds").exists() and it.builds == {}


class CoinFlips:
    """A matrix whose every build passes by a coin flip (fair by default), whatever the code."""

    def __init__(self, seed: int, tasks=("t1", "t2", "t3", "t4"), p=0.5, holdout=0.5):
        self.rng, self.tasks, self.p, self.holdout = random.Random(seed), tasks, p, holdout
        self.runs = 0

    def run(self, code: Path, label: str, folder: Path, round: RoundSpec) -> MatrixResults:
        self.runs += 1
        runs, stats = [], []
        chosen = [
            t
            for t in [*self.tasks, "h1"]
            if round.split in ("all", split_of(t)) and (round.tasks is None or t in round.tasks)
        ]
        for task in chosen:
            p = self.holdout if task == "h1" else self.p
            scores = [float(self.rng.random() < p) for _ in range(round.repeats)]
            for r, s in enumerate(scores):
                runs.append(
                    TaskRun(
                        task_id=task,
                        repeat=r,
                        score=s,
                        failed_phase=None if s else "build",
                        phase_outcome=None if s else "budget_exhausted",
                        reached_validate=bool(s),
                    )
                )
            stats.append(
                TaskStats(
                    task_id=task,
                    split=split_of(task),
                    weight=1.0,
                    scores=scores,
                    mean=sum(scores) / len(scores),
                    spread=max(scores) - min(scores),
                    cost_usd=None,
                    seconds=0,
                )
            )
        train = [t.mean for t in stats if t.split == "train"]
        hold = [t.mean for t in stats if t.split == "holdout"]
        return MatrixResults(
            id=f"coin-{self.runs}",
            matrix="coin",
            model="coin",
            repeats=round.repeats,
            split=round.split,
            started=0,
            runs=runs,
            tasks=stats,
            train_score=sum(train) / len(train) if train else None,
            holdout_score=sum(hold) / len(hold) if hold else None,
        )


def split_of(task: str) -> str:
    return "holdout" if task.startswith("h") else "train"


TEN = tuple(f"t{i}" for i in range(10))


def test_noise_is_not_credited(home, repo):
    counter = iter(range(1000))

    def no_effect(messages, tools):
        n = next(counter)
        edit = {
            "file": "phases/build.md",
            "search": "# Phase: build\n",
            "replace": f"# Phase: build\n<!-- note {n} -->\n",
        }
        return answer([edit], f"no-op {n}")

    flips = CoinFlips(seed=7, tasks=TEN)  # ten tasks: small enough p-values are possible
    summary = cycle(
        home,
        repo,
        no_effect,
        runner=flips,
        iterations=20,
        max_attempts=100,
        decision=DecisionConfig(),
        test_command=[sys.executable, "-c", "pass"],
    ).run()
    statuses = [it.status for it in summary.iterations]
    assert len(statuses) == 20 and statuses.count("no_proposal") == 0
    assert statuses.count("accepted") == 0 and summary.alpha == pytest.approx(0.05 / 20)
    # The earlier system compared each iteration's single score with the previous one's:
    # on the same coin flips it would have credited several of these no-op patches.
    scores = [it.candidate_score for it in summary.iterations if it.candidate_score is not None]
    naive = sum(1 for a, b in zip(scores, scores[1:], strict=False) if b - a >= 0.05)
    assert naive >= 2


def test_one_cycle_per_repository_and_a_clear_error_outside_git(home, repo, tmp_path):
    lock = cycle_lock(repo)
    try:
        with pytest.raises(CadillacError, match="another improve cycle is running"):
            cycle(home, repo, ["{}"], iterations=1).run()
    finally:
        lock.release()
    (tmp_path / "plain").mkdir()
    with pytest.raises(CadillacError, match="is not a git checkout"):
        cycle(home, tmp_path / "plain", ["{}"], iterations=1)


def test_the_cycle_stops_on_its_own_conditions(home, repo):
    quick = {"test_command": [sys.executable, "-c", "pass"], "max_attempts": 100}

    garbage = cycle(
        home, repo, ["I would rather not."] * 9, runner=CoinFlips(1), iterations=9, **quick
    ).run()
    assert len(garbage.iterations) == 3
    assert garbage.stopped_because == "three iterations in a row without a usable proposal"

    def note(messages, tools):
        edit = {
            "file": "phases/build.md",
            "search": "# Phase: build\n",
            "replace": "# Phase: build\n<!-- n -->\n",
        }
        return answer([edit], "no-op")

    perfect = cycle(
        home, repo, note, runner=CoinFlips(2, p=1.0, holdout=1.0), iterations=9, **quick
    ).run()
    assert len(perfect.iterations) == 2 and "0.95 for two iterations" in perfect.stopped_because

    def stop_after_first(messages, tools):
        for folder in (Path(home) / "runs").glob("improve-*"):
            (folder / "STOP").touch()
        return note(messages, tools)

    stopped = cycle(home, repo, stop_after_first, runner=CoinFlips(3), iterations=9, **quick).run()
    assert len(stopped.iterations) == 1 and "STOP" in stopped.stopped_because
    timed = cycle(
        home, repo, note, runner=CoinFlips(4), iterations=9, max_seconds=0.001, **quick
    ).run()
    assert timed.iterations == [] and "time budget" in timed.stopped_because


def test_status_and_runs_show_read_the_records(home, repo, capsys):
    from orchestrator.cli import main

    quick = {"test_command": [sys.executable, "-c", "pass"], "max_attempts": 100}
    summary = cycle(home, repo, ["not json"], runner=CoinFlips(5), iterations=1, **quick).run()
    assert main(["improve", "--status"]) == 0
    out = capsys.readouterr().out
    assert f"improve {summary.id}" in out and "no_proposal" in out
    assert main(["runs", "show", f"improve-{summary.id}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == summary.id


class Lift(CoinFlips):
    """Every baseline build fails and every candidate build passes (on ten tasks)."""

    def __init__(self, seed: int):
        super().__init__(seed, tasks=TEN)

    def run(self, code: Path, label: str, folder: Path, round: RoundSpec) -> MatrixResults:
        self.p = 1.0 if label.endswith("candidate") else 0.0
        return super().run(code, label, folder, round)


class Interrupted(CoinFlips):
    def run(self, code: Path, label: str, folder: Path, round: RoundSpec) -> MatrixResults:
        if label.endswith("candidate"):
            raise KeyboardInterrupt
        return super().run(code, label, folder, round)


ONE_NOTE = [answer([{"file": "phases/build.md", "search": "# Phase: build\n",
                     "replace": "# Phase: build\n<!-- n -->\n"}], "a note")]  # fmt: skip


def test_apply_leaves_a_dirty_checkout_alone(home, repo):
    quick = {"test_command": [sys.executable, "-c", "pass"]}
    (repo / "phases/plan.md").write_text("my own unfinished edit\n")
    summary = cycle(home, repo, ONE_NOTE, runner=Lift(6), iterations=1, apply=True, **quick).run()
    assert summary.iterations[0].status == "accepted"
    assert not summary.applied and "uncommitted changes" in summary.apply_note
    assert (repo / "phases/plan.md").read_text() == "my own unfinished edit\n"
    assert git(repo, "rev-parse", "HEAD") == summary.base_commit


def test_ctrl_c_during_a_trial_cleans_up_and_releases_the_lock(home, repo):
    quick = {"test_command": [sys.executable, "-c", "pass"]}
    with pytest.raises(KeyboardInterrupt):
        cycle(home, repo, ONE_NOTE, runner=Interrupted(7), iterations=1, **quick).run()
    assert git(repo, "worktree", "list").count("\n") == 0
    assert git(repo, "branch", "--list", "cadillac/*") == ""
    assert git(repo, "status", "--porcelain") == ""
    cycle_lock(repo).release()  # free again


def test_repeated_tool_errors_are_a_weakness(home):
    from orchestrator.improve.weaknesses import find_weaknesses

    runs_dir = Path(home) / "runs"
    RUN_ID = "20261203-120000-abcdef"  # the shape of a real run id: no other name is read
    (runs_dir / RUN_ID).mkdir(parents=True)
    error = {"kind": "tool", "phase": "build", "data": {"tool": "edit_file", "ok": False,
             "error": "The search text occurs 2 times in app.py; include more lines"}}  # fmt: skip
    (runs_dir / RUN_ID / "events.jsonl").write_text("\n".join([json.dumps(error)] * 3) + "\n")
    results = CoinFlips(0, tasks=("t1",)).run(Path("."), "x", Path("."), RoundSpec())
    results.runs[0].run_id = RUN_ID
    results.runs[0].score = 0.0
    kinds = {w.kind: w for w in find_weaknesses(results, runs_dir)}
    assert kinds["tool"].signature.startswith("tool:edit_file:The search text occurs 2 times")
    assert "orchestrator/tools/box.py" in kinds["tool"].targets
