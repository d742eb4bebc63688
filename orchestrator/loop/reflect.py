"""The reflection after a phase: the model reads the phase's transcript and draws lessons.

A phase has one transcript, its conversation (the messages the loop sent and the model
answered, compacted as they were sent). After the phase, :func:`reflect` renders it for
a reviewer (:func:`transcript`: each reply, each tool call with a short view of its
arguments and result, each check result the model was sent; the opening, which holds
the instructions, is left out), trims it to a character budget keeping its start and
its end, and sends it to the model once, without tools, with the prompt in
``phases/reflect.md``; the answer is parsed into lessons
(:func:`memory.reflection.parse_reflection`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from memory import Lesson
from memory.reflection import parse_reflection
from orchestrator.llm.client import LLMClient
from phases.base import read_prompt

RECORD_CHARS = 12_000
ALREADY_SAVED = (
    "Already saved with the memory tool during this phase (do not repeat these; "
    "answer NONE if nothing else is worth keeping):"
)


def _short(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} [...] {text[-half:]}"


def _call_view(call: dict) -> str:
    function = call.get("function") or {}
    name, arguments = str(function.get("name", "?")), function.get("arguments", "")
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
        view = ", ".join(f"{k}={_short(str(v), 80)!r}" for k, v in args.items())
    except (ValueError, AttributeError):
        view = _short(str(arguments), 120)
    return f"{name}({view})"


def transcript(messages: Sequence[dict]) -> list[str]:
    """The phase's conversation after its opening, one entry per step, for a reviewer."""
    calls: dict[str, str] = {}
    out = []
    for message in messages[2:]:
        role, content = message.get("role"), str(message.get("content") or "")
        if role == "assistant":
            if content.strip():
                out.append(f"- said: {_short(content, 400)}")
            for call in message.get("tool_calls") or []:
                calls[str(call.get("id"))] = _call_view(call)
        elif role == "tool":
            view = calls.get(str(message.get("tool_call_id")), "a tool call")
            out.append(f"- {view} -> {_short(content, 400)}")
        elif role == "user":
            out.append(f"- {_short(content, 1500)}")
    return out


def reflect(
    llm: LLMClient,
    task: str,
    phase: str,
    outcome: str,
    messages: Sequence[dict],
    tags: list[str],
    already_saved: Sequence[str] = (),
    limit: int = RECORD_CHARS,
) -> tuple[list[Lesson], list[str], str]:
    """(lessons, skipped-line reasons, raw answer) for one phase, from its ``messages``;
    ``already_saved`` is what the model saved with the memory tool during the phase, so
    that it is not said twice."""
    body = "\n".join(transcript(messages))
    text = f"Task: {task}\nPhase: {phase}\nOutcome: {outcome}\n\nRecord:\n" + _short(body, limit)
    if already_saved:
        lines = "\n".join(f"- {line}" for line in already_saved)
        text += f"\n\n{ALREADY_SAVED}\n{lines}"
    messages = [
        {"role": "system", "content": read_prompt("reflect")},
        {"role": "user", "content": text},
    ]
    answer = llm.complete(messages, tools=None).content or ""
    lessons, skipped = parse_reflection(answer, tags=tags, source_task=task)
    return lessons, skipped, answer
