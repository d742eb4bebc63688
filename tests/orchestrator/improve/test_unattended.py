"""An improve cycle left alone: its caps, its fallback model, and what its builds may see.

Every cycle here runs real sandboxed trials (``SandboxedMatrix``) with scripted builders.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from memory import Lesson, MemoryStore
from orchestrator.bench.decision import DecisionConfig
from orchestrator.home import Home
from orchestrator.improve.cycle import ImproveCycle
from orchestrator.improve.records import ImproveConfig
from orchestrator.improve.trial import RoundSpec, SandboxedMatrix
from orchestrator.llm.backends import register_script
from orchestrator.llm.client import LLMClient, LLMConfig, logged_requests
from tests.fakes.improve_policies import SENTENCE

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

ROOT = Path(__file__).resolve().parents[3]
SMALL = ROOT / "tests" / "fixtures" / "matrix_small"
BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"
QUICK = [sys.executable, "-c", "pass"]
ADD_SENTENCE = {
    "file": "phases/build.md",
    "search": "# Phase: build\n",
    "replace": f"# Phase: build\n\n{SENTENCE}\n",
}


def improver(name: str) -> LLMClient:
    import json

    answer = json.dumps({"reason": "say how digits count", "edits": [ADD_SENTENCE]})
    return LLMClient(LLMConfig(model=register_script(name, lambda m, t: answer)))


def cycle(home, repo, runner, name: str, **cfg) -> ImproveCycle:
    quick = DecisionConfig(baseline_repeats=2, fresh_ratio=1, full_repeats=2, confirm_repeats=1)
    cfg.setdefault("decision", quick)
    cfg.setdefault("survey_repeats", 1)
    cfg.setdefault("test_command", QUICK)
    return ImproveCycle(Home(home), repo, runner, improver(name), ImproveConfig(**cfg))


def test_a_token_cap_stops_the_cycle_between_builds_and_the_record_says_why(home, repo):
    runner = SandboxedMatrix(Home(home), SMALL, LLMConfig(model=BUILDER), jobs=1)
    summary = cycle(home, repo, runner, "capped", iterations=3, max_tokens=1).run()
    assert summary.iterations == []  # the survey's first build spent the cap
    assert "token cap of 1 was reached" in summary.stopped_because
    assert summary.builds == 1 and summary.tokens > 1 and summary.ended
    folder = Path(home) / "runs" / f"improve-{summary.id}"
    (claimed,) = (folder / "survey-baseline-trial" / "home" / "runs").glob("matrix-*/results.json")
    assert "token cap" in claimed.read_text()
    assert (folder / "rounds" / "survey-baseline.json").is_file()


def test_a_dollar_cap_on_a_model_without_a_price_is_said_at_the_start(tmp_path, capsys):
    from orchestrator.cli import main

    (tmp_path / "plain").mkdir()  # not a git checkout: the cycle ends right after the warning
    args = ["improve", "--repo", str(tmp_path / "plain"), "--matrix", str(SMALL)]
    args += ["--model", BUILDER, "--max-cost", "1"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"price of {BUILDER} is unknown" in err and "--max-tokens" in err
    assert main([*args, "--max-tokens", "5"]) == 1
    assert "price of" not in capsys.readouterr().err
    matrix = ["matrix", "run", "--matrix", str(SMALL), "--model", BUILDER, "--split", "holdout"]
    assert main([*matrix, "--no-learn", "--max-cost", "1"]) == 0
    assert f"price of {BUILDER} is unknown" in capsys.readouterr().err


def test_a_cycle_whose_matrix_cannot_reach_its_alpha_is_refused_in_one_line(home, repo, capsys):
    from orchestrator.cli import main

    args = ["improve", "--repo", str(repo), "--matrix", str(SMALL), "--model", BUILDER]
    # 2 train tasks: p >= 1/8193 (sampled splits), above 70% of 0.05/300 (the confirmation's
    # share of alpha) and 30% of it (the full stage's, with fewer builds)
    assert main([*args, "--iterations", "300"]) == 1
    err = capsys.readouterr().err.strip()
    assert "has 2 train task(s)" in err and len(err.splitlines()) == 1
    assert "run --iterations 286 or fewer (more train tasks or repeats cannot help)" in err
    assert not list((Path(home) / "runs").glob("improve-*"))  # refused before anything ran


def test_a_matrix_run_stops_at_its_token_cap_and_scores_only_what_it_built(home, capsys):
    from orchestrator.cli import main

    args = ["matrix", "run", "--matrix", str(SMALL), "--model", BUILDER, "--no-learn"]
    assert main([*args, "--jobs", "1", "--max-tokens", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 build(s) not started: the token cap of 1 was reached" in out
    (path,) = (Path(home) / "runs").glob("matrix-*/results.json")
    import json

    results = json.loads(path.read_text())
    built = [r for r in results["runs"] if r["status"] != "skipped"]
    assert len(built) == 1 and results["tokens"] > 1
    assert len(results["tasks"]) == 1  # the tasks never built are not scored as zeros
    assert "token cap" in results["stopped_because"]


def test_builds_never_see_the_cycles_own_lessons_but_the_improver_does(home, repo):
    """Both sides build from the memory frozen at the start; lessons about cadillac itself
    (in self_memory.jsonl, or tagged self in an older memory.jsonl) reach only the improver."""
    tags = ["python", "cli", "wordfreq"]
    words = "wordfreq command-line tool frequent words text file unit tests"
    builds = MemoryStore(Path(home) / "memory.jsonl")
    builds.save(Lesson(type="tool_pattern", trigger=words, fix="BUILD-MARK use Counter", tags=tags))
    builds.save(
        Lesson(
            type="architecture",
            trigger=f"cadillac improve weakness {words}",
            fix="LEGACY-SELF-MARK",
            tags=["cadillac", "self", *tags],
        )
    )
    MemoryStore(Path(home) / "self_memory.jsonl").save(
        Lesson(
            type="architecture",
            trigger=f"cadillac improve weakness check {words}",
            fix="SELF-MARK",
            tags=["cadillac", "self", *tags],
        )
    )
    runner = SandboxedMatrix(Home(home), SMALL, LLMConfig(model=BUILDER), jobs=2)
    # a threshold the patch cannot reach: iteration 1 is rejected (its lesson written) and
    # iteration 2 builds for the other task's weakness (an accepted patch would leave none)
    rule = DecisionConfig(
        threshold=0.9, baseline_repeats=2, fresh_ratio=1, full_repeats=2, confirm_repeats=1
    )
    summary = cycle(
        home, repo, runner, "lessons", iterations=2, max_attempts=1, decision=rule
    ).run()
    assert [it.status for it in summary.iterations] == ["rejected", "rejected"]
    folder = Path(home) / "runs" / f"improve-{summary.id}"
    logs = sorted(folder.glob("**/*-trial/home/runs/*/llm.jsonl"))
    assert any("-candidate-trial" in str(log) for log in logs)
    assert any("-baseline-trial" in str(log) for log in logs)
    assert any("iter-2" in str(log) for log in logs)
    for log in logs:
        sent = "\n".join(
            str(m.get("content")) for _, messages in logged_requests(log) for m in messages
        )
        assert "BUILD-MARK" in sent, log  # recall works: the build lesson is there
        assert "SELF-MARK" not in sent and "LEGACY-SELF-MARK" not in sent, log
        # iteration 1 wrote its own lesson; iteration 2's builds still start from the snapshot
        assert "matrix score improved" not in sent and "rejected on iter" not in sent, log
    asked = (folder / "improver.llm.jsonl").read_text()
    assert "SELF-MARK" in asked and "LEGACY-SELF-MARK" in asked
    trial_memory = next(folder.glob("**/*-trial/home/memory.jsonl")).read_bytes()
    assert trial_memory == runner.snapshot["memory.jsonl"]


def test_the_cycle_builds_with_the_fallback_model_when_the_primary_is_dead(home, repo):
    with socket.socket() as s:  # a port nobody listens on: every attempt is refused
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    llm = LLMConfig(model="openai/dead", api_base=dead, fallback_models=[BUILDER])
    runner = SandboxedMatrix(Home(home), SMALL, llm, jobs=1)
    folder = Path(home) / "trial"
    folder.mkdir()
    results = runner.run(repo, "fallback", folder, RoundSpec(repeats=1, split="holdout"))
    (run,) = results.runs
    assert run.verdict == "scored" and run.score == 1.0, run.failure
    (log,) = folder.glob("fallback-trial/home/runs/*/llm.jsonl")
    assert '"event": "circuit_open"' in log.read_text()  # the dead primary was switched off


def test_the_command_line_hands_fallbacks_and_caps_to_the_cycle(home, repo):
    from orchestrator.cli import build_parser
    from orchestrator.cli.improve import cycle_request

    argv = ["nightly", "--repo", str(repo), "--model", "openai/a", "--api-base", "http://x/v1"]
    argv += ["--fallback-model", BUILDER, "--max-cost", "2.5", "--max-tokens", "9000"]
    request = cycle_request(build_parser().parse_args(argv))
    assert request.builder.fallback_models == [BUILDER]
    assert (request.max_cost_usd, request.max_tokens) == (2.5, 9000)
    runner = SandboxedMatrix(Home(home), SMALL, request.builder)
    command = runner._command(Path("m"), Path("h"), RoundSpec(max_tokens=100, max_cost_usd=1))
    assert f"--fallback-model {BUILDER}" in command
    assert "--max-tokens 100" in command and "--max-cost 1.000000" in command


def test_a_trial_that_calls_its_failed_builds_skipped_is_scored_zero_for_them(home, tmp_path):
    """A hostile trial cannot drop its bad builds from the mean by claiming a cap skipped them."""
    from orchestrator.bench.results import MatrixResults, TaskRun

    runner = SandboxedMatrix(Home(home), SMALL, LLMConfig(model=BUILDER))
    claimed = MatrixResults(
        id="x",
        matrix="m",
        model="m",
        repeats=1,
        split="train",
        started=0,
        runs=[
            TaskRun(task_id="wf-a", repeat=0, status="skipped", score=1.0),
            TaskRun(task_id="wf-b", repeat=0, status="skipped", score=1.0),
        ],
    )
    judged = runner._judge(claimed, tmp_path / "h", tmp_path / "t", RoundSpec(split="train"))
    assert [(r.task_id, r.status, r.score) for r in judged.runs] == [
        ("wf-a", "missing", 0.0),
        ("wf-b", "missing", 0.0),
    ]
    assert judged.train_score == 0.0
