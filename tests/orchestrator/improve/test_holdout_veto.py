"""A holdout veto reaches the improver as that, and as nothing more: the next prompt lists
the vetoed patch under "Attempts already rejected" saying the holdout vetoed it, never by
how much, with which p-value or on which task; the ``dont`` lesson says the same."""

from __future__ import annotations

import json

from memory import MemoryStore
from orchestrator.improve.lessons import VETOED
from orchestrator.llm.client import logged_requests
from tests.orchestrator.improve.test_cycle_rounds import MARK, RULE, ByCode, improver, run_cycle

HOLDOUT = ("ho-north", "ho-south", "ho-east", "ho-west")
"""Four held-out tasks, two builds a side: the veto's test can reach its 0.02 (6^-4)."""


def test_a_holdout_veto_reaches_the_next_prompt_without_its_figures(home, repo):
    runner = ByCode(holdout=HOLDOUT, dropped=0.0)  # the patch lifts train, sinks the holdout
    propose, asked = improver(MARK)
    rule = RULE.model_copy(update={"holdout_repeats": 2})  # enough for the veto's 0.02
    summary, folder = run_cycle(home, repo, runner, propose, iterations=2, decision=rule)
    vetoed, _ = summary.iterations
    assert vetoed.status == "rejected" and vetoed.train_delta > 0.4
    p = vetoed.stages[-1].holdout.p
    assert f"the holdout fell by 0.500, credibly more than 0.010 (p = {p:.3f})" in vetoed.reason
    (_, messages), *_ = logged_requests(folder / "improver.llm.jsonl")[1:]
    prompt = messages[-1]["content"]  # the request the improver's model really got
    assert prompt == asked[1]
    rejected = prompt.split("Attempts already rejected for this weakness")[1].split("\n\n")[0]
    assert "note 0" in rejected and VETOED in rejected and "delta +0.450" in rejected
    for secret in ("fell by", "0.500", f"{p:.3f}", *HOLDOUT):
        assert secret not in prompt, secret
    (dont,) = [x for x in MemoryStore(home / "self_memory.jsonl").all() if x.polarity == "dont"]
    assert VETOED in dont.fix and "fell by" not in dont.fix and "0.500" not in dont.fix
    decision = json.loads((folder / "iter-1" / "decision.json").read_text())
    assert decision["holdout_delta"] == -0.5  # kept for people, never shown to the improver


def test_a_lesson_an_earlier_version_wrote_with_the_holdouts_figures_is_shown_without(home):
    from orchestrator.home import Home
    from orchestrator.improve.lessons import SelfLessons
    from orchestrator.improve.weaknesses import Weakness

    weakness = Weakness(
        id="acceptance-t0-9f3a1c", kind="acceptance", signature="acceptance:t0:test_t0",
        occurrences=1, cost=0.1, tasks=["t0"], targets=["phases/build.md"],
    )  # fmt: skip
    lessons = SelfLessons(Home(home))
    old = "confirm: the holdout fell by 0.675, credibly more than 0.010 (p = 0.016)"
    lessons.rejected(weakness, "a note", "+0.350", old, 1)
    shown = "\n".join([*lessons.rejected_for(weakness), *lessons.for_improver(weakness)])
    assert "rejected on iter 1, train delta +0.350: " + VETOED in shown
    assert "0.675" not in shown and "0.016" not in shown and "fell by" not in shown
