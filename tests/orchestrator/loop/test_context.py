"""Compaction: every message counts, the oldest large pieces go first, the opening stays whole."""

from __future__ import annotations

import copy
import json
import re

from orchestrator.home import Home
from orchestrator.llm.client import LLMConfig
from orchestrator.loop.agent import BuildConfig, Builder
from orchestrator.loop.context import KEEP_RECENT, LOW_WATER, compact
from tests.fakes.openai_server import FakeOpenAI

ELIDED = re.compile(r"\[\.\.\. ([\d,]+) characters elided to save context")


def weight(messages: list[dict]) -> int:
    """The messages as a request carries them."""
    return len(json.dumps(messages, ensure_ascii=False))


def opening() -> list[dict]:
    return [
        {"role": "system", "content": "You are the builder. " + "Rules. " * 300},
        {"role": "user", "content": "Task: a tool. " + "Details. " * 300},
    ]


def call(name: str, arguments: dict | str, content: str | None = None, n: int = 0) -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": raw}}
        ],
    }


def result(text: str, n: int = 0) -> dict:
    return {"role": "tool", "tool_call_id": f"c{n}", "content": text}


def elided(text: str) -> int:
    found = ELIDED.search(text)
    assert found, text[:300]
    return int(found.group(1).replace(",", ""))


def test_a_30_mb_write_file_does_not_ride_along_in_every_later_request(home):
    """The build loop's own rounds (Builder.run_phase, which compacts before each request),
    with the model over HTTP: the model writes a 30 MB file, then goes on for rounds."""
    big = "".join(f"line {i:08d} of the big file\n" for i in range(1_000_000))  # 30 MB
    assert len(big) == 30_000_000
    sent: list[dict] = []

    def model(body: dict):
        if not body.get("tools"):  # the reflection after the phase
            return "nothing to learn"
        messages = body["messages"]
        sent.append({"weight": weight(messages), "messages": messages})
        if len(sent) == 1:
            write = {"path": "big.txt", "content": big}
            return {
                "content": "Writing it.",
                "tool_calls": [{"name": "write_file", "arguments": write}],
            }
        return {
            "content": "Checking. " * 500,
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "big.txt"}},
                {"name": "run", "arguments": {"command": "wc -c big.txt"}},
            ],
        }

    limit = 60_000
    with FakeOpenAI(model) as server:
        llm = LLMConfig(
            model="openai/fake",
            api_base=server.api_base,
            api_key="sk-local",
            wait_initial_s=0.01,
            wait_max_s=0.02,
        )
        builder = Builder.start(Home(home), BuildConfig(llm=llm, context_chars=limit), "a tool")
        phase = builder.run_phase("plan", 8)
    assert phase.outcome == "budget_exhausted" and phase.rounds == 8 and len(sent) == 8
    assert (builder.run.workspace / "big.txt").stat().st_size == len(big)  # written whole

    assert [s["weight"] for s in sent if s["weight"] > limit] == []
    first = sent[0]["messages"][:2]
    assert first[0]["role"] == "system" and "You are the builder" in first[0]["content"]
    assert all(s["messages"][:2] == first for s in sent)  # the opening is whole every time
    for s in sent[1:]:
        write = s["messages"][2]["tool_calls"][0]["function"]
        args = json.loads(write["arguments"])  # still a JSON object, with the same keys
        assert write["name"] == "write_file" and set(args) == {"path", "content"}
        assert args["path"] == "big.txt"
        content = args["content"]
        head, tail = content.split("\n[... ")[0], content.split(" ...]\n")[-1]
        assert big.startswith(head) and big.endswith(tail) and tail
        assert len(head) + elided(content) + len(tail) == len(big)
        for message in s["messages"]:
            for c in message.get("tool_calls") or []:
                assert isinstance(json.loads(c["function"]["arguments"]), dict)
    # the log holds the file once, in the response that wrote it, not in every request
    assert builder.run.llm_path.stat().st_size < 1.2 * len(big)


def test_a_huge_recent_tool_result_keeps_a_head_and_a_tail_and_small_ones_stay_whole():
    huge = "".join(f"output line {i}\n" for i in range(100_000))
    messages = [
        *opening(),
        call("run", {"command": "ls"}, n=1),
        result("a.py\nb.py\n", n=1),
        call("run", {"command": "make test"}, n=2),
        result(huge, n=2),
    ]
    small = copy.deepcopy(messages[:5])
    compact(messages, 40_000)
    assert weight(messages) <= 40_000
    assert messages[:5] == small  # all recent: only the one that breaks the budget is cut
    cut = messages[5]["content"]
    assert cut.startswith("output line 0\n") and cut.endswith("output line 99999\n")
    assert "run the command again" in cut
    kept = len(cut) - len(re.search(r"\n\[\.\.\. .*? \.\.\.\]\n", cut).group(0))
    assert kept + elided(cut) == len(huge)


def test_old_replies_and_arguments_count_and_go_oldest_first():
    """Tool results are tiny here: what fills the context is the model's own text."""
    messages = opening()
    for n in range(30):
        write = {"path": f"m{n}.py", "content": f"# module {n}\n" + "x = 1\n" * 1000}
        messages += [call("write_file", write, "Plan: " + "step. " * 800, n), result("ok", n)]
    recent = copy.deepcopy(messages[-KEEP_RECENT:])
    limit = 150_000
    assert weight(messages) > 2 * limit
    compact(messages, limit)
    assert weight(messages) <= limit * LOW_WATER
    assert messages[-KEEP_RECENT:] == recent
    trimmed = [
        i for i, m in enumerate(messages) if m["role"] == "assistant" and "elided" in m["content"]
    ]
    old = [i for i, m in enumerate(messages[:-KEEP_RECENT]) if m["role"] == "assistant"]
    assert trimmed and trimmed == old[: len(trimmed)]  # a run of the oldest ones
    for i in trimmed:
        args = json.loads(messages[i]["tool_calls"][0]["function"]["arguments"])
        assert set(args) == {"path", "content"} and "elided" in args["content"]
        assert args["path"] == f"m{(i - 2) // 2}.py"


def test_the_opening_is_never_cut_and_a_conversation_within_the_budget_is_left_alone():
    messages = [*opening(), call("run", {"command": "ls"}), result("x" * 5000)]
    before = copy.deepcopy(messages)
    compact(messages, weight(messages) + 10)
    assert messages == before
    messages[0]["content"] *= 20  # an opening over the budget is sent whole
    before = copy.deepcopy(messages)
    compact(messages, 10_000)
    assert messages[:2] == before[:2] and "elided" in messages[3]["content"]


def test_a_trim_leaves_room_so_the_next_rounds_change_nothing_before_them():
    messages = opening()
    snapshots = []
    for n in range(40):
        compact(messages, 60_000)
        snapshots.append(copy.deepcopy(messages))
        messages += [call("read_file", {"path": f"f{n}.py"}, n=n), result("y = 2\n" * 500, n)]
    changed = [n for n in range(1, 40) if snapshots[n][: len(snapshots[n - 1])] != snapshots[n - 1]]
    assert 0 < len(changed) <= 15  # about one trim in four rounds, not one every round


def test_arguments_that_are_not_json_stay_json_and_counts_add_up_across_cuts():
    broken = "{not json " + "z" * 50_000
    messages = [*opening(), call("write_file", broken, n=1), result("error", n=1)]
    compact(messages, 20_000)
    args = json.loads(messages[2]["tool_calls"][0]["function"]["arguments"])
    assert list(args) == ["unparsed_arguments"]
    assert args["unparsed_arguments"].startswith("{not json z")
    first = elided(args["unparsed_arguments"])
    for n in range(2, 2 + KEEP_RECENT):  # it becomes old, and is cut again, to a stub
        messages += [call("run", {"command": "ls " + "q" * 3000}, n=n), result("w" * 3000, n)]
        compact(messages, 20_000)
    again = json.loads(messages[2]["tool_calls"][0]["function"]["arguments"])
    text = again["unparsed_arguments"]
    assert elided(text) > first and len(text) < 400
    kept = len(text) - len(re.search(r"\n\[\.\.\. .*? \.\.\.\]\n", text).group(0))
    assert kept + elided(text) == len(broken)


def test_a_phase_of_hundreds_of_rounds_cuts_its_old_stubs_again_to_stay_within_the_budget():
    messages = opening()
    worst = 0
    for n in range(250):
        compact(messages, 170_000)
        worst = max(worst, weight(messages))
        write = {"path": f"m{n}.py", "content": "x = 1\n" * 300}
        messages += [call("write_file", write, n=n), result(f"wrote m{n}.py\n" + "ok\n" * 100, n)]
    assert worst <= 170_000  # stubs of 200 characters alone would weigh some 200,000
    assert messages[:2] == opening()
    stub = json.loads(messages[2]["tool_calls"][0]["function"]["arguments"])
    assert len(stub["content"]) < 200 and elided(stub["content"]) + 30 == 1800
    assert messages[3]["content"].startswith("wrote m0.py\n[... 312 characters elided")
