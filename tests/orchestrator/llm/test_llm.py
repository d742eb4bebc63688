"""Model calls through litellm: scripted and replay back ends, real HTTP, retries, fallbacks,
the circuit breaker, keys, and the log (linear, rebuilt, replayed)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from orchestrator.llm.backends import register_script
from orchestrator.llm.client import LLMClient, LLMConfig, ModelError
from tests.fakes.openai_server import FakeOpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "write",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
HELLO = [{"role": "user", "content": "hello"}]


def lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


class Waits(list):
    """Records the back-off waits instead of sleeping them."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client(tmp_path, model: str, **kw) -> LLMClient:
    config = LLMConfig(model=model, wait_initial_s=0.01, wait_max_s=0.02, **kw)
    return LLMClient(config, log_path=tmp_path / "llm.jsonl", sleep=kw.pop("sleep", Waits()))


def test_scripted_model_answers_with_tool_calls_and_every_call_is_logged(tmp_path):
    model = register_script(
        "two-turns",
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.py"}}]},
            "done",
        ],
    )
    llm = client(tmp_path, model)
    first = llm.complete(HELLO, TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("write_file", {"path": "a.py"})
    ]
    assert llm.complete(HELLO, TOOLS).content == "done"
    logged = lines(tmp_path / "llm.jsonl")
    assert [r["seq"] for r in logged] == [1, 2]
    assert logged[0]["response"]["tool_calls"][0]["function"]["name"] == "write_file"
    assert logged[0]["request"]["messages"] == HELLO
    assert all(r["tokens_in"] > 0 and r["cost_usd"] is None for r in logged)
    assert llm.totals.calls == 2 and llm.totals.tokens_in > 0 and llm.totals.cost_usd is None


def test_a_policy_script_sees_the_conversation(tmp_path):
    model = register_script("echo", lambda messages, tools: f"{len(messages)}:{len(tools or [])}")
    assert client(tmp_path, model).complete(HELLO * 3, TOOLS).content == "3:1"


def test_replay_plays_a_recording_back_and_says_when_it_runs_out(tmp_path):
    model = register_script(
        "to-record", ["one", {"tool_calls": [{"name": "write_file", "arguments": {"path": "x"}}]}]
    )
    recorder = client(tmp_path, model)
    recorder.complete(HELLO)
    recorder.complete(HELLO, TOOLS)
    recording = tmp_path / "recorded.jsonl"
    (tmp_path / "llm.jsonl").rename(recording)
    replay = client(tmp_path, f"replay:{recording}")
    assert replay.complete(HELLO).content == "one"
    assert replay.complete(HELLO, TOOLS).tool_calls[0].name == "write_file"
    with pytest.raises(ModelError, match=r"holds 2 response\(s\) and the run asked for response 3"):
        replay.complete(HELLO)
    assert replay.totals.failed_attempts == 0  # not retried, so not counted as retried


def test_missing_or_unknown_models_say_how_to_set_one(tmp_path):
    with pytest.raises(ModelError, match="CADILLAC_MODEL or pass --model"):
        LLMClient(LLMConfig(model=""))
    with pytest.raises(ModelError, match="not known to litellm.*make demo"):
        client(tmp_path, "no-such-provider-model").complete(HELLO)
    with pytest.raises(ModelError, match="does not exist"):
        client(tmp_path, f"replay:{tmp_path / 'nope.jsonl'}")
    with pytest.raises(ModelError, match="no script named"):
        client(tmp_path, "scripted:never-registered")


def test_real_http_with_a_429_and_a_500_is_retried_and_logged(tmp_path):
    script = [
        {"status": 429, "headers": {"Retry-After": "0"}},
        {"status": 500},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.py"}}]},
    ]
    with FakeOpenAI(script) as server:
        llm = client(tmp_path, "openai/fake-model", api_base=server.api_base, api_key="sk-test")
        reply = llm.complete(HELLO, TOOLS)
    assert reply.tool_calls[0].name == "write_file"
    assert len(server.requests) == 3
    assert server.requests[0]["tools"][0]["function"]["name"] == "write_file"
    logged = lines(tmp_path / "llm.jsonl")
    assert [r.get("status") for r in logged] == [429, 500, None]
    assert "RateLimitError" in logged[0]["error"] and "InternalServerError" in logged[1]["error"]
    assert logged[2]["tokens_in"] == 11 and logged[2]["tokens_out"] == 7
    assert llm.totals.failed_attempts == 2 and llm.totals.calls == 1


def test_retry_after_is_honoured(tmp_path):
    waits = Waits()
    script = [{"status": 429, "headers": {"Retry-After": "1.5"}}, "ok"]
    with FakeOpenAI(script) as server:
        config = LLMConfig(
            model="openai/m",
            api_base=server.api_base,
            api_key="k",
            wait_initial_s=0.01,
            wait_max_s=0.02,
        )
        assert LLMClient(config, sleep=waits).complete(HELLO).content == "ok"
    assert waits == [1.5]


def test_a_timeout_is_retried(tmp_path):
    script = [{"delay_s": 2.0, "content": "late"}, "on time"]
    with FakeOpenAI(script) as server:
        llm = client(
            tmp_path, "openai/m", api_base=server.api_base, api_key="k", request_timeout_s=0.5
        )
        assert llm.complete(HELLO).content == "on time"
    assert "Timeout" in lines(tmp_path / "llm.jsonl")[0]["error"]


@pytest.mark.parametrize(
    ("status", "words"), [(401, "refused the key"), (400, "refused the request")]
)
def test_auth_and_bad_requests_are_not_retried(tmp_path, status, words):
    with FakeOpenAI([{"status": status}, "never"]) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base, api_key="k")
        with pytest.raises(ModelError, match=words):
            llm.complete(HELLO)
    assert len(server.requests) == 1


def test_fallback_model_takes_over_when_the_primary_keeps_failing(tmp_path):
    backup = register_script("backup", ["from the fallback"])
    with FakeOpenAI(lambda body: {"status": 503}) as server:
        llm = client(
            tmp_path,
            "openai/m",
            api_base=server.api_base,
            api_key="k",
            fallback_models=[backup],
            max_attempts=3,
        )
        reply = llm.complete(HELLO)
    assert reply.content == "from the fallback" and reply.model == backup
    assert len(server.requests) == 3


def test_every_model_failing_is_one_clear_error(tmp_path):
    with FakeOpenAI(lambda body: {"status": 500}) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base, api_key="k", max_attempts=2)
        with pytest.raises(ModelError, match="every model failed"):
            llm.complete(HELLO)


def test_litellm_reaches_no_network_when_imported_and_used_offline(tmp_path):
    probe = (
        "import socket\n"
        "def refuse(*a, **k):\n    raise SystemExit('network touched: %r' % (a,))\n"
        "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
        "from orchestrator.llm.backends import register_script\n"
        "from orchestrator.llm.client import LLMClient, LLMConfig\n"
        "model = register_script('offline', ['fine'])\n"
        "print(LLMClient(LLMConfig(model=model)).complete([{'role': 'user', 'content': 'x'}])"
        ".content)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("fine")


def test_a_policy_can_be_named_by_import_path(tmp_path):
    llm = client(tmp_path, "scripted:tests.fakes.policies:last_user_words")
    assert llm.complete([{"role": "user", "content": "one two three"}]).content == "3 words"
    with pytest.raises(ModelError, match="cannot load policy"):
        client(tmp_path, "scripted:tests.fakes.policies:nope")


def test_each_model_keeps_its_own_server_and_a_local_server_never_gets_a_provider_key(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-hosted-canary")
    with FakeOpenAI(lambda body: {"status": 503}) as primary, FakeOpenAI(["local"]) as second:
        llm = client(
            tmp_path,
            "openai/primary",
            api_base=primary.api_base,
            fallback_models=["openai/second"],
            fallback_api_bases=[second.api_base],
            max_attempts=2,
        )
        assert llm.complete(HELLO).content == "local"
    assert [r["model"] for r in primary.requests] == ["primary", "primary"]
    assert [r["model"] for r in second.requests] == ["second"]  # not sent to the primary's
    for h in primary.headers + second.headers:
        assert h["authorization"] == "Bearer sk-no-key"
    monkeypatch.setenv("CADILLAC_API_KEY", "sk-for-the-local-server")
    with FakeOpenAI(["ok"]) as server:
        client(tmp_path, "openai/m", api_base=server.api_base).complete(HELLO)
    assert server.headers[0]["authorization"] == "Bearer sk-for-the-local-server"


def test_a_trial_gets_only_the_variables_its_models_need(monkeypatch):
    from orchestrator.llm.keys import provider_env

    assert provider_env("openai/gpt-4o", None)[0] == "OPENAI_API_KEY"
    assert provider_env("anthropic/claude-sonnet-4-5", None) == ("ANTHROPIC_API_KEY",)
    assert provider_env("openai/local", "http://127.0.0.1:8080/v1") == ("CADILLAC_API_KEY",)
    assert provider_env("scripted:x", None) == () and provider_env("replay:/x", None) == ()


def conversation(llm: LLMClient, rounds: int, trim=None) -> tuple[list[list[dict]], list]:
    """A build-like loop: each round the model answers, a tool result follows. Returns the
    messages of every request as sent (copies) and the replies."""
    messages = [
        {"role": "system", "content": "You are the builder. " * 50},
        {"role": "user", "content": "Task: count words. " * 20},
    ]
    sent, replies = [], []
    for n in range(rounds):
        if trim is not None:
            trim(messages)
        sent.append(json.loads(json.dumps(messages)))
        reply = llm.complete(messages, TOOLS)
        replies.append(reply.as_message())
        messages.append(reply.as_message())
        answer = f"r{n} " * 700
        messages.append({"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": answer})
    return sent, replies


def writer(messages: list[dict], tools=None) -> dict:
    """A model that writes a file of about 2 KB each turn."""
    content = f"# file {len(messages)}\n" + "print('hello')\n" * 150
    write = {"path": f"f{len(messages)}.py", "content": content}
    return {"tool_calls": [{"name": "write_file", "arguments": write}]}


def test_the_log_grows_linearly_and_every_request_can_be_rebuilt_and_replayed(tmp_path):
    from orchestrator.llm.client import logged_messages, logged_requests

    faults = {7, 19}  # two requests fail once: their retries are logged too

    def answer(body: dict):
        if len(server.requests) in faults:
            return {"status": 503}
        return writer(body["messages"])

    with FakeOpenAI(answer) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base, api_key="k")
        sent, replies = conversation(llm, 40)
    log = tmp_path / "llm.jsonl"
    logged = lines(log)
    assert len(logged) == 42 and [r["seq"] for r in logged] == list(range(1, 43))
    conversation_size = len(json.dumps(sent[-1])) + len(json.dumps(replies[-1]))
    every_request = sum(len(json.dumps(m)) for m in sent)
    assert every_request > 15 * conversation_size  # what logging every request whole costs
    assert log.stat().st_size < 2 * conversation_size + 42 * 400  # what the log costs now

    rebuilt = logged_requests(log)
    assert [r["seq"] for r, _ in rebuilt] == list(range(1, 43))
    answered = [messages for record, messages in rebuilt if "response" in record]
    assert answered == sent  # every request exactly as it was sent
    assert logged[0]["request"] == {"skip": 0, "messages": sent[0], "tools": True}
    retried = [r for r in logged if r["attempt"] == 2]
    assert [r["request"]["messages"] for r in retried] == [[], []]  # a retry adds nothing
    assert all(r["request"]["after"] == r["seq"] - 1 for r in retried)
    assert logged_messages(log, 30) == rebuilt[29][1]

    replay = LLMClient(LLMConfig(model=f"replay:{log}"), log_path=tmp_path / "replayed.jsonl")
    again, replayed = conversation(replay, 40)
    assert replayed == replies and again == sent
    assert [m for _, m in logged_requests(tmp_path / "replayed.jsonl")] == sent


def test_requests_are_rebuilt_exactly_when_compaction_trims_old_messages_in_place(tmp_path):
    from orchestrator.llm.client import logged_requests
    from orchestrator.loop.context import compact

    llm = client(tmp_path, register_script("compacted", writer))
    sent, _ = conversation(llm, 40, trim=lambda messages: compact(messages, 40_000))
    assert max(len(json.dumps(m)) for m in sent) <= 40_000
    assert any("elided" in json.dumps(m[2:3]) for m in sent)  # old messages did change
    assert [m for _, m in logged_requests(tmp_path / "llm.jsonl")] == sent


def test_a_log_of_the_earlier_form_is_still_read_and_replayed(tmp_path):
    from orchestrator.llm.client import logged_requests

    first = [{"role": "user", "content": "hello"}]
    second = [*first, {"role": "assistant", "content": "one"}, {"role": "user", "content": "more"}]
    old = tmp_path / "old.jsonl"
    old.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "v": 1,
                    "seq": 1,
                    "model": "m",
                    "attempt": 1,
                    "error": "x",
                    "status": 503,
                    "request": {"messages": first, "tools": False},
                },
                {
                    "v": 1,
                    "seq": 2,
                    "model": "m",
                    "attempt": 2,
                    "request": {"messages": first, "tools": False},
                    "response": {"role": "assistant", "content": "one"},
                },
                {
                    "v": 1,
                    "seq": 3,
                    "model": "m",
                    "attempt": 1,
                    "request": {"messages": second, "tools": False},
                    "response": {"role": "assistant", "content": "two"},
                },
            ]
        )
        + "\n"
    )
    assert [m for _, m in logged_requests(old)] == [first, first, second]
    replay = client(tmp_path, f"replay:{old}")
    assert [replay.complete(first).content, replay.complete(second).content] == ["one", "two"]


def test_a_dead_primary_is_skipped_once_its_circuit_opens(tmp_path):
    slow_503 = {"status": 503, "delay_s": 0.5}
    with (
        FakeOpenAI(lambda body: slow_503) as dead,
        FakeOpenAI(lambda body: "from the fallback") as alive,
    ):
        llm = client(
            tmp_path,
            "openai/dead",
            api_base=dead.api_base,
            fallback_models=["openai/alive"],
            fallback_api_bases=[alive.api_base],
            max_attempts=3,
        )
        started = time.perf_counter()
        answers = [llm.complete(HELLO).content for _ in range(10)]
        took = time.perf_counter() - started
    assert answers == ["from the fallback"] * 10
    assert len(dead.requests) == 2 * 3  # two calls spent their retries, then no more
    assert len(alive.requests) == 10
    assert took < 0.5 * 10 * 3 * 0.5  # without the breaker: at least 15 s of 503s
    logged = lines(tmp_path / "llm.jsonl")
    events = [r for r in logged if "event" in r]
    assert len(events) == 1 and events[0]["event"] == "circuit_open"
    assert events[0]["model"] == "openai/dead" and events[0]["calls"] == 2
    assert logged.index(events[0]) == 2 * 4 - 1  # right after the second call's attempts


def test_when_every_model_is_open_circuited_a_call_fails_at_once(tmp_path):
    with FakeOpenAI(lambda body: {"status": 500}) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base, max_attempts=2)
        for _ in range(2):
            with pytest.raises(ModelError, match="every model failed"):
                llm.complete(HELLO)
        assert len(server.requests) == 4
        with pytest.raises(ModelError, match=r"every model failed \(openai/m\) on 2 calls"):
            llm.complete(HELLO)
        assert len(server.requests) == 4  # not asked again
    assert llm.open_circuits == {0}
    with FakeOpenAI(["late", "fine", {"status": 500}, {"status": 500}, "ok"]) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base, max_attempts=2)
        assert llm.complete(HELLO).content == "late"
        assert llm.complete(HELLO).content == "fine"
        with pytest.raises(ModelError):  # one call spent: not yet a dead model
            llm.complete(HELLO)
        assert llm.complete(HELLO).content == "ok" and llm.open_circuits == set()


@pytest.fixture
def offline(monkeypatch):
    """Connections anywhere but 127.0.0.1 fail (a test that would reach out cannot)."""
    import socket

    real = socket.socket.connect

    def connect(sock, address, *a):
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "localhost"):
            raise OSError(f"test is offline: {address!r}")
        return real(sock, address, *a)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.mark.parametrize(
    ("model", "variable"),
    [("openai/gpt-4o", "OPENAI_API_KEY"), ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY")],
)
def test_a_missing_key_ends_the_call_at_once_naming_the_variable(
    tmp_path, monkeypatch, offline, model, variable
):
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_ADMIN_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_API_BASE",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    llm = client(tmp_path, model)
    with pytest.raises(ModelError) as caught:
        llm.complete(HELLO)
    message = str(caught.value)
    assert message.startswith(f"no API key for {model!r}: set {variable} (")
    assert "\n" not in message
    assert len(lines(tmp_path / "llm.jsonl")) == 1 and llm.totals.failed_attempts == 0


def test_a_refused_key_at_a_server_names_the_variable_it_is_read_from(tmp_path):
    with FakeOpenAI([{"status": 401}, "never"]) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base)
        with pytest.raises(ModelError, match="refused the key .*; check CADILLAC_API_KEY"):
            llm.complete(HELLO)
    assert len(server.requests) == 1


def test_a_seed_reaches_the_server_and_a_scripted_model_takes_it_too(tmp_path):
    with FakeOpenAI([{"content": "one"}, {"content": "two"}]) as server:
        seeded = client(tmp_path, "openai/fake-model", api_base=server.api_base, seed=1234)
        seeded.complete(HELLO)
        plain = client(tmp_path, "openai/fake-model", api_base=server.api_base)
        plain.complete(HELLO)
    assert server.requests[0]["seed"] == 1234
    assert "seed" not in server.requests[1]
    register_script("seeded", [{"content": "ok"}])
    assert client(tmp_path, "scripted:seeded", seed=7).complete(HELLO).content == "ok"
