"""What an improve trial's builds spent, counted where the candidate cannot forge it.

A trial's results (its builds' ``cost_usd`` and ``tokens``) are written by the candidate's
own code: a patched build loop can report nothing and so never meet ``--max-cost``. The
trial's only way to its model is the egress gate (:mod:`orchestrator.sandbox.egress`),
which runs in cadillac's own process and counts every byte it carries to and from each
host; from the bytes to the model's hosts comes the **gate's figure**:

* tokens = bytes up / :data:`BYTES_PER_TOKEN` + bytes down / :data:`BYTES_PER_TOKEN`,
  rounded up: a token is some 4 bytes of English (code and escaped JSON run fewer), and
  the bytes also carry JSON framing, headers and TLS records that are no tokens, so for
  uncompressed traffic the figure is about the provider's count or above it;
* cost = the tokens up at the highest input price among the trial's models plus the
  tokens down at the highest output price (litellm's cost map); unknown when none of them
  has a price.

The books charge, for tokens and for cost each, the **larger of the trial's claim and the
gate's figure** (:func:`charge`). The claim of an honest trial is the provider's own count,
exact where the bytes say too little (hidden reasoning tokens, gzip-compressed answers,
images given by URL); the gate's figure is what lying cannot shrink. So a candidate never
lowers what it is charged by under-reporting, and an honest trial is charged its true
spend, or its traffic's figure when that is higher. Both stay in the round's record
(``claimed_cost_usd``, ``claimed_tokens``, ``gate``).

The same figure bounds a round while it runs: the gate is given a :class:`Meter` with
the round's share of the caps, and once the figure reaches it the gate carries nothing
more up to the models (the answers to what was already asked still come back), so a
trial that lies about its spend cannot go on spending until its round ends; the round
then stops (``CapReached``) like one its own cap stopped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.bench.results import GateSpend, MatrixResults
from orchestrator.llm.prices import highest_prices
from orchestrator.sandbox.egress import Host

BYTES_PER_TOKEN = 4


def figure(up: int, down: int, prices: tuple[float, float] | None) -> tuple[int, float | None]:
    """(tokens, cost) the gate's rule makes of ``up`` and ``down`` bytes (module docstring)."""
    tokens_up, tokens_down = math.ceil(up / BYTES_PER_TOKEN), math.ceil(down / BYTES_PER_TOKEN)
    cost = None if prices is None else tokens_up * prices[0] + tokens_down * prices[1]
    return tokens_up + tokens_down, cost


def gate_spend(
    traffic: dict[Host, tuple[int, int]], model_hosts: Iterable[Host], models: list[str]
) -> GateSpend:
    """The gate's figure for a trial: its ``traffic`` (``EgressGate.traffic()``) to the
    ``model_hosts``, priced at the highest prices of ``models``."""
    hosts = {(host.lower(), port) for host, port in model_hosts}
    up = sum(u for host, (u, _) in traffic.items() if host in hosts)
    down = sum(d for host, (_, d) in traffic.items() if host in hosts)
    tokens, cost = figure(up, down, highest_prices(models))
    return GateSpend(bytes_up=up, bytes_down=down, tokens=tokens, cost_usd=cost)


@dataclass
class Meter:
    """What an egress gate is given to stop a round's model traffic at its caps."""

    hosts: set[Host]
    prices: tuple[float, float] | None
    max_cost_usd: float | None = None
    max_tokens: int | None = None

    @classmethod
    def of(cls, hosts: Iterable[Host], models: list[str], max_cost_usd, max_tokens) -> Meter:
        hosts = {(host.lower(), port) for host, port in hosts}
        return cls(hosts, highest_prices(models), max_cost_usd, max_tokens)

    def over(self, up: int, down: int) -> str:
        """Why ``up`` and ``down`` bytes to the models pass the round's caps ("" if not)."""
        tokens, cost = figure(up, down, self.prices)
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return (
                f"the round's token cap of {self.max_tokens:,} was reached by the egress "
                f"gate's count ({tokens:,} tokens)"
            )
        if self.max_cost_usd is not None and cost is not None and cost >= self.max_cost_usd:
            return (
                f"the round's spend cap of {self.max_cost_usd:g} USD was reached by the "
                f"egress gate's count ({cost:.6f} USD)"
            )
        return ""


def charge(results: MatrixResults, gate: GateSpend | None) -> None:
    """Make ``results``' ``cost_usd`` and ``tokens`` what the books charge: the larger of
    the trial's claim (kept as ``claimed_*``) and the gate's figure (kept as ``gate``).
    Without a gate (a trial with no network, or no sandbox) the claim stands. A claim
    below zero or not a number (which would leave a cap never reached) counts as zero."""
    claim_cost, claim_tokens = results.cost_usd, results.tokens
    results.claimed_cost_usd, results.claimed_tokens, results.gate = claim_cost, claim_tokens, gate
    if claim_cost is not None and not (math.isfinite(claim_cost) and claim_cost >= 0):
        claim_cost = 0.0
    claim_tokens = max(0, claim_tokens)
    gate_tokens, gate_cost = (0, None) if gate is None else (gate.tokens, gate.cost_usd)
    results.tokens = max(claim_tokens, gate_tokens)
    known = [c for c in (claim_cost, gate_cost) if c is not None]
    results.cost_usd = max(known) if known else None
