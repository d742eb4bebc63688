"""Issue 22 item 14: the calls each model answered are recorded and shown, so a build the
fallback served does not read as the primary's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from orchestrator.cli.build import show_summary
from orchestrator.home import Home
from orchestrator.llm.backends import register_script
from orchestrator.llm.client import LLMClient, LLMConfig
from orchestrator.loop.agent import Builder
from tests.fakes.openai_server import FakeOpenAI
from tests.support import build_config

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location(
    "wordfreq_policy", ROOT / "examples/wordfreq/policy.py"
)
wordfreq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wordfreq)
HELLO = [{"role": "user", "content": "hello"}]


def test_14_the_client_counts_the_calls_each_model_answered(tmp_path):
    backup = register_script("answered-backup", ["one", "two", "three"])
    with FakeOpenAI(lambda body: {"status": 503}) as dead:
        config = LLMConfig(
            model="openai/dead",
            api_base=dead.api_base,
            fallback_models=[backup],
            max_attempts=2,
            wait_initial_s=0.0,
            wait_max_s=0.0,
        )
        llm = LLMClient(config, sleep=lambda s: None)
        for _ in range(3):
            llm.complete(HELLO)
    assert llm.totals.calls == 3
    assert llm.totals.answered_by == {backup: 3}


def test_14_the_summary_says_the_fallback_answered(home, capsys):
    fallback = register_script("answered-wordfreq", wordfreq.policy)
    with FakeOpenAI(lambda body: {"status": 503}) as dead:
        cfg = build_config(
            "openai/dead", api_base=dead.api_base, fallback_models=[fallback], max_attempts=2
        )
        summary = Builder.start(Home(home), cfg, wordfreq.TASK).build()
    assert summary.status == "passed" and summary.llm_calls > 0
    assert summary.calls_by_model == {fallback: summary.llm_calls}
    saved = (home / "runs" / summary.run_id / "summary.json").read_text(encoding="utf-8")
    assert f'"{fallback}": {summary.llm_calls}' in saved.replace("\n", "").replace("  ", "")
    show_summary(summary)
    out = capsys.readouterr().out
    assert f"answered by {fallback} {summary.llm_calls})" in out


def test_14_a_build_the_primary_answered_shows_no_extra_words(home, capsys):
    primary = register_script("answered-primary", wordfreq.policy)
    summary = Builder.start(Home(home), build_config(primary), wordfreq.TASK).build()
    assert summary.calls_by_model == {primary: summary.llm_calls}
    show_summary(summary)
    assert "answered by" not in capsys.readouterr().out
