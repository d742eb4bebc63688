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
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from orchestrator.bench.results import GateSpend, MatrixResults
from orchestrator.llm.prices import highest_prices
from orchestrator.sandbox.egress import Host

BYTES_PER_TOKEN = 4


def gate_spend(
    traffic: dict[Host, tuple[int, int]], model_hosts: Iterable[Host], models: list[str]
) -> GateSpend:
    """The gate's figure for a trial: its ``traffic`` (``EgressGate.traffic()``) to the
    ``model_hosts``, priced at the highest prices of ``models``."""
    hosts = {(host.lower(), port) for host, port in model_hosts}
    up = sum(u for host, (u, _) in traffic.items() if host in hosts)
    down = sum(d for host, (_, d) in traffic.items() if host in hosts)
    tokens_up, tokens_down = math.ceil(up / BYTES_PER_TOKEN), math.ceil(down / BYTES_PER_TOKEN)
    prices = highest_prices(models)
    cost = None
    if prices is not None:
        cost = tokens_up * prices[0] + tokens_down * prices[1]
    return GateSpend(bytes_up=up, bytes_down=down, tokens=tokens_up + tokens_down, cost_usd=cost)


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
