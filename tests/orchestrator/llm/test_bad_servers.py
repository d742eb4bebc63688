"""Servers and back ends that answer badly, and what the user is told: one line that names
the server and says what it sent, the attempt logged, retried only when a retry can help.

Every test talks to litellm for real, over HTTP to the fake server on 127.0.0.1 (or to a
port nothing listens on), or through the scripted and replay back ends."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from orchestrator.llm.backends import register_script
from orchestrator.llm.client import LLMClient, LLMConfig, ModelError, check_model
from tests.fakes.openai_server import FakeOpenAI, completion

ROOT = Path(__file__).resolve().parents[3]
HELLO = [{"role": "user", "content": "hello"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "write",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
LITELLM_JUNK = ("Traceback", "OpenAIException", "litellm.", "received_args", "\n")


def client(tmp_path, model: str, **kw) -> LLMClient:
    config = LLMConfig(model=model, wait_initial_s=0.01, wait_max_s=0.02, **kw)
    return LLMClient(config, log_path=tmp_path / "llm.jsonl", sleep=lambda s: None)


def lines(tmp_path) -> list[dict]:
    path = tmp_path / "llm.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_bytes().decode("utf-8").splitlines()]


def raw(body: dict | str, status: int = 200) -> dict:
    return {"raw": body if isinstance(body, str) else json.dumps(body), "status": status}


def said(message: str, server: FakeOpenAI | None = None) -> str:
    """``message`` as a user reads it: one clean line (naming the server, if given)."""
    for junk in LITELLM_JUNK:
        assert junk not in message, f"{junk!r} in {message!r}"
    if server is not None:
        assert server.api_base in message
    return message


HI = completion({"role": "assistant", "content": "hi"})
SURROGATE = json.dumps(HI).replace('"hi"', '"bad \\ud800 text"')  # JSON's escape, sent as is
NO_CHOICES = {**HI, "choices": []}


# 6: a lone surrogate, an empty choices list


def test_a_reply_with_a_lone_surrogate_is_logged_and_retried_as_a_server_error(tmp_path):
    with FakeOpenAI([raw(SURROGATE), "fine"]) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base)
        assert llm.complete(HELLO).content == "fine"
    logged = lines(tmp_path)  # the log is still UTF-8 (read strictly above)
    assert [r["attempt"] for r in logged] == [1, 2]
    assert "lone surrogate" in logged[0]["error"] and "\\ud800" in logged[0]["error"]
    assert "response" not in logged[0]  # a replay does not play the bad answer back
    assert llm.totals.failed_attempts == 1 and llm.totals.calls == 1


def test_a_server_that_keeps_sending_surrogates_is_named_with_what_it_sent(tmp_path):
    with FakeOpenAI(lambda body: raw(SURROGATE)) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base, max_attempts=2)
        with pytest.raises(ModelError) as caught:
            llm.complete(HELLO)
    message = said(str(caught.value), server)
    assert message.startswith("every model failed (openai/m)")
    assert "lone surrogate" in message and "\\ud800" in message and "content" in message
    assert len(server.requests) == 2 and len(lines(tmp_path)) == 2


def test_a_surrogate_in_tool_arguments_is_a_bad_answer_too(tmp_path):
    call = {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": "X"}}
    body = json.dumps(completion({"role": "assistant", "content": None, "tool_calls": [call]}))
    body = body.replace('"X"', '"{\\"path\\": \\"\\ud800\\"}"')
    with FakeOpenAI([raw(body), "fine"]) as server:
        assert client(tmp_path, "openai/m", api_base=server.api_base).complete(HELLO, TOOLS)
    assert "lone surrogate" in lines(tmp_path)[0]["error"]
    assert "write_file" in lines(tmp_path)[0]["error"]


def test_an_empty_choices_list_is_logged_and_retried_as_a_server_error(tmp_path):
    with FakeOpenAI([raw(NO_CHOICES), "fine"]) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base)
        assert llm.complete(HELLO).content == "fine"
    logged = lines(tmp_path)
    assert len(logged) == 2 and "no choices" in logged[0]["error"]
    with FakeOpenAI(lambda body: raw(NO_CHOICES)) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base, max_attempts=3)
        with pytest.raises(ModelError) as caught:
            llm.complete(HELLO)
    message = said(str(caught.value), server)
    assert "answered with no choices" in message and "list index" not in message
    assert len(server.requests) == 3


# 19: litellm's words, connection errors, malformed api bases, 404, a policy that raises


@pytest.mark.parametrize(
    "body",
    [
        {**HI, "choices": None},
        {k: v for k, v in HI.items() if k != "choices"},
        {**HI, "choices": [{"index": 0, "message": "hi", "finish_reason": "stop"}]},
    ],
    ids=["null-choices", "no-choices", "message-is-a-string"],
)
def test_an_answer_that_is_not_a_chat_completion_is_one_clean_line(tmp_path, body):
    with FakeOpenAI(lambda request: raw(body)) as server, warnings.catch_warnings(record=True) as w:
        llm = client(tmp_path, "openai/m", api_base=server.api_base, max_attempts=2)
        with pytest.raises(ModelError) as caught:
            llm.complete(HELLO)
    message = said(str(caught.value), server)
    assert "not a chat completion" in message
    assert not [str(x.message) for x in w if "Pydantic" in str(x.message)]
    assert all(said(r["error"]) for r in lines(tmp_path))  # the log is clean too


NOT_UTF8 = json.dumps(HI).encode().replace(b'"hi"', b'"bad \xff\xfe"')


def test_an_answer_that_is_not_utf8_is_one_clean_line(tmp_path):
    """litellm's message names its own response classes; the user hears what the server did."""
    with FakeOpenAI(lambda request: {"raw": NOT_UTF8, "status": 200}) as server:
        llm = client(tmp_path, "openai/m", api_base=server.api_base, max_attempts=2)
        with pytest.raises(ModelError) as caught:
            llm.complete(HELLO)
    message = said(str(caught.value), server)
    assert "not valid UTF-8 (byte 0xff at position" in message
    assert "APIResponse" not in message and "LegacyAPIResponse" not in message
    assert all("not valid UTF-8" in said(r["error"]) for r in lines(tmp_path))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_closed_port_names_the_url_and_the_reason(tmp_path):
    base = f"http://127.0.0.1:{free_port()}/v1"
    llm = client(tmp_path, "openai/m", api_base=base, max_attempts=2)
    with pytest.raises(ModelError) as caught:
        llm.complete(HELLO)
    message = said(str(caught.value))
    assert f"cannot connect to {base}" in message and "refused" in message
    assert len(lines(tmp_path)) == 2  # still a retryable error: the server may come up


@pytest.mark.parametrize(
    ("base", "why"),
    [
        ("notaurl", "http:// or https://"),
        ("http://127.0.0.1:99999/v1", "port"),
        ("ftp://x", "http:// or https://"),
        ("localhost:11434", "http://localhost:11434"),
        ("http:///v1", "host"),
    ],
)
def test_a_malformed_api_base_is_refused_up_front_in_one_line(base, why):
    with pytest.raises(ModelError) as caught:
        LLMConfig(model="openai/m", api_base=base)
    message = said(str(caught.value))
    assert repr(base) in message and why in message
    with pytest.raises(ModelError, match="fallback"):
        LLMConfig(model="openai/m", fallback_models=["openai/b"], fallback_api_bases=[base])
    with pytest.raises(ModelError):
        check_model("openai/m", api_base=base)


def test_good_api_bases_are_taken():
    for base in ("http://127.0.0.1:8080/v1", "https://example.invalid", "http://b/v1", None):
        assert LLMConfig(model="openai/m", api_base=base).api_base == base
        check_model("openai/m", api_base=base)


def test_a_404_from_a_server_says_which_server_and_which_model(tmp_path):
    with FakeOpenAI([{"status": 404}, "never"]) as server:
        llm = client(tmp_path, "openai/x", api_base=server.api_base)
        with pytest.raises(ModelError) as caught:
            llm.complete(HELLO)
    message = said(str(caught.value), server)
    assert f"the server at {server.api_base} answered 404 for model 'x'" in message
    assert "not known to litellm" not in message
    assert len(server.requests) == 1


def broken_policy(messages, tools):
    table = {"other": 1}
    return table["name"]  # the line the error names


BROKEN_LINE = broken_policy.__code__.co_firstlineno + 2


def test_a_policy_that_raises_is_a_bug_in_the_policy_named_by_file_and_line(tmp_path):
    llm = client(tmp_path, register_script("raises", broken_policy))
    with pytest.raises(ModelError) as caught:
        llm.complete(HELLO)
    message = said(str(caught.value))
    assert "KeyError" in message and "'name'" in message
    assert f"test_bad_servers.py:{BROKEN_LINE}" in message
    assert "APIConnectionError" not in message
    assert len(lines(tmp_path)) == 1  # not retried: a retry runs the same bug


def test_a_policy_loaded_by_import_path_that_raises_is_named_too(tmp_path):
    llm = client(tmp_path, "scripted:tests.orchestrator.llm.test_bad_servers:broken_policy")
    with pytest.raises(ModelError, match=rf"test_bad_servers\.py:{BROKEN_LINE}"):
        llm.complete(HELLO)
    assert len(lines(tmp_path)) == 1


# 20: tool arguments as an object


OBJECT_ARGS = completion(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "write_file", "arguments": {"path": "a.py"}},
            }
        ],
    }
)


def test_tool_arguments_sent_as_an_object_are_taken_as_the_arguments(tmp_path):
    with FakeOpenAI([raw(OBJECT_ARGS)]) as server, warnings.catch_warnings(record=True) as w:
        reply = client(tmp_path, "openai/m", api_base=server.api_base).complete(HELLO, TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("write_file", {"path": "a.py"})
    ]
    assert not [str(x.message) for x in w if "Pydantic" in str(x.message)]


def test_tool_arguments_as_an_object_print_no_warning_on_the_terminal(tmp_path):
    probe = (
        "import sys\n"
        "from orchestrator.llm.client import LLMClient, LLMConfig\n"
        "llm = LLMClient(LLMConfig(model='openai/m', api_base=sys.argv[1]))\n"
        "reply = llm.complete([{'role': 'user', 'content': 'x'}])\n"
        "print(reply.tool_calls[0].arguments)\n"
    )
    with FakeOpenAI([raw(OBJECT_ARGS)]) as server:
        done = subprocess.run(
            [sys.executable, "-c", probe, server.api_base],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"path": "a.py"}
    assert "Pydantic" not in done.stderr and "Warning" not in done.stderr, done.stderr


# 21: replay of a folder, the quotes of loader errors


def test_replay_of_a_folder_says_it_is_a_folder_not_a_recording(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    for attempt in (
        lambda: client(tmp_path, f"replay:{folder}"),
        lambda: check_model(f"replay:{folder}"),
    ):
        with pytest.raises(ModelError) as caught:
            attempt()
        message = said(str(caught.value))
        assert "is a folder, not a recording" in message and "does not exist" not in message
    with pytest.raises(ModelError, match="does not exist"):
        check_model(f"replay:{tmp_path / 'nope.jsonl'}")


def test_loader_errors_are_said_without_an_extra_layer_of_quotes(tmp_path):
    with pytest.raises(ModelError) as caught:
        client(tmp_path, "scripted:nosuch")
    assert str(caught.value) == "model 'scripted:nosuch': no script named 'nosuch' is registered"
    with pytest.raises(ModelError) as caught:
        check_model("scripted:nosuch")
    assert '"' not in str(caught.value)
    with pytest.raises(ModelError) as caught:
        client(tmp_path, "scripted:tests.fakes.policies:nope")
    assert str(caught.value).startswith("model 'scripted:tests.fakes.policies:nope': cannot load")
    assert '"' not in str(caught.value)


# README: a local server needs no key


@pytest.fixture
def no_keys(monkeypatch):
    """No *_API_KEY variable (nor a provider's base URL) is set, as on a new machine."""
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_API_BASE", "_BASE_URL", "_AUTH_TOKEN", "_ADMIN_KEY")):
            monkeypatch.delenv(name)


def test_a_local_server_needs_no_key(tmp_path, no_keys):
    with FakeOpenAI(["hi"]) as server:
        assert client(tmp_path, "openai/local", api_base=server.api_base).complete(HELLO)
    assert server.headers[0]["authorization"] == "Bearer sk-no-key"


def test_a_whole_build_on_a_local_server_needs_no_key(home, no_keys, capsys):
    from orchestrator.cli import main

    spec = importlib.util.spec_from_file_location("wordfreq", ROOT / "examples/wordfreq/policy.py")
    wordfreq = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wordfreq)
    with FakeOpenAI(lambda body: wordfreq.policy(body["messages"], body.get("tools"))) as server:
        code = main(
            ["build", wordfreq.TASK, "--model", "openai/local", "--api-base", server.api_base]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "API key" not in err and len(server.requests) > 6
    assert {h["authorization"] for h in server.headers} == {"Bearer sk-no-key"}
