"""An improve cycle's dollar cap with a priced model, its seeds, its holdout, and Ctrl-C.

* ``improve --max-cost`` against the local OpenAI-compatible server (litellm talks to it
  over HTTP and prices ``openai/gpt-4o-mini`` from its own cost map): the cap stops the
  cycle, its record says so, and no build starts after it;
* the baseline's and the candidate's builds of one (task, repeat) in a round get the same
  seed, and other repeats other seeds (as each build's ``task.json`` records it);
* a failure seen only on a holdout task never becomes the cycle's weakness, and nothing of
  it (task, check, evidence) reaches the improver;
* Ctrl-C of ``cadillac improve`` mid-build ends it within seconds, with every build of its
  trials marked ``interrupted`` and no process, worktree or branch left.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from orchestrator.bench.results import MatrixResults, TaskRun, TaskStats
from orchestrator.home import Home
from orchestrator.improve.cycle import ImproveCycle
from orchestrator.improve.records import ImproveConfig
from orchestrator.improve.rounds import Books, Rounds
from orchestrator.improve.trial import RoundSpec, SandboxedMatrix
from orchestrator.llm.backends import register_script
from orchestrator.llm.client import LLMClient, LLMConfig
from tests.fakes.openai_server import FakeOpenAI
from tests.orchestrator.bench.test_matrix_signals import (
    STOP_WITHIN_S,
    nothing_left,
    signal_once_building,
    start_group,
)
from tests.orchestrator.cli.test_stopping import IMPROVER, LIFT, SLEEPER, marked_matrix, marker
from tests.orchestrator.conftest import git

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

ROOT = Path(__file__).resolve().parents[3]
SMALL = ROOT / "tests" / "fixtures" / "matrix_small"
BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"
TALKER = "scripted:tests.fakes.policies:last_user_words"
"""Answers in words, never with a tool: its builds end quickly in the plan phase."""
QUICK = [sys.executable, "-c", "pass"]


def trial_builds(folder: Path) -> list[Path]:
    """The run folders of every build the trials under ``folder`` began."""
    return sorted(p.parent for p in folder.glob("**/*-trial/home/runs/*/task.json"))


def test_a_dollar_cap_stops_the_cycle_with_a_priced_model(home, repo, monkeypatch, capsys):
    from orchestrator.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    with FakeOpenAI(lambda body: {"content": "I will think about it."}) as server:
        args = ["improve", "--repo", str(repo), "--matrix", str(LIFT), "--jobs", "1"]
        args += ["--model", "openai/gpt-4o-mini", "--api-base", server.api_base]
        args += ["--improver-model", IMPROVER, "--iterations", "1", "--max-cost", "0.000001"]
        assert main(args) == 0
        asked = len(server.requests)
    err = capsys.readouterr().err
    assert "price of openai/gpt-4o-mini" not in err  # the builder is priced: no warning
    (folder,) = (home / "runs").glob("improve-*")
    summary = json.loads((folder / "summary.json").read_text())
    assert "spend cap of 1e-06 USD was reached" in summary["stopped_because"], summary
    assert summary["ended"] and summary["iterations"] == []
    assert summary["cost_usd"] > 0.000001  # real prices, from litellm's cost map
    assert summary["builds"] == 1  # the first build spent the cap: no other one began
    (build,) = trial_builds(folder)
    spent = json.loads((build / "summary.json").read_text())
    assert spent["cost_usd"] > 0 and spent["model"] == "openai/gpt-4o-mini"
    assert asked == spent["llm_calls"] >= 1  # every request came from that one build
    assert (
        not (folder / "improver.llm.jsonl").exists()
        or "request" not in (folder / "improver.llm.jsonl").read_text()
    )  # and the improver was never asked


def test_baseline_and_candidate_builds_of_a_task_and_repeat_share_a_seed(home, repo, tmp_path):
    runner = SandboxedMatrix(Home(home), SMALL, LLMConfig(model=TALKER), jobs=2)
    folder = tmp_path / "iter-1"
    rounds = Rounds(runner, folder, repo, repo, "cycle-x:1", Books())
    rounds("screen", 2, False)
    seeds: dict[tuple[str, str, int], int] = {}
    for side in ("baseline", "candidate"):
        results = json.loads((folder / "rounds" / f"screen-{side}.json").read_text())
        home_runs = folder / f"screen-{side}-trial" / "home" / "runs"
        for run in results["runs"]:
            task = json.loads((home_runs / run["run_id"] / "task.json").read_text())
            seeds[side, run["task_id"], run["repeat"]] = task["config"]["seed"]
    keys = {(t, r) for _, t, r in seeds}
    assert keys == {("wf-a", 0), ("wf-a", 1), ("wf-b", 0), ("wf-b", 1)}
    for task, repeat in keys:
        assert seeds["baseline", task, repeat] == seeds["candidate", task, repeat] is not None
    baseline = [seeds["baseline", t, r] for t, r in sorted(keys)]
    assert len(set(baseline)) == len(baseline)  # each task and repeat draws its own


SECRETS = ("ho-secret", "numbers_inside_text_are_skipped", "2024", "SECRET-TOOL-ERROR")
"""What only the holdout task's builds show: its name, its check, its evidence."""


class HoldoutFails:
    """A matrix whose train task ``tr-digits`` fails one hidden check and ``tr-clean`` none,
    while the heavier holdout task ``ho-secret`` fails a check of its own and repeats a tool
    error in its events: were the holdout not held out, its failure would be the worst."""

    def __init__(self, runs_dir: Path):
        self.runs_dir = runs_dir

    def run(self, code: Path, label: str, folder: Path, round: RoundSpec) -> MatrixResults:
        failures = {
            "tr-digits": (0.75, "test_digits_are_not_words: assert {'66': 1} == {}"),
            "tr-clean": (1.0, ""),
            "ho-secret": (0.5, "test_numbers_inside_text_are_skipped: assert '2024' not in {}"),
        }
        splits = {"tr-digits": "train", "tr-clean": "train", "ho-secret": "holdout"}
        weights = {"tr-digits": 1.0, "tr-clean": 1.0, "ho-secret": 3.0}
        runs, stats = [], []
        for task, (score, failure) in failures.items():
            if round.split not in ("all", splits[task]) or task not in (round.tasks or splits):
                continue
            run_id = f"{label}-{task}"
            events = self.runs_dir / run_id / "events.jsonl"
            events.parent.mkdir(parents=True, exist_ok=True)
            tool = {"tool": "edit_file", "ok": False, "error": f"{task} SECRET-TOOL-ERROR"}
            line = json.dumps({"kind": "tool", "phase": "build", "data": tool})
            events.write_text("\n".join([line] * (3 if task == "ho-secret" else 0)) + "\n")
            for r in range(round.repeats):
                runs.append(
                    TaskRun(
                        task_id=task,
                        repeat=r,
                        run_id=run_id,
                        status="passed",
                        reached_validate=True,
                        score=score,
                        verdict="scored",
                        failure=failure,
                    )
                )
            scores = [score] * round.repeats
            stats.append(
                TaskStats(
                    task_id=task,
                    split=splits[task],
                    weight=weights[task],
                    scores=scores,
                    mean=score,
                    spread=0.0,
                    cost_usd=None,
                    seconds=0,
                )
            )
        train = [t.mean for t in stats if t.split == "train"]
        hold = [t.mean for t in stats if t.split == "holdout"]
        return MatrixResults(
            id=f"held-{label}",
            matrix="held",
            model="held",
            repeats=round.repeats,
            split=round.split,
            started=0,
            runs=runs,
            tasks=stats,
            train_score=sum(train) / len(train),
            holdout_score=sum(hold) / len(hold) if hold else None,
            runs_dir=str(self.runs_dir),
        )


def test_a_failure_only_on_the_holdout_never_reaches_the_improver(home, repo, tmp_path):
    asked: list[str] = []

    def improver(messages, tools):
        asked.append("\n".join(str(m.get("content")) for m in messages))
        return "no proposal today"

    client = LLMClient(LLMConfig(model=register_script("holdout-watcher", improver)))
    config = ImproveConfig(iterations=1, survey_repeats=1, test_command=QUICK)
    runner = HoldoutFails(tmp_path / "held-runs")
    summary = ImproveCycle(Home(home), repo, runner, client, config).run()
    folder = home / "runs" / f"improve-{summary.id}"
    survey = json.loads((folder / "baseline.json").read_text())
    assert {t["task_id"]: t["mean"] for t in survey["tasks"]}["ho-secret"] == 0.5  # measured
    (it,) = summary.iterations
    assert it.status == "no_proposal" and "tr-digits" in it.weakness
    assert len(asked) == 1  # the improver was asked once, about the train task's failure
    sent = "\n".join(
        [asked[0], *(p.read_text() for p in folder.glob("iter-1/*.json")),
         (folder / "improver.llm.jsonl").read_text()]
    )  # fmt: skip
    assert "digits_are_not_words" in sent and "tr-digits" in sent
    for secret in SECRETS:
        assert secret not in sent, secret


def test_ctrl_c_stops_an_improve_cycle_and_marks_its_trial_builds(home, repo, tmp_path):
    mark = marker()
    matrix = marked_matrix(tmp_path, mark, LIFT)
    args = ["improve", "--repo", str(repo), "--matrix", str(matrix), "--model", SLEEPER]
    proc = start_group(home, *args, "--improver-model", IMPROVER, "--iterations", "1")

    def trial_building():
        return list((home / "runs").glob("improve-*/*-trial/home/runs/*/task.json"))

    took, err, below = signal_once_building(
        proc, mark, signal.SIGINT, group=True, ready=trial_building
    )
    assert took <= STOP_WITHIN_S
    assert proc.returncode == 130 and "Traceback" not in err
    nothing_left(proc, mark, below)
    assert git(repo, "worktree", "list").count("\n") == 0
    assert git(repo, "branch", "--list", "cadillac/*") == ""
    (folder,) = (home / "runs").glob("improve-*")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["stopped_because"] == "interrupted" and summary["ended"]
    builds = trial_builds(folder)
    assert builds
    for build in builds:
        status = json.loads((build / "summary.json").read_text())["status"]
        assert status == "interrupted", (build.name, status)
    for claimed in folder.glob("*-trial/home/runs/matrix-*/results.json"):  # once one ended
        assert json.loads(claimed.read_text())["stopped_because"] == "interrupted"
