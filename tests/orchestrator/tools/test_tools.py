"""The model's tools: valid schemas, dispatch of each tool, and malformed calls turned into help."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from orchestrator.sandbox.executor import ExecConfig
from orchestrator.sandbox.workspace import Workspace
from orchestrator.tools.box import FinishRequest, ToolBox, ToolOutcome
from orchestrator.tools.schema import TOOLS

REQUIRED = {
    "write_file": ["path", "content"],
    "edit_file": ["path", "old", "new"],
    "read_file": ["path"],
    "list_files": [],
    "run": ["command"],
    "knowledge": ["action"],
    "memory": ["action"],
    "finish_phase": ["summary"],
}


@pytest.fixture
def box(tmp_path: Path) -> ToolBox:
    return ToolBox(Workspace(tmp_path / "ws"), ExecConfig())


def call(box: ToolBox, name: str, arguments: object = None, raw: str | None = None) -> ToolOutcome:
    text = raw if raw is not None else json.dumps(arguments if arguments is not None else {})
    outcome = box.dispatch(name, text)
    assert outcome.name == name
    return outcome


def test_schemas_are_valid_function_tools():
    assert [t["function"]["name"] for t in TOOLS] == list(REQUIRED)
    for tool in TOOLS:
        assert tool["type"] == "function"
        fn = tool["function"]
        assert fn["description"].strip()
        params = fn["parameters"]
        assert params["type"] == "object"
        assert params["additionalProperties"] is False
        assert params["required"] == REQUIRED[fn["name"]]
        assert set(params["required"]) <= set(params["properties"])
        for prop in params["properties"].values():
            assert prop["type"] in ("string", "number", "array")
            assert prop["description"].strip()
        json.dumps(tool)  # plain JSON
    finish = next(t for t in TOOLS if t["function"]["name"] == "finish_phase")
    lessons = finish["function"]["parameters"]["properties"]["applied_lessons"]
    assert lessons == {**lessons, "type": "array", "items": {"type": "string"}}


def test_write_read_edit_list(box: ToolBox):
    wrote = call(box, "write_file", {"path": "pkg/app.py", "content": "x = 1\n"})
    assert wrote.ok and wrote.content == "wrote pkg/app.py (6 bytes, 1 lines)"
    edited = call(box, "edit_file", {"path": "pkg/app.py", "old": "1", "new": "2"})
    assert edited.ok and edited.content.startswith("edited pkg/app.py")
    read = call(box, "read_file", {"path": "pkg/app.py"})
    assert read.ok and read.content == "x = 2\n"
    assert call(box, "list_files", {}).content == "pkg/app.py"
    assert call(box, "list_files", raw="").content == "pkg/app.py"
    assert call(box, "list_files", {"path": "pkg"}).content == "pkg/app.py"
    assert call(box, "list_files", {"path": None}).ok  # null for an optional argument is absent


def test_workspace_refusals_become_failed_outcomes(box: ToolBox):
    refused = call(box, "read_file", {"path": "/etc/passwd"})
    assert not refused.ok and "absolute" in refused.content
    escaped = call(box, "write_file", {"path": "../x", "content": "x"})
    assert not escaped.ok and "'..'" in escaped.content
    ambiguous = call(box, "write_file", {"path": "a.py", "content": "a\na\n"})
    assert ambiguous.ok
    twice = call(box, "edit_file", {"path": "a.py", "old": "a", "new": "b"})
    assert not twice.ok and "2 times" in twice.content


def test_run_returns_exit_status_text(box: ToolBox):
    done = call(box, "run", {"command": "echo hello; exit 4"})
    assert not done.ok
    assert done.content == "exit status 4\nhello\n"
    assert done.command is not None and done.command.exit_code == 4
    assert done.command.output == "hello\n"
    fine = call(box, "run", {"command": "pwd", "timeout_s": 30})
    assert fine.ok and fine.content == f"exit status 0\n{box.workspace.root}\n"
    slow = call(box, "run", {"command": "sleep 10", "timeout_s": 0.3})
    assert not slow.ok and slow.content.startswith("timed out after")


def test_run_uses_the_toolbox_settings(tmp_path: Path):
    tools = tmp_path / "bin"
    tools.mkdir()
    box = ToolBox(Workspace(tmp_path / "ws"), ExecConfig(sandbox="none"), path_prefix=[tools])
    outcome = call(box, "run", {"command": 'echo "$PATH"'})
    assert outcome.content.splitlines()[1].startswith(f"{tools}:")
    assert outcome.command is not None and not outcome.command.sandboxed


def test_run_refuses_empty_command_and_bad_timeout(box: ToolBox):
    empty = call(box, "run", {"command": "  "})
    assert not empty.ok and "non-empty" in empty.content
    negative = call(box, "run", {"command": "true", "timeout_s": -1})
    assert not negative.ok and "positive" in negative.content


def test_finish_phase_returns_the_request(box: ToolBox):
    outcome = call(box, "finish_phase", {"summary": "built it", "applied_lessons": ["L1", "L7"]})
    assert outcome.ok
    assert outcome.content == "phase finish requested; the phase check runs now"
    assert outcome.finish == FinishRequest(summary="built it", applied_lessons=["L1", "L7"])
    bare = call(box, "finish_phase", {"summary": "done"})
    assert bare.finish == FinishRequest(summary="done", applied_lessons=[])


@pytest.mark.parametrize(
    "name, raw, expected",
    [
        ("delete_everything", "{}", ["no tool 'delete_everything'", "write_file", "finish_phase"]),
        ("write_file", '{"path": "a.py", "content": ', ["not valid JSON", '"content": string']),
        ("write_file", '["a.py", "x"]', ["must be a JSON object, not a JSON array"]),
        ("read_file", "{}", ["missing required argument 'path'", '"path": string']),
        ("write_file", '{"path": "a.py", "content": 5}', ["'content' must be of type string"]),
        ("write_file", '{"path": "a.py", "content": "x", "mode": "w"}', ["unexpected", "'mode'"]),
        ("run", '{"command": "ls", "timeout_s": "10"}', ["'timeout_s' must be of type number"]),
        ("run", '{"command": true}', ["'command' must be of type string, not boolean"]),
        ("finish_phase", '{"summary": "s", "applied_lessons": [1]}', ["array of strings"]),
        ("finish_phase", '{"applied_lessons": []}', ["missing required argument 'summary'"]),
        ("list_files", '{"path": ["."]}', ["'path' must be of type string, not array"]),
    ],
)
def test_malformed_calls_are_explained_not_raised(
    box: ToolBox, name: str, raw: str, expected: list[str]
):
    outcome = call(box, name, raw=raw)
    assert not outcome.ok
    assert outcome.finish is None and outcome.command is None
    for words in expected:
        assert words in outcome.content
    assert "\n" not in outcome.content  # one paragraph
    assert not (box.workspace.root / "a.py").exists()


@pytest.mark.parametrize(
    "number",
    ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1" + "0" * 5000],
)
def test_non_finite_numbers_are_a_malformed_call_and_nothing_runs(box: ToolBox, number: str):
    raw = f'{{"command": "touch ran", "timeout_s": {number}}}'
    outcome = call(box, "run", raw=raw)
    assert not outcome.ok and outcome.command is None
    assert outcome.content.startswith("The arguments of run are not valid JSON (")
    assert "numbers must be finite" in outcome.content and number[:12] in outcome.content
    assert '"timeout_s": number (optional)' in outcome.content and "\n" not in outcome.content
    assert not (box.workspace.root / "ran").exists()
    fine = call(box, "run", raw='{"command": "touch ran", "timeout_s": 30.5}')
    assert fine.ok and (box.workspace.root / "ran").exists()


def test_arguments_nested_too_deeply_are_a_malformed_call(box: ToolBox):
    outcome = call(box, "write_file", raw='{"path": ' + "[" * 100_000)
    assert not outcome.ok and "nested too deeply" in outcome.content


def test_the_models_run_tool_never_reaches_the_network(tmp_path: Path):
    box = ToolBox(Workspace(tmp_path / "ws"), ExecConfig(sandbox="bwrap"))
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        connect = {"command": f"exec 3<>/dev/tcp/127.0.0.1/{server.getsockname()[1]}"}
        refused = call(box, "run", connect)
        assert not refused.ok and refused.command is not None and refused.command.sandboxed
