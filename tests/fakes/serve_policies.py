"""Models for the dashboard's tests (``scripted:tests.fakes.serve_policies:NAME``).

``slow_wordfreq`` is the demo's builder taking 0.4 s an answer, so a build lasts long enough
for a page to follow it. ``hostile`` writes what a model would put in a page to take it
over: script tags, ``javascript:`` links and ``onerror`` attributes in its messages, the
files it names, what its commands print, its phase summaries and the lessons it draws.
"""

from __future__ import annotations

import time

from tests.fakes.improve_policies import wordfreq

PWN = "window.__pwned=1"
SCRIPT = f"<script>{PWN}</script>"
IMG = f'"><img src=x onerror="{PWN}">'
LINK = f'<a href="javascript:{PWN}">click me</a> [click](javascript:{PWN})'
HOSTILE = f"{SCRIPT} {IMG} {LINK} <style>body{{display:none}}</style>"


def slow_wordfreq(messages, tools):
    time.sleep(0.4)
    return wordfreq.policy(messages, tools)


def hostile(messages, tools):
    if not tools:  # the reflection: lessons that carry markup
        return (
            f"error_pattern | {SCRIPT} when {IMG} | run {LINK}\n"
            f"ANTI | {IMG} | {SCRIPT} breaks pages"
        )
    taken = sum(1 for m in messages if m["role"] == "assistant")
    if taken == 0:
        name = '<img src=x onerror="window.__pwned=1">.md'
        return {
            "content": f"I will now {HOSTILE}",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": name, "content": HOSTILE}},
                {"name": "run", "arguments": {"command": f"printf '%s\\n' '{SCRIPT}{IMG}'"}},
                {"name": "read_file", "arguments": {"path": f"{SCRIPT}.txt"}},
            ],
        }
    return {
        "content": HOSTILE,
        "tool_calls": [
            {"name": "finish_phase", "arguments": {"summary": HOSTILE, "applied_lessons": []}}
        ],
    }


def wordfreq_now(messages, tools):
    """The demo's builder, answering at once (the benchmark's one real build)."""
    return wordfreq.policy(messages, tools)
