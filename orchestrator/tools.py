"""The model's tools: their OpenAI-style function schemas, and dispatching a call to them.

What this module decides, and why:

* The schemas in :data:`TOOLS` are the single description of the tools. The
  descriptions are written for the model; the same schemas check each call's
  arguments (required, types, no extras), so what the model is told and what
  is enforced cannot drift apart.
* :meth:`ToolBox.dispatch` never raises for a model's mistake. An unknown tool,
  arguments that are not a JSON object, a missing or mistyped or unexpected
  argument, or a refused path becomes ``ok=False`` with one paragraph saying
  what was wrong and how the call should look; the loop sends it back as the
  tool message and the model tries again.
* ``finish_phase`` does not end anything here: it hands a :class:`FinishRequest`
  to the loop, which runs the phase's check.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from orchestrator.executor import CommandResult, ExecConfig, run_command
from orchestrator.workspace import Workspace, WorkspaceError


def _tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_PATH = {"type": "string", "description": "A path relative to the workspace root, e.g. 'app.py'."}

TOOLS: list[dict] = [
    _tool(
        "write_file",
        "Create a file, or replace its whole content. Folders are created as needed.",
        {"path": _PATH, "content": {"type": "string", "description": "The full file text."}},
        ["path", "content"],
    ),
    _tool(
        "edit_file",
        "Replace one exact piece of a file. 'old' must occur exactly once, matching "
        "whitespace and indentation; include surrounding lines to make it unique.",
        {
            "path": _PATH,
            "old": {"type": "string", "description": "The exact text to replace."},
            "new": {"type": "string", "description": "The text to put in its place."},
        },
        ["path", "old", "new"],
    ),
    _tool(
        "read_file",
        "Read a text file (cut at 100 KB).",
        {"path": _PATH},
        ["path"],
    ),
    _tool(
        "list_files",
        "List the files under a folder, recursively (tool and cache folders skipped).",
        {"path": {**_PATH, "description": "A folder relative to the workspace root; default '.'."}},
        [],
    ),
    _tool(
        "run",
        "Run a bash command in the workspace root, e.g. tests or a linter. No input is "
        "available to it; stdout and stderr come back merged, long output cut in the middle.",
        {
            "command": {"type": "string", "description": "The bash command line."},
            "timeout_s": {"type": "number", "description": "Time limit in seconds (optional)."},
        },
        ["command"],
    ),
    _tool(
        "finish_phase",
        "Say the phase's work is done; its check runs next and you hear back if it fails.",
        {
            "summary": {"type": "string", "description": "What you did in this phase."},
            "applied_lessons": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Ids of recalled lessons you followed; may be empty.",
            },
        },
        ["summary"],
    ),
]
SCHEMAS: dict[str, dict] = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


class ToolCall(BaseModel):
    """One tool call as the model made it."""

    id: str
    name: str
    arguments: str
    """The raw JSON text the model sent."""


class FinishRequest(BaseModel):
    """The model's claim that the phase is done."""

    summary: str
    applied_lessons: list[str]


class ToolOutcome(BaseModel):
    """The result of one call; ``content`` goes back to the model as the tool message."""

    call_id: str
    name: str
    ok: bool
    content: str
    finish: FinishRequest | None = None
    command: CommandResult | None = None


class CallError(Exception):
    """A malformed call; the message is the paragraph the model reads."""


_TYPES = {"string": (str,), "number": (int, float), "array": (list,)}
_JSON_NAMES = {
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
    type(None): "null",
}


def _json_type(value: Any) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _signature(name: str) -> str:
    props, required = SCHEMAS[name]["properties"], SCHEMAS[name]["required"]
    parts = [
        f'"{k}": {v["type"]}'
        + (" of strings" if v["type"] == "array" else "")
        + ("" if k in required else " (optional)")
        for k, v in props.items()
    ]
    return f"{name} takes a JSON object {{{', '.join(parts)}}}"


def parse_arguments(name: str, raw: str) -> dict[str, Any]:
    """The call's arguments checked against the tool's schema, or a CallError for the model."""
    schema, sig = SCHEMAS[name], _signature(name)
    try:
        args = json.loads(raw) if raw and raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise CallError(f"The arguments of {name} are not valid JSON ({exc}). {sig}.") from None
    if not isinstance(args, dict):
        kind = _json_type(args)
        raise CallError(f"The arguments of {name} must be a JSON object, not a JSON {kind}. {sig}.")
    args = {k: v for k, v in args.items() if not (v is None and k not in schema["required"])}
    problems = [f"unexpected argument {k!r}" for k in args if k not in schema["properties"]]
    problems += [f"missing required argument {k!r}" for k in schema["required"] if k not in args]
    for key, value in args.items():
        spec = schema["properties"].get(key)
        if spec is None:
            continue
        kind = spec["type"]
        bad = not isinstance(value, _TYPES[kind]) or isinstance(value, bool)
        if kind == "array" and not bad:
            bad = not all(isinstance(item, str) for item in value)
            kind = "array of strings"
        if bad:
            problems.append(f"{key!r} must be of type {kind}, not {_json_type(value)}")
    if problems:
        raise CallError(f"The call to {name} was not run: {'; '.join(problems)}. {sig}.")
    return args


class ToolBox:
    """Runs the model's tool calls against one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        exec_config: ExecConfig,
        path_prefix: Sequence[Path] = (),
        network: bool = False,
    ):
        self.workspace = workspace
        self.exec_config = exec_config
        self.path_prefix = list(path_prefix)
        self.network = network  # the agent turns it on only for dependency installs

    def dispatch(self, call: ToolCall) -> ToolOutcome:
        """Run one call; a model mistake becomes ``ok=False`` with a message, never an exception."""
        if call.name not in SCHEMAS:
            names = ", ".join(SCHEMAS)
            return self._fail(call, f"There is no tool {call.name!r}. The tools are: {names}.")
        try:
            args = parse_arguments(call.name, call.arguments)
            return getattr(self, "_" + call.name)(call, **args)
        except (CallError, WorkspaceError) as exc:
            return self._fail(call, str(exc))
        except OSError as exc:
            return self._fail(call, f"{call.name} failed: {exc.strerror or exc}.")

    @staticmethod
    def _fail(call: ToolCall, message: str) -> ToolOutcome:
        return ToolOutcome(call_id=call.id, name=call.name, ok=False, content=message)

    @staticmethod
    def _done(call: ToolCall, content: str, **extra: Any) -> ToolOutcome:
        return ToolOutcome(call_id=call.id, name=call.name, ok=True, content=content, **extra)

    def _write_file(self, call: ToolCall, path: str, content: str) -> ToolOutcome:
        return self._done(call, self.workspace.write_file(path, content))

    def _edit_file(self, call: ToolCall, path: str, old: str, new: str) -> ToolOutcome:
        return self._done(call, self.workspace.edit_file(path, old, new))

    def _read_file(self, call: ToolCall, path: str) -> ToolOutcome:
        return self._done(call, self.workspace.read_file(path))

    def _list_files(self, call: ToolCall, path: str = ".") -> ToolOutcome:
        return self._done(call, self.workspace.list_files(path))

    def _run(self, call: ToolCall, command: str, timeout_s: float | None = None) -> ToolOutcome:
        if not command.strip():
            raise CallError('run needs a non-empty \'command\', e.g. {"command": "pytest -q"}.')
        if timeout_s is not None and timeout_s <= 0:
            raise CallError(f"'timeout_s' must be a positive number of seconds, not {timeout_s}.")
        result = run_command(
            command,
            self.workspace.root,
            self.exec_config,
            timeout_s=timeout_s,
            path_prefix=self.path_prefix,
            network=self.network,
        )
        return ToolOutcome(
            call_id=call.id,
            name=call.name,
            ok=result.ok,
            content=result.for_model(),
            command=result,
        )

    def _finish_phase(
        self, call: ToolCall, summary: str, applied_lessons: Sequence[str] = ()
    ) -> ToolOutcome:
        finish = FinishRequest(summary=summary, applied_lessons=list(applied_lessons))
        return self._done(call, "phase finish requested; the phase check runs now", finish=finish)
