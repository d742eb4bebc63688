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

What cannot work is a :class:`BackendError`, said in one line: a replay file that is
missing, a folder or not a log; a script that is not registered or cannot be imported;
a recording that ended; a response of a script that is not one. A policy that raises is a
:class:`PolicyError`: a bug in the policy, named by its type, its message and the
policy's file and line. Each reaches litellm as a bad request, so it is not retried (a
retry would run the same bug); :func:`backend_error` finds it behind litellm's error.

Each :class:`~orchestrator.llm.client.LLMClient` opens its own session, so two runs
replaying one file in one process do not share a cursor.
"""

from __future__ import annotations

import itertools
import json
import os
import traceback
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


class BackendError(ValueError):
    """A replay: or scripted: model that cannot answer; its message is one line for people."""


class PolicyError(BackendError):
    """A scripted policy raised: a bug in the policy, not in the model or the network."""


def backend_error(exc: BaseException | None) -> BackendError | None:
    """The :class:`BackendError` behind ``exc`` (litellm wraps it in its own error), if any."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, BackendError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _policy_line(exc: BaseException, policy: Callable) -> str:
    """``FILE:LINE`` of the policy's line the exception came from (the innermost frame in the
    policy's file; the policy's own frame when its file is not known)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    if not frames:
        return "an unknown line"
    code = getattr(policy, "__code__", None)
    if code is None:  # a callable object: its __call__'s code
        code = getattr(vars(type(policy)).get("__call__"), "__code__", None)
    own = [f for f in frames if code is not None and f.filename == code.co_filename]
    frame = own[-1] if own else frames[0]
    path = frame.filename
    try:
        relative = os.path.relpath(path)
        if not relative.startswith(".."):
            path = relative
    except ValueError:  # another drive
        pass
    return f"{path}:{frame.lineno}"


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Session:
    def __init__(self, source: str, responses: list[Response] | None, policy: Policy | None):
        self.source = source
        self.responses = responses
        self.policy = policy
        self.served = 0

    def next(self, messages: list[dict], tools: list[dict] | None) -> Response:
        if self.policy is not None:
            self.served += 1
            try:
                return self.policy(messages, tools)
            except Exception as exc:
                message = _one_line(str(exc)) or "(no message)"
                raise PolicyError(
                    f"the policy of {self.source} raised {type(exc).__name__}: {message} "
                    f"at {_policy_line(exc, self.policy)} (a bug in the policy; not retried)"
                ) from exc
        assert self.responses is not None
        if self.served >= len(self.responses):
            raise BackendError(
                f"{self.source} holds {len(self.responses)} response(s) and the run asked "
                f"for response {self.served + 1}: the recording ended before the run did"
            )
        self.served += 1
        return self.responses[self.served - 1]


def register_script(name: str, script: list[Response] | Policy) -> str:
    """Make ``scripted:NAME`` answer from ``script``; returns the model string."""
    _SCRIPTS[name] = script if callable(script) else list(script)
    return f"scripted:{name}"


def check_replay(path: Path) -> None:
    """Raise BackendError unless ``path`` is a file that can be a recording."""
    if path.is_dir():
        found = path / "llm.jsonl"
        hint = f" (did you mean {found}?)" if found.is_file() else ""
        raise BackendError(
            f"replay file {path} is a folder, not a recording: give a run's llm.jsonl{hint}"
        )
    if not path.exists():
        raise BackendError(f"replay file {path} does not exist")
    if not path.is_file():
        raise BackendError(f"replay file {path} is not a regular file")


def recorded_responses(path: Path) -> list[Response]:
    """The responses of an ``llm.jsonl``, in order (failed attempts and events have none)."""
    check_replay(path)
    out: list[Response] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BackendError(f"replay file {path} is not UTF-8 text (not an llm.jsonl)") from None
    except OSError as exc:
        raise BackendError(f"replay file {path} cannot be read: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise BackendError(
                f"replay file {path} line {number} is not JSON (not an llm.jsonl)"
            ) from None
        if isinstance(record, dict) and record.get("response"):
            out.append(record["response"])
    return out


def _script(arg: str) -> list[Response] | Policy:
    """The script ``scripted:ARG`` names (imported for ``package.module:policy``)."""
    if arg not in _SCRIPTS and ":" in arg:  # scripted:package.module:policy
        module_name, _, attr = arg.partition(":")
        try:
            script = getattr(import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise BackendError(f"cannot load policy {arg!r}: {_one_line(str(exc))}") from None
        except Exception as exc:  # the module itself fails on import
            raise BackendError(
                f"cannot load policy {arg!r}: importing {module_name} raised "
                f"{type(exc).__name__}: {_one_line(str(exc))}"
            ) from None
        if not callable(script):
            raise BackendError(f"cannot load policy {arg!r}: {attr} is not a function")
        register_script(arg, script)
    if arg not in _SCRIPTS:
        raise BackendError(f"no script named {arg!r} is registered")
    return _SCRIPTS[arg]


def check(model: str) -> None:
    """Raise BackendError now for a replay:/scripted: model that cannot answer (a missing
    recording or one with no responses, an unknown script), before a run starts."""
    kind, _, arg = model.partition(":")
    if kind == "replay":
        path = Path(arg).expanduser()
        if not recorded_responses(path):  # the first call would fail: say so before the run
            raise BackendError(
                f"replay file {path} holds no responses (no call in it was answered): "
                "nothing to replay; give a run's llm.jsonl with answers"
            )
    elif kind == "scripted":
        _script(arg)


def open_session(model: str) -> str:
    """A fresh session for a replay:/scripted: model; returns the litellm model string."""
    kind, _, arg = model.partition(":")
    key = f"s{next(_counter)}"
    if kind == "replay":
        path = Path(arg).expanduser()
        _SESSIONS[key] = _Session(f"replay file {path}", recorded_responses(path), None)
        return f"cadillac-replay/{key}"
    if kind == "scripted":
        script = _script(arg)
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
                spec = session.next(messages, tools)
                try:
                    message = _message(spec)
                except Exception as exc:
                    raise BackendError(
                        f"{session.source} gave response {session.served}, which is not a "
                        f"response ({type(exc).__name__}: {_one_line(str(exc))}): a response "
                        'is a string or {"content": ..., "tool_calls": [{"name": ..., '
                        '"arguments": {...}}]}'
                    ) from exc
            except BackendError as exc:  # a bad request: not retried
                raise litellm.BadRequestError(
                    message=str(exc), model=model, llm_provider=self.provider
                ) from exc
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
