"""Model back ends that ship with cadillac: ``replay:PATH`` and ``scripted:NAME``.

Both are registered as litellm custom providers, so a build on a recorded or
scripted model takes exactly the path a real model takes: the same
``litellm.completion`` call, the same retries, the same ``llm.jsonl`` lines.

* ``replay:PATH`` answers with the responses recorded in a run's ``llm.jsonl``
  (the lines that have a response, in order; failed attempts and event lines have
  none). Only responses are read, so a log of either form replays: the earlier one,
  whose lines hold the whole conversation, and the current one, whose lines hold the
  new messages only (:mod:`orchestrator.llm.client`). A run that asks for more than
  was recorded gets a bad-request error that names the file and the count,
  which ends the run instead of being retried.
* ``scripted:NAME`` answers from a script registered in this process with
  :func:`register_script`: a list of responses, or a policy
  ``f(messages, tools) -> response`` that sees the conversation;
  ``scripted:package.module:function`` imports such a policy (from the command line). A response is
  a string (plain content) or ``{"content": ..., "tool_calls": [{"name": ...,
  "arguments": {...}}]}``. Tests and the demo use these.

Each :class:`~orchestrator.llm.client.LLMClient` opens its own session, so two runs
replaying one file in one process do not share a cursor.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any

Response = str | dict[str, Any]
Policy = Callable[[list[dict], list[dict] | None], Response]

_SCRIPTS: dict[str, list[Response] | Policy] = {}
_SESSIONS: dict[str, _Session] = {}
_counter = itertools.count(1)
_registered = False


class _Session:
    def __init__(self, source: str, responses: list[Response] | None, policy: Policy | None):
        self.source = source
        self.responses = responses
        self.policy = policy
        self.served = 0

    def next(self, messages: list[dict], tools: list[dict] | None) -> Response:
        if self.policy is not None:
            self.served += 1
            return self.policy(messages, tools)
        assert self.responses is not None
        if self.served >= len(self.responses):
            raise IndexError(
                f"{self.source} holds {len(self.responses)} response(s) and the run asked "
                f"for response {self.served + 1}: the recording ended before the run did"
            )
        self.served += 1
        return self.responses[self.served - 1]


def register_script(name: str, script: list[Response] | Policy) -> str:
    """Make ``scripted:NAME`` answer from ``script``; returns the model string."""
    _SCRIPTS[name] = script if callable(script) else list(script)
    return f"scripted:{name}"


def recorded_responses(path: Path) -> list[Response]:
    """The responses of an ``llm.jsonl``, in order (failed attempts and events have none)."""
    if not path.is_file():
        raise FileNotFoundError(f"replay file {path} does not exist")
    out: list[Response] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if isinstance(record, dict) and record.get("response"):
            out.append(record["response"])
    return out


def open_session(model: str) -> str:
    """A fresh session for a replay:/scripted: model; returns the litellm model string."""
    kind, _, arg = model.partition(":")
    key = f"s{next(_counter)}"
    if kind == "replay":
        path = Path(arg).expanduser()
        _SESSIONS[key] = _Session(f"replay file {path}", recorded_responses(path), None)
        return f"cadillac-replay/{key}"
    if kind == "scripted":
        if arg not in _SCRIPTS and ":" in arg:  # scripted:package.module:policy
            module_name, _, attr = arg.partition(":")
            try:
                register_script(arg, getattr(import_module(module_name), attr))
            except (ImportError, AttributeError) as exc:
                raise KeyError(f"cannot load policy {arg!r}: {exc}") from None
        if arg not in _SCRIPTS:
            raise KeyError(f"no script named {arg!r} is registered")
        script = _SCRIPTS[arg]
        if callable(script):
            _SESSIONS[key] = _Session(f"script {arg!r}", None, script)
        else:
            _SESSIONS[key] = _Session(f"script {arg!r}", list(script), None)
        return f"cadillac-scripted/{key}"
    return model


def is_builtin(model: str) -> bool:
    return model.startswith(("replay:", "scripted:"))


def _message(spec: Response) -> dict[str, Any]:
    if isinstance(spec, str):
        return {"role": "assistant", "content": spec}
    calls = []
    for i, call in enumerate(spec.get("tool_calls") or []):
        if "function" in call:  # already in OpenAI form (a recorded response)
            calls.append(
                {
                    "id": call.get("id") or f"call_{i}",
                    "type": "function",
                    "function": dict(call["function"]),
                }
            )
            continue
        args = call.get("arguments", {})
        calls.append(
            {
                "id": call.get("id") or f"call_{i}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        )
    message: dict[str, Any] = {"role": "assistant", "content": spec.get("content")}
    if calls:
        message["tool_calls"] = calls
    return message


def register(litellm) -> None:
    """Add the back ends to litellm's custom providers (once per process)."""
    global _registered
    if _registered:
        return
    from litellm import CustomLLM, ModelResponse

    class Handler(CustomLLM):
        def __init__(self, provider: str):
            super().__init__()
            self.provider = provider

        def completion(self, model: str, messages: list, *args, **kwargs):
            session = _SESSIONS.get(model)
            if session is None:
                raise litellm.BadRequestError(
                    message=f"unknown {self.provider} session {model!r}",
                    model=model,
                    llm_provider=self.provider,
                )
            tools = (kwargs.get("optional_params") or {}).get("tools")
            try:
                message = _message(session.next(messages, tools))
            except IndexError as exc:
                raise litellm.BadRequestError(
                    message=str(exc), model=model, llm_provider=self.provider
                ) from None
            text = json.dumps(messages, default=str)
            out_text = json.dumps(message)
            return ModelResponse(
                model=f"{self.provider}/{session.source}",
                choices=[
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    }
                ],
                usage={
                    "prompt_tokens": len(text) // 4,
                    "completion_tokens": len(out_text) // 4,
                    "total_tokens": (len(text) + len(out_text)) // 4,
                },
            )

    existing = [p for p in litellm.custom_provider_map if not p["provider"].startswith("cadillac-")]
    litellm.custom_provider_map = [
        *existing,
        {"provider": "cadillac-replay", "custom_handler": Handler("cadillac-replay")},
        {"provider": "cadillac-scripted", "custom_handler": Handler("cadillac-scripted")},
    ]
    _registered = True
