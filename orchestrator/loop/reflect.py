"""The phase record a reflection reads, and the reflection call itself.

While a phase runs, :class:`PhaseRecord` keeps what a reviewer needs: each
tool call with a short view of its arguments and result, each check result.
After the phase, :func:`reflect` sends the record (trimmed to a character
budget, keeping its start and its end) to the model once, without tools,
with the prompt in ``phases/reflect.md``, and parses the answer into lessons
(:func:`memory.reflection.parse_reflection`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

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


@dataclass
class PhaseRecord:
    task: str
    phase: str
    entries: list[str] = field(default_factory=list)
    outcome: str = ""

    def tool(self, name: str, arguments: str, ok: bool, result: str) -> None:
        try:
            args = json.loads(arguments)
            view = ", ".join(f"{k}={_short(str(v), 80)!r}" for k, v in args.items())
        except (ValueError, AttributeError):
            view = _short(arguments, 120)
        status = "ok" if ok else "ERROR"
        self.entries.append(f"- {name}({view}) -> {status}: {_short(result, 400)}")

    def note(self, text: str) -> None:
        self.entries.append(f"- {_short(text, 1500)}")

    def text(self, limit: int = RECORD_CHARS) -> str:
        body = "\n".join(self.entries)
        head = f"Task: {self.task}\nPhase: {self.phase}\nOutcome: {self.outcome}\n\nRecord:\n"
        return head + _short(body, limit)


def reflect(
    llm: LLMClient,
    record: PhaseRecord,
    tags: list[str],
    source_task: str,
    already_saved: Sequence[str] = (),
) -> tuple[list[Lesson], list[str], str]:
    """(lessons, skipped-line reasons, raw answer) for one phase; ``already_saved`` is what
    the model saved with the memory tool during the phase, so that it is not said twice."""
    text = record.text()
    if already_saved:
        lines = "\n".join(f"- {line}" for line in already_saved)
        text += f"\n\n{ALREADY_SAVED}\n{lines}"
    messages = [
        {"role": "system", "content": read_prompt("reflect")},
        {"role": "user", "content": text},
    ]
    answer = llm.complete(messages, tools=None).content or ""
    lessons, skipped = parse_reflection(answer, tags=tags, source_task=source_task)
    return lessons, skipped, answer
