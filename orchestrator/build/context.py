"""Keeping a phase's conversation within the model's context: elide old tool results.

A long phase (a build budget can run past a hundred rounds) accumulates tool
results: file contents, test output. When the conversation grows past a
character budget, the oldest tool results are cut to their first line and a
note saying how to get them back; the opening (system prompt, task, plan) and
the most recent messages always stay whole, so the model keeps its
instructions and its working memory.
"""

from __future__ import annotations

KEEP_RECENT = 12
"""Tool results among the last this many messages are never elided."""


def compact(messages: list[dict], limit: int) -> None:
    """Elide the oldest tool results, in place, until the conversation fits ``limit`` characters.

    The opening (system prompt and task) and the most recent messages stay
    whole; an elided result keeps its first line and says how to get it back.
    """
    total = sum(len(str(m.get("content") or "")) for m in messages)
    removed = 0
    for message in messages[2 : max(2, len(messages) - KEEP_RECENT)]:
        if total - removed <= limit:
            break
        content = message.get("content")
        if message.get("role") != "tool" or not isinstance(content, str) or len(content) < 400:
            continue
        first = content.splitlines()[0][:200] if content else ""
        short = f"{first}\n[... {len(content):,} characters elided to save context; read the "
        short += "file or run the command again if you need them ...]"
        removed += len(content) - len(short)
        message["content"] = short
