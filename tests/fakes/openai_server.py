"""A small OpenAI-compatible chat server on 127.0.0.1 for tests that go through litellm over HTTP.

It answers ``POST .../chat/completions`` from a queue: each entry is either a
response (content and/or tool calls, in the same shape the scripted back end
takes), a fault ``{"status": 429, "headers": {...}, "delay_s": 0}``, or a raw
answer ``{"raw": TEXT, "status": 200}`` whose text is sent as the body as it is
(a server's bad answer: no choices, an escaped lone surrogate, tool arguments as
an object). :func:`completion` builds the usual body for a raw answer to change.
Every request body is kept in ``requests`` (and its headers in ``headers``) so
tests can assert what was sent and how many attempts were made.

It also speaks Anthropic's Messages API (``POST /v1/messages``, base
:attr:`FakeOpenAI.anthropic_base`), for what litellm sends to an ``anthropic/``
model: a policy is shown the request in OpenAI's shape (:func:`as_openai`: the
system blocks joined, tool uses and results as tool calls and tool messages) and
its answer goes back as Anthropic content blocks, with the usage saying how much
of the prompt a real provider would have read from its cache (the system blocks up
to the last ``cache_control`` mark, once a request with the same marked text was
seen). ``requests`` keeps the bodies as they were sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from orchestrator.llm.backends import _message


def completion(message: dict[str, Any], model: str = "fake", number: int = 1) -> dict[str, Any]:
    """The body of a chat completion answering ``message`` (an assistant message)."""
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def as_openai(body: dict) -> dict[str, Any]:
    """An Anthropic Messages request in OpenAI's shape, for a policy written for that."""
    system = body.get("system") or ""
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            messages.append({"role": m["role"], "content": content})
            continue
        texts = [b.get("text", "") for b in content if b.get("type") == "text"]
        uses = [b for b in content if b.get("type") == "tool_use"]
        results = [b for b in content if b.get("type") == "tool_result"]
        for r in results:
            inner = r.get("content")
            if isinstance(inner, list):
                inner = "".join(b.get("text", "") for b in inner)
            messages.append({"role": "tool", "tool_call_id": r["tool_use_id"], "content": inner})
        if m["role"] == "assistant":
            calls = [
                {
                    "id": u["id"],
                    "type": "function",
                    "function": {"name": u["name"], "arguments": json.dumps(u.get("input", {}))},
                }
                for u in uses
            ]
            messages.append(
                {
                    "role": "assistant",
                    "content": "".join(texts) or None,
                    **({"tool_calls": calls} if calls else {}),
                }
            )
        elif texts:
            messages.append({"role": m["role"], "content": "".join(texts)})
    return {"model": body.get("model"), "messages": messages, "tools": body.get("tools")}


class FakeOpenAI:
    def __init__(self, script: list[dict[str, Any] | str] | Callable[[dict], Any] | None = None):
        self.queue: list[Any] = [] if script is None or callable(script) else list(script)
        self.policy = script if callable(script) else None
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                anthropic = self.path.rstrip("/").endswith("/v1/messages")
                with fake.lock:
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers.items()))
                    asked = as_openai(body) if anthropic else body
                    if fake.policy is not None:
                        entry = fake.policy(asked)
                    else:
                        entry = fake.queue.pop(0) if fake.queue else {"status": 500}
                    if anthropic and not (isinstance(entry, dict) and "status" in entry):
                        reply = fake.anthropic_answer(body, entry)
                        self._send(json.dumps(reply).encode())
                        return
                if isinstance(entry, dict) and "raw" in entry:
                    data = entry["raw"]  # bytes are sent as they are: invalid UTF-8 too
                    data = data if isinstance(data, bytes) else data.encode("utf-8")
                    self.send_response(entry.get("status", 200))
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if isinstance(entry, dict) and "status" in entry:
                    time.sleep(entry.get("delay_s", 0))
                    self.send_response(entry["status"])
                    for key, value in entry.get("headers", {}).items():
                        self.send_header(key, str(value))
                    payload = json.dumps(
                        {
                            "error": {
                                "message": f"injected {entry['status']}",
                                "type": "test",
                                "code": entry["status"],
                            }
                        }
                    )
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    self.wfile.write(payload.encode())
                    return
                if isinstance(entry, dict):
                    time.sleep(entry.get("delay_s", 0))
                answer = completion(_message(entry), body.get("model", "fake"), len(fake.requests))
                self._send(json.dumps(answer).encode())

            def _send(self, data: bytes) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

        self.cached: set[str] = set()  # marked system prefixes seen (the provider's cache)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def anthropic_base(self) -> str:
        """What litellm takes as ``api_base`` for an ``anthropic/`` model (it adds the path)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def anthropic_answer(self, body: dict, entry: Any) -> dict[str, Any]:
        """A Messages API answer for ``entry`` (a scripted response), with cache usage."""
        message = _message(entry)
        content: list[dict[str, Any]] = []
        if message.get("content"):
            content.append({"type": "text", "text": message["content"]})
        for call in message.get("tool_calls", []):
            number = len(self.requests)
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{number}_{call['id']}",
                    "name": call["function"]["name"],
                    "input": json.loads(call["function"]["arguments"] or "{}"),
                }
            )
        system = body.get("system")
        blocks = system if isinstance(system, list) else []
        marks = [i for i, b in enumerate(blocks) if b.get("cache_control")]
        marked = "".join(b.get("text", "") for b in blocks[: marks[-1] + 1]) if marks else ""
        prompt = len(json.dumps(body)) // 4
        read = len(marked) // 4 if marked in self.cached else 0
        written = len(marked) // 4 if marked and marked not in self.cached else 0
        if marked:
            self.cached.add(marked)
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": content or [{"type": "text", "text": ""}],
            "stop_reason": "tool_use" if message.get("tool_calls") else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": max(prompt - read - written, 1),
                "output_tokens": 7,
                "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read,
            },
        }

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
