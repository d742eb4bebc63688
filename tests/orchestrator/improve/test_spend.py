"""The spend books charge what the egress gate counted when a trial claims less: a
candidate's own report of its spend cannot take it under ``--max-cost``."""

from __future__ import annotations

import json
import math

import pytest

from orchestrator.bench.results import GateSpend, MatrixResults
from orchestrator.improve import spend
from orchestrator.improve.rounds import Books
from orchestrator.improve.trial import CapReached
from orchestrator.llm.prices import highest_prices

MODEL = "openai/gpt-4o-mini"
HOST = ("127.0.0.1", 8000)


def claimed(cost: float | None, tokens: int) -> MatrixResults:
    return MatrixResults(
        id="r", matrix="m", model=MODEL, repeats=1, split="train", started=0.0,
        cost_usd=cost, tokens=tokens,
    )  # fmt: skip


def test_the_gates_figure_is_the_bytes_to_the_models_hosts_at_the_highest_prices():
    price_in, price_out = highest_prices([MODEL, "scripted:x"])
    assert 0 < price_in < price_out  # litellm's own cost map
    traffic = {HOST: (40_001, 8_000), ("pypi.org", 443): (10**6, 10**9)}  # a registry: no tokens
    figure = spend.gate_spend(traffic, {HOST}, [MODEL])
    assert (figure.bytes_up, figure.bytes_down) == (40_001, 8_000)
    assert figure.tokens == 10_001 + 2_000
    assert figure.cost_usd == pytest.approx(10_001 * price_in + 2_000 * price_out)
    unpriced = spend.gate_spend(traffic, {HOST}, ["scripted:x"])
    assert unpriced.tokens == figure.tokens and unpriced.cost_usd is None


def test_a_trial_claiming_nothing_is_charged_the_gates_figure_and_stopped_by_the_cap():
    figure = GateSpend(bytes_up=400_000, bytes_down=4_000, tokens=101_000, cost_usd=0.0156)
    results = claimed(0.0, 0)
    spend.charge(results, figure)
    assert (results.cost_usd, results.tokens) == (0.0156, 101_000)
    assert (results.claimed_cost_usd, results.claimed_tokens) == (0.0, 0)
    assert results.gate == figure  # the record shows both
    books = Books(max_cost_usd=0.01)
    books.add(results)
    with pytest.raises(CapReached, match="spend cap of 0.01 USD"):
        books.left()


def test_the_larger_figure_is_charged_and_a_claim_that_is_no_number_counts_as_zero():
    figure = GateSpend(tokens=1_000, cost_usd=0.001)
    honest = claimed(0.002, 5_000)  # reasoning tokens, a gzip answer: more than the bytes
    spend.charge(honest, figure)
    assert (honest.cost_usd, honest.tokens) == (0.002, 5_000)
    for cost, tokens in ((math.nan, -(10**9)), (-5.0, 0), (math.inf, 0)):
        forged = claimed(cost, tokens)
        spend.charge(forged, figure)
        assert (forged.cost_usd, forged.tokens) == (0.001, 1_000)
    nameless = claimed(None, 7)
    spend.charge(nameless, GateSpend(tokens=3, cost_usd=None))  # no price known anywhere
    assert (nameless.cost_usd, nameless.tokens) == (None, 7)
    no_gate = claimed(math.nan, -3)  # a trial without network: its claim, made sane
    spend.charge(no_gate, None)
    assert (no_gate.cost_usd, no_gate.tokens, no_gate.gate) == (0.0, 0, None)


def test_the_gate_stops_a_rounds_model_traffic_at_its_share_of_the_cap(tmp_path):
    """With a meter, the gate itself ends the model traffic once its count passes the
    round's caps: the answer to what was asked still comes back, what comes next is
    refused with the reason, and the other hosts (the registries) are not metered."""
    from orchestrator.sandbox import egress
    from tests.fakes.openai_server import FakeOpenAI
    from tests.orchestrator.sandbox.test_egress import ask, completion_request, port_of

    with FakeOpenAI(lambda body: "spent") as server, FakeOpenAI(lambda b: "pkg") as registry:
        model, other = ("127.0.0.1", port_of(server)), ("127.0.0.1", port_of(registry))
        meter = spend.Meter.of({model}, [MODEL], None, 250)  # 250 tokens: 1,000 bytes
        log = tmp_path / "egress.jsonl"
        with egress.EgressGate(tmp_path / "g", {model, other}, log=log, meter=meter) as gate:
            first = ask(gate, completion_request(model[1], absolute=True))
            assert gate.cut == ""  # some 600 bytes so far
            second = ask(gate, completion_request(model[1], absolute=True))
            refused = ask(gate, completion_request(model[1], absolute=True))
            unmetered = ask(gate, completion_request(other[1], absolute=True))
        assert b"spent" in first and b"pkg" in unmetered
        assert refused.startswith(b"HTTP/1.1 403") and b"token cap of 250 was" in refused
        assert "egress gate's count" in gate.cut
        assert len(server.requests) == 2  # the one that passed the cap was the last carried
        assert second.startswith(b"HTTP/1.0 200") and second.endswith(b"}")  # answered in full
        assert b"spent" in second
    cuts = [json.loads(x) for x in log.read_text().splitlines() if '"cut"' in x]
    assert len(cuts) == 1 and "token cap" in cuts[0]["reason"]
