"""Whether cadillac can know what a model costs, so a spend cap can be kept.

litellm prices a call from its local cost map. A model it has no price for (a local
server, a replay, a scripted model, a new model) costs "unknown": a cap in dollars cannot
stop its spending, and a cap in tokens must be given instead.
"""

from __future__ import annotations

import math

from orchestrator.llm import backends
from orchestrator.llm.client import litellm_module


def price_known(model: str) -> bool:
    """True when litellm has a price per token for ``model``."""
    if backends.is_builtin(model):
        return False
    try:
        info = litellm_module().get_model_info(model)
    except Exception:  # not in the cost map
        return False
    return bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))


def cap_warning(models: list[str], max_cost: float | None, max_tokens: int | None) -> str:
    """What to say at the start when a dollar cap cannot be kept ("" when it can)."""
    if max_cost is None or max_tokens is not None:
        return ""
    unknown = [m for m in dict.fromkeys(models) if not price_known(m)]
    if not unknown:
        return ""
    return (
        f"the price of {', '.join(unknown)} is unknown, so --max-cost {max_cost:g} cannot stop "
        "its spending; give --max-tokens as well"
    )


def highest_prices(models: list[str]) -> tuple[float, float] | None:
    """The highest price per input token and per output token among ``models`` (USD), from
    litellm's cost map; None when none of them has a price."""
    found = []
    for model in dict.fromkeys(models):
        if not price_known(model):
            continue
        info = litellm_module().get_model_info(model)
        found.append(
            (info.get("input_cost_per_token") or 0.0, info.get("output_cost_per_token") or 0.0)
        )
    if not found:
        return None
    return max(p for p, _ in found), max(p for _, p in found)


def usd(value: float) -> str:
    """A cost in dollars with enough digits to tell it from a cap near it: two decimals at
    least, and three significant digits (``0.00105``, not ``0.0010``; ``12.35``)."""
    if value <= 0 or not math.isfinite(value):
        return f"{value:.2f}"
    decimals = max(2, 2 - math.floor(math.log10(value)))
    text = f"{value:.{decimals}f}".rstrip("0")
    whole, _, fraction = text.partition(".")
    return f"{whole}.{fraction.ljust(2, '0')}"


def cost_stop(cap: float, spent: float) -> str:
    """Why a build stopped at its ``--max-cost``: before passing it, or (a call's cost is
    known only once it is made) after passing it, by how much."""
    if spent > cap:
        return (
            f"stopped at --max-cost {usd(cap)} USD: spent {usd(spent)}, overshot by "
            f"{usd(spent - cap)} (the last call's cost was known only once it was made)"
        )
    return f"stopped before the spend passes --max-cost {usd(cap)} USD (spent {usd(spent)})"
