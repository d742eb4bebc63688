"""Issue 22 item 26: only a build that failed on its own merits penalises its lessons."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from memory import Lesson, MemoryStore
from orchestrator.home import Home
from orchestrator.llm.backends import register_script
from orchestrator.loop.agent import Builder
from tests.support import build_config as config

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location(
    "wordfreq_policy_merits", ROOT / "examples/wordfreq/policy.py"
)
wordfreq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wordfreq)

FAILING_TEST = (
    "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_it(self):\n"
    "        self.fail('python command-line tool without unit tests')\n"
)


def test_a_build_stopped_for_time_after_a_failed_check_penalises_nothing(home):
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
    cfg = config("scripted:merits")
    build_calls = []

    def stopped_after_a_failure(messages, tools):
        system = messages[0]["content"]
        if tools and "# Phase: build" in system:
            build_calls.append(1)
            if len(build_calls) == 2:  # the check has failed once: now the time runs out
                cfg.max_seconds = 1e-9
            ids = wordfreq._lesson_ids(system)
            write = {"path": "tests/test_wordfreq.py", "content": FAILING_TEST}
            finish = {"summary": "done", "applied_lessons": ids[:1]}
            return {
                "tool_calls": [
                    {"name": "write_file", "arguments": write},
                    {"name": "finish_phase", "arguments": finish},
                ]
            }
        return wordfreq.policy(messages, tools)

    register_script("merits", stopped_after_a_failure)
    builder = Builder.start(Home(home), cfg, wordfreq.TASK)
    summary = builder.build()
    cited = summary.lessons_recalled[0]
    assert summary.status == "stopped" and "time limit" in summary.reason
    assert summary.lessons_applied == [cited]
    assert summary.lessons_penalised == [] and summary.lessons_boosted == []
    assert MemoryStore(home / "memory.jsonl").get(cited).confidence == pytest.approx(0.5)
