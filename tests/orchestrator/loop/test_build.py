"""End-to-end builds: a scripted model, litellm over real HTTP, budgets, resume, reinforcement."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from memory import Lesson, MemoryStore, PhaseBudgets
from orchestrator.cli import main
from orchestrator.home import Home
from orchestrator.llm.backends import register_script
from orchestrator.loop.agent import Builder
from orchestrator.loop.runs import Run
from phases import DEFAULT_ROUNDS, PHASES
from tests.fakes.openai_server import FakeOpenAI
from tests.support import build_config as config
from tests.support import events

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location(
    "wordfreq_policy", ROOT / "examples/wordfreq/policy.py"
)
wordfreq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wordfreq)


@pytest.fixture
def seeded(home) -> Home:
    """A home whose memory holds one lesson the wordfreq build will recall and cite."""
    store = MemoryStore(home / "memory.jsonl")
    store.save(
        Lesson(
            type="tool_pattern",
            trigger="python command-line tool without unit tests",
            fix="write unittest tests for the word counting before the CLI",
            tags=["python"],
            confidence=0.5,
        )
    )
    return Home(home)


def test_a_scripted_model_builds_the_project_through_all_six_phases(seeded):
    model = register_script("wordfreq-e2e", wordfreq.policy)
    builder = Builder.start(seeded, config(model), wordfreq.TASK)
    summary = builder.build()
    run = builder.run

    assert summary.status == "passed", summary.reason
    assert [p.phase for p in summary.phases] == list(PHASES)
    assert all(p.outcome == "passed" for p in summary.phases)
    for path in (
        "wordfreq.py",
        "tests/test_wordfreq.py",
        "plan.json",
        "PLAN.md",
        ".venv/bin/python",
    ):
        assert (run.workspace / path).exists(), path
    assert "count_words" in (run.workspace / "wordfreq.py").read_text()

    on_disk = json.loads(run.summary_path.read_text())
    assert on_disk["status"] == "passed" and on_disk["llm_calls"] == summary.llm_calls > 12
    assert json.loads(run.task_path.read_text())["task"] == wordfreq.TASK
    assert "api_key" not in json.dumps(json.loads(run.task_path.read_text())["config"]["llm"])

    rows = PhaseBudgets(seeded.budgets_path, DEFAULT_ROUNDS).rows()
    assert [r.phase for r in rows] == list(PHASES)
    assert all(r.outcome == "passed" and "python" in r.tags for r in rows)
    assert rows[3].rounds == 4 and rows[0].rounds == 2

    store = MemoryStore(seeded.memory_path)
    cited = summary.lessons_recalled[0]
    assert summary.lessons_applied == [cited] and summary.lessons_boosted == [cited]
    boosted = store.get(cited)
    assert boosted.confidence == pytest.approx(0.6) and boosted.used == 1
    assert len(summary.lessons_saved) == 3
    saved = store.get(summary.lessons_saved[-1])
    assert saved.polarity == "dont" and saved.confidence == 0.3
    assert saved.source_task == wordfreq.TASK[:200]

    kinds = [e["kind"] for e in events(run)]
    assert kinds[0] == "build_start" and kinds[-1] == "build_end"
    assert kinds.count("phase_start") == kinds.count("phase_end") == 6
    assert {"tool", "check", "command", "lesson_saved", "lessons_boosted"} <= set(kinds)
    assert len((run.llm_path).read_text().splitlines()) == summary.llm_calls


def test_a_build_through_litellm_over_http_survives_a_429_and_a_500(home):
    faults = iter([{"status": 429, "headers": {"Retry-After": "0"}}, {"status": 500}])

    def answer(body: dict):
        fault = next(faults, None) if len(server.requests) in (3, 7) else None
        if fault:
            return fault
        return wordfreq.policy(body["messages"], body.get("tools"))

    with FakeOpenAI(answer) as server:
        builder = Builder.start(
            Home(home),
            config("openai/fake", api_base=server.api_base, api_key="sk-local"),
            wordfreq.TASK,
        )
        summary = builder.build()
    assert summary.status == "passed", summary.reason
    assert summary.failed_attempts == 2
    logged = [json.loads(x) for x in builder.run.llm_path.read_text().splitlines()]
    assert [r["status"] for r in logged if "error" in r] == [429, 500]
    assert any(r["attempt"] == 2 for r in logged)
    assert summary.tokens_in == 11 * summary.llm_calls


def test_a_phase_that_never_passes_runs_out_its_budget_and_resume_continues(home):
    broken = dict(wordfreq.TURNS)
    broken["build"] = lambda ids: [
        [{"name": "finish_phase", "arguments": {"summary": "done?", "applied_lessons": []}}]
    ]

    def stubborn(messages, tools):
        if tools and "# Phase: build" in messages[0]["content"]:
            return {"tool_calls": broken["build"]([])[0]}
        return wordfreq.policy(messages, tools)

    first = Builder.start(Home(home), config(register_script("stubborn", stubborn)), wordfreq.TASK)
    summary = first.build()
    build = summary.phases[-1]
    assert summary.status == "failed" and build.phase == "build"
    assert build.outcome == "budget_exhausted" and build.rounds == build.budget == 30
    checks = [e for e in events(first.run) if e["kind"] == "check" and e["phase"] == "build"]
    assert len(checks) == 30 and not any(c["data"]["passed"] for c in checks)
    rows = PhaseBudgets(Path(home) / "phase_budgets.jsonl", DEFAULT_ROUNDS).rows()
    assert rows[-1].phase == "build" and rows[-1].outcome == "budget_exhausted"

    resumed = Builder.resume(
        Home(home), config(register_script("good", wordfreq.policy)), first.run.id
    )
    final = resumed.build()
    assert final.status == "passed"
    assert [p.phase for p in final.phases] == list(PHASES)
    starts = [e["phase"] for e in events(first.run) if e["kind"] == "phase_start"]
    assert starts == ["plan", "deps", "scaffold", "build", "build", "integrate", "validate"]


def test_malformed_tool_calls_cost_a_round_and_never_crash_the_run(home):
    bad = [
        [{"name": "delete_everything", "arguments": {}}],
        [{"name": "write_file", "arguments": "{not json"}],
        [{"name": "write_file", "arguments": {"path": "x.txt"}}],
        [{"name": "read_file", "arguments": {"path": "../../etc/passwd"}}],
    ]

    def clumsy(messages, tools):
        if tools and "# Phase: build" in messages[0]["content"]:
            turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
            if len(turns) < len(bad):
                return {"tool_calls": bad[len(turns)]}
            cut = turns[len(bad) - 1] + 1  # what the good script sees: none of the bad turns
            messages = messages[:2] + [m for m in messages[cut:] if m["role"] != "user"]
        return wordfreq.policy(messages, tools)

    builder = Builder.start(Home(home), config(register_script("clumsy", clumsy)), wordfreq.TASK)
    summary = builder.build()
    tool_errors = [
        e["data"]["error"]
        for e in events(builder.run)
        if e["kind"] == "tool" and not e["data"]["ok"] and e["data"]["tool"] != "run"
    ]
    assert len(tool_errors) == 4
    assert "no tool 'delete_everything'" in tool_errors[0]
    assert "JSON" in tool_errors[1] and "content" in tool_errors[2]
    assert "outside" in tool_errors[3] or ".." in tool_errors[3]
    assert summary.status == "passed"
    assert summary.phases[3].rounds == len(bad) + 4


def test_max_cost_stops_the_build_cleanly_and_it_can_be_resumed(home):
    with FakeOpenAI(lambda body: wordfreq.policy(body["messages"], body.get("tools"))) as server:
        cheap = config("openai/gpt-4o-mini", api_base=server.api_base, api_key="k")
        cheap.max_cost_usd = 0.00001
        builder = Builder.start(Home(home), cheap, wordfreq.TASK)
        summary = builder.build()
        assert summary.status == "stopped" and "--max-cost" in summary.reason
        assert summary.cost_usd is not None and summary.cost_usd <= 0.00001
        cheap.max_cost_usd = None
        final = Builder.resume(Home(home), cheap, builder.run.id).build()
    assert final.status == "passed"


def test_a_model_without_a_price_is_capped_by_tokens_and_warned_about(home, capsys):
    register_script("wordfreq-tokens", wordfreq.policy)
    args = ["build", wordfreq.TASK, "--model", "scripted:wordfreq-tokens", "--json"]
    assert main([*args, "--max-cost", "1"]) == 0  # nothing can stop it: the start says so
    err = capsys.readouterr().err
    assert "price of scripted:wordfreq-tokens is unknown" in err and "--max-tokens" in err
    assert main([*args, "--max-tokens", "4000"]) == 1
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["status"] == "stopped" and "--max-tokens 4000" in summary["reason"]
    assert summary["tokens_in"] + summary["tokens_out"] <= 4000 and "warning" not in err
    resumed = main(["build", "--resume", summary["run_id"], "--json"])
    assert resumed == 0 and json.loads(capsys.readouterr().out)["status"] == "passed"


def test_cadillac_build_command_with_json_and_runs_listing(home, capsys):
    register_script("wordfreq-cli", wordfreq.policy)
    code = main(["build", wordfreq.TASK, "--model", "scripted:wordfreq-cli", "--json"])
    out = capsys.readouterr().out
    summary = json.loads(out)
    assert code == 0 and summary["status"] == "passed"
    assert main(["runs", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in listed] == [summary["run_id"]]
    assert main(["runs", "show", summary["run_id"]]) == 0
    assert "all six phases passed" in capsys.readouterr().out


def test_build_without_a_model_is_one_clear_line(home, capsys, monkeypatch):
    monkeypatch.delenv("CADILLAC_MODEL", raising=False)
    assert main(["build", "a todo app"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "CADILLAC_MODEL" in err and "make demo" in err
    assert main(["runs", "show", "nope"]) == 1


def test_the_demo_session_replays_into_a_passing_build(home):
    import shutil

    corpus = ROOT / "tests" / "fixtures" / "cadillac_corpus"
    shutil.copy(corpus / "lessons.jsonl", home / "memory.jsonl")
    session = ROOT / "examples" / "wordfreq" / "session.llm.jsonl"
    builder = Builder.start(Home(home), config(f"replay:{session}"), wordfreq.TASK)
    summary = builder.build()
    assert summary.status == "passed", summary.reason
    recorded = [json.loads(x) for x in session.read_text().splitlines()]
    assert summary.llm_calls == len(recorded)
    assert summary.lessons_boosted == summary.lessons_applied != []


def test_a_failing_build_penalises_the_cited_lesson_its_error_echoes(seeded):
    failing_test = (
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_it(self):\n"
        "        self.fail('python command-line tool without unit tests')\n"
    )

    def backfiring(messages, tools):
        system = messages[0]["content"]
        if tools and "# Phase: build" in system:
            ids = wordfreq._lesson_ids(system)
            write = {"path": "tests/test_wordfreq.py", "content": failing_test}
            finish = {"summary": "done", "applied_lessons": ids[:1]}
            return {
                "tool_calls": [
                    {"name": "write_file", "arguments": write},
                    {"name": "finish_phase", "arguments": finish},
                ]
            }
        return wordfreq.policy(messages, tools)

    builder = Builder.start(seeded, config(register_script("backfire", backfiring)), wordfreq.TASK)
    summary = builder.build()
    cited = summary.lessons_recalled[0]
    assert summary.status == "failed" and summary.lessons_applied == [cited]
    assert summary.lessons_penalised == [cited] and summary.lessons_boosted == []
    assert MemoryStore(seeded.memory_path).get(cited).confidence == pytest.approx(0.4)
    penalised = [e for e in events(builder.run) if e["kind"] == "lessons_penalised"]
    assert penalised[0]["data"]["ids"] == [cited]
    assert "CHECK FAILED" in penalised[0]["data"]["error"]


def test_an_unknown_model_is_refused_before_a_run_folder_is_made(home, capsys):
    assert main(["build", "a todo app", "--model", "nosuchprovider-model-x"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not known to litellm" in err
    assert not (Path(home) / "runs").exists()


def test_long_conversations_elide_old_tool_results_but_keep_the_opening_and_the_recent():
    from orchestrator.loop.context import KEEP_RECENT, compact

    messages = [{"role": "system", "content": "S" * 5000}, {"role": "user", "content": "task"}]
    for i in range(30):
        messages.append({"role": "assistant", "content": None})
        messages.append(
            {"role": "tool", "tool_call_id": str(i), "content": f"out {i}\n" + "x" * 5000}
        )

    def total() -> int:
        return sum(len(str(m.get("content") or "")) for m in messages)

    assert total() > 60_000
    compact(messages, 60_000)
    assert total() <= 60_000
    assert messages[0]["content"] == "S" * 5000
    assert all(len(m["content"]) > 5000 for m in messages[-KEEP_RECENT:] if m["role"] == "tool")
    assert messages[3]["content"].startswith("out 0\n[... 5,006 characters elided")
    before = [dict(m) for m in messages]
    compact(messages, 60_000)
    assert messages == before  # what fits is left alone


BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"


def test_without_a_sandbox_the_build_stops_before_it_starts(home, capsys, tmp_path, monkeypatch):
    bare = tmp_path / "bare-path"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))  # no bwrap to be found
    assert main(["build", wordfreq.TASK, "--model", BUILDER]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cadillac: error: bubblewrap")
    assert "apt-get install bubblewrap" in err and "--unsafe-no-sandbox" in err
    assert not (Path(home) / "runs").exists()


def test_unsafe_no_sandbox_says_so_at_the_start_and_in_the_summary(home, capsys):
    assert main(["build", wordfreq.TASK, "--model", BUILDER, "--unsafe-no-sandbox"]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith("cadillac: warning: --unsafe-no-sandbox")
    (run,) = (Path(home) / "runs").iterdir()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["unsafe_no_sandbox"] is True and summary["status"] == "passed"
    commands = [e for e in events(Run(Path(home) / "runs", run.name)) if e["kind"] == "command"]
    assert commands and not any(e["data"]["sandboxed"] for e in commands)
    sandboxed = Builder.start(Home(home), config(BUILDER), wordfreq.TASK)
    sandboxed.build()
    assert json.loads(sandboxed.run.summary_path.read_text())["unsafe_no_sandbox"] is False


def test_resuming_a_passed_run_does_nothing_and_says_so(seeded, capsys):
    model = register_script("wordfreq-resume-passed", wordfreq.policy)
    builder = Builder.start(seeded, config(model), wordfreq.TASK)
    assert builder.build().status == "passed"
    memory, events_before = seeded.memory_path.read_bytes(), builder.run.events_path.read_bytes()
    assert main(["build", "--resume", builder.run.id, "--model", model]) == 0
    assert f"run {builder.run.id} already passed: nothing to resume" in capsys.readouterr().out
    assert seeded.memory_path.read_bytes() == memory  # no second boost
    assert builder.run.events_path.read_bytes() == events_before


def test_a_live_run_cannot_be_resumed_by_a_second_process(home, capsys):
    model = register_script("wordfreq-live", wordfreq.policy)
    builder = Builder.start(Home(home), config(model), wordfreq.TASK)
    held = builder.run.lock()  # as a running build holds it
    try:
        assert main(["build", "--resume", builder.run.id, "--model", model]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "being built by another process" in err
        assert not builder.run.events_path.exists() and builder.run.summary() is None
    finally:
        held.release()


def test_a_phase_that_could_not_reach_the_model_does_not_reflect(home):
    with FakeOpenAI(lambda body: {"status": 401}) as server:
        builder = Builder.start(
            Home(home), config("openai/m", api_base=server.api_base), wordfreq.TASK
        )
        summary = builder.build()
    assert summary.status == "failed" and "model error" in summary.phases[0].check
    assert len(server.requests) == 1  # the failed call; no reflection was asked of it
    kinds = [e["kind"] for e in events(builder.run)]
    assert "reflection" not in kinds and "reflection_failed" not in kinds
