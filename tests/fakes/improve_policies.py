"""Scripted builders for matrix and improve-cycle tests.

They are loaded by import path (``scripted:tests.fakes.improve_policies:NAME``)
because improve trials run the matrix in a subprocess that imports from a
worktree. ``sentence_builder`` builds the wordfreq project of the demo, but
gets digits wrong unless the build phase's prompt file carries ``SENTENCE``:
a patch that adds the sentence really lifts the matrix score.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "wordfreq_policy_for_tests", Path(__file__).resolve().parents[2] / "examples/wordfreq/policy.py"
)
wordfreq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wordfreq)

SENTENCE = "Digits are not part of words: count only letters and apostrophes."
RIGHT = 'WORD = re.compile(r"[a-z\']+")'
FLAWED = wordfreq.PROGRAM.replace(RIGHT, 'WORD = re.compile(r"[\\w\']+")')
assert FLAWED != wordfreq.PROGRAM


def sentence_builder(messages, tools):
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    answer = wordfreq.policy(messages, tools)
    if tools and "# Phase: build" in system and SENTENCE not in system:
        for call in answer["tool_calls"]:
            if (
                call["name"] == "write_file"
                and call["arguments"].get("content") == wordfreq.PROGRAM
            ):
                call["arguments"] = {**call["arguments"], "content": FLAWED}
    return answer


def never_plans(messages, tools):
    """Talks but never finishes the plan phase: every build fails before validate."""
    if not tools:
        return "NONE"
    return {"tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]}


def digit_improver(messages, tools):
    """An improver that adds SENTENCE to the build phase's prompt."""
    import json

    edit = {
        "file": "phases/build.md",
        "search": "# Phase: build\n",
        "replace": f"# Phase: build\n\n{SENTENCE}\n",
    }
    return json.dumps({"reason": "say how digits count", "edits": [edit]})


def env_planter(messages, tools):
    """Builds wordfreq, but before validate turns its environments into traps for the host:
    ``.venv`` a link to the folder named by ``CADILLAC_TEST_PRECIOUS``, and a
    ``node_modules`` with a link out and folders it cannot write."""
    import os

    answer = wordfreq.policy(messages, tools)
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    first = not any(m["role"] == "assistant" for m in messages)
    if tools and "# Phase: validate" in system and first:
        precious = os.environ["CADILLAC_TEST_PRECIOUS"]
        trap = (
            f"rm -rf .venv && ln -s {precious} .venv && mkdir -p node_modules/a/b && "
            f"touch node_modules/a/b/f && ln -s {precious} node_modules/a/out && "
            "chmod 500 node_modules/a/b node_modules/a"
        )
        answer["tool_calls"].insert(0, {"name": "run", "arguments": {"command": trap}})
    return answer
