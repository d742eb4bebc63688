"""Scripted models for ``runs show --trajectory`` and ``--follow``
(``scripted:tests.fakes.trajectory_policies:NAME``).

``hostile`` builds the demo's wordfreq project, but its first round writes what a hostile
model would to fool a person reading its trajectory in a terminal: terminal escape
sequences (a screen clear, a window title, an OSC 8 hyperlink), carriage returns that
overwrite a line, a backspace, a C1 control and rich markup, in its own text, in a file's
name and content, and in what a command it runs prints. ``slow`` builds wordfreq at half a
second an answer, so a build lasts long enough to be followed.
"""

from __future__ import annotations

import time

from tests.fakes.improve_policies import wordfreq

ESCAPES = (
    "\x1b[2J\x1b[H"  # clear the screen
    "\x1b]0;pwned title\x07"  # the window's title
    "\x1b]8;;http://evil.example/\x1b\\click me\x1b]8;;\x1b\\"  # a hyperlink
    " all good\rEVIL OVERWRITE"  # a line overwritten
    " back\x08\x08\x08"  # backspaces
    " \x9b31mC1 CSI"  # the one-byte CSI
)
MARKUP = "[bold red]loud[/bold red] [link=http://evil.example/]a link[/link]"
NAME = "[bold]notes[/bold].md"
"""The file the first round writes: a name that is rich markup."""
COMMAND = (
    r"printf '\033[2J\033]0;pwned\007\033]8;;http://evil.example/\033\\click\033]8;;\033\\"
    r" tests ok\rFAKE PASS [bold red]markup[/bold red] [link=http://evil.example/]x[/link]\n'"
)
"""A command whose output is escape sequences, an overwrite and markup."""


def hostile(messages, tools):
    answer = wordfreq.policy(messages, tools)
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    taken = sum(1 for m in messages if m["role"] == "assistant")
    if not tools or "# Phase: plan" not in system or taken:
        return answer
    calls = [
        {"name": "write_file", "arguments": {"path": NAME, "content": f"{ESCAPES}\n{MARKUP}\n"}},
        {"name": "run", "arguments": {"command": COMMAND}},
    ]
    return {"content": f"Planning. {ESCAPES} {MARKUP}", "tool_calls": calls + answer["tool_calls"]}


def slow(messages, tools):
    time.sleep(0.5)
    return wordfreq.policy(messages, tools)
