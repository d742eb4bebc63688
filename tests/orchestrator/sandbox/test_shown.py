"""Tool results never carry a control character raw: one name is one line, a command's
output keeps its lines but no terminal sequence."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.sandbox.executor import ExecConfig
from orchestrator.sandbox.workspace import Workspace
from orchestrator.tools.box import ToolBox

HOSTILE_NAMES = {
    "a\nb.py": "a\\nb.py",
    "\x1b[2J\x1b[31mred.py": "\\x1b[2J\\x1b[31mred.py",
    "c\rforged.py": "c\\rforged.py",
    "rtl\u202egnp.py": "rtl\\u202egnp.py",
    "t\tab.py": "t\\tab.py",
}


def test_a_name_is_one_printable_line_and_an_output_keeps_only_newlines_and_tabs():
    from orchestrator.sandbox.shown import name, output

    assert name("a\nb\x1b[31m\u202ec\x00") == "a\\nb\\x1b[31m\\u202ec\\x00"
    assert name("plain/ünïcode.py") == "plain/ünïcode.py"
    assert (
        output("ok\r\nnext\x1b]0;title\x07\tx\x9b\n") == "ok\\r\nnext\\x1b]0;title\\x07\tx\\x9b\n"
    )


def test_list_files_shows_each_hostile_file_name_escaped_on_its_own_line(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for hostile in HOSTILE_NAMES:
        (ws / hostile).write_text("x")
    box = ToolBox(Workspace(ws), ExecConfig())
    listing = box.dispatch("list_files", "{}").content
    assert sorted(listing.splitlines()) == sorted(HOSTILE_NAMES.values())
    assert "\x1b" not in listing and "\r" not in listing and "\u202e" not in listing
    one = box.dispatch("list_files", json.dumps({"path": "a\nb.py"})).content
    assert one == "a\\nb.py"


def test_a_commands_terminal_sequences_are_escaped_in_what_the_model_reads(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    box = ToolBox(Workspace(ws), ExecConfig())
    command = r"printf 'line one\n\033[2J\033[1;1Hforged\rover\ttab\n'"
    content = box.dispatch("run", json.dumps({"command": command})).content
    assert "line one\n\\x1b[2J\\x1b[1;1Hforged\\rover\ttab" in content
    assert "\x1b" not in content and "\r" not in content
