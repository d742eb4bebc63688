"""A small OpenAI-compatible chat server on 127.0.0.1 for tests that go through litellm over HTTP.

It answers ``POST .../chat/completions`` from a queue: each entry is either a
response (content and/or tool calls, in the same shape the scripted back end
takes), a fault ``{"status": 429, "headers": {...}, "delay_s": 0}``, or a raw
answer ``{"raw": TEXT, "status": 200}`` whose text is sent as the body as it is
(a server's bad answer: no choices, an escaped lone surrogate, tool arguments as
an object). :func:`completion` builds the usual body for a raw answer to change.
Every request body is kept in ``requests`` (and its headers in ``headers``) so
tests can assert what was sent and how many attempts were made.
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
                with fake.lock:
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers.items()))
                    if fake.policy is not None:
                        entry = fake.policy(body)
                    else:
                        entry = fake.queue.pop(0) if fake.queue else {"status": 500}
                if isinstance(entry, dict) and "raw" in entry:
                    data = entry["raw"].encode("utf-8")
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
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
