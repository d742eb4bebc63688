"""Issue 22 item 16: a spend is shown with the digits that tell it from its cap, and a build
that went past its ``--max-cost`` says it overshot, by how much."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from orchestrator.cli.build import show_summary
from orchestrator.home import Home
from orchestrator.llm.prices import usd
from orchestrator.loop.agent import Builder
from tests.fakes.openai_server import FakeOpenAI
from tests.support import build_config

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location(
    "wordfreq_policy", ROOT / "examples/wordfreq/policy.py"
)
wordfreq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wordfreq)


@pytest.mark.parametrize(
    "value, shown",
    [(0.00105, "0.00105"), (0.001, "0.001"), (0.0010499, "0.00105"), (12.3456, "12.35"),
     (0.5, "0.50"), (0.0000123, "0.0000123")],
)  # fmt: skip
def test_16_a_spend_has_the_digits_that_tell_it_from_its_cap(value, shown):
    assert usd(value) == shown


def test_16_a_build_past_its_cap_says_it_overshot_and_by_how_much(home, capsys):
    with FakeOpenAI(lambda body: wordfreq.policy(body["messages"], body.get("tools"))) as server:
        cfg = build_config("openai/gpt-4o-mini", api_base=server.api_base, api_key="k")
        cfg.max_cost_usd = 1e-9  # stops after the first call: what one call costs
        first = Builder.start(Home(home), cfg, wordfreq.TASK).build().cost_usd
        assert first
        # room for a second call as dear as the first; the second is dearer (a longer
        # conversation), so the build passes the cap before it can know
        cfg.max_cost_usd = 2 * first * 1.0001
        summary = Builder.start(Home(home), cfg, wordfreq.TASK).build()
    assert summary.status == "stopped" and summary.cost_usd > cfg.max_cost_usd
    assert f"spent {usd(summary.cost_usd)}, overshot by " in summary.reason
    assert usd(summary.cost_usd) != usd(cfg.max_cost_usd)
    show_summary(summary)
    assert f"cost ${usd(summary.cost_usd)};" in capsys.readouterr().out
