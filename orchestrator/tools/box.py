"""Dispatching the model's tool calls against one workspace.

What this module decides, and why:

* :meth:`ToolBox.dispatch` never raises for a model's mistake. An unknown tool,
  arguments that do not fit the tool's model (:mod:`orchestrator.tools.schema`), or a
  path the workspace refuses becomes ``ok=False`` with one paragraph saying what was
  wrong and how the call should look; the loop sends it back as the tool message and
  the model tries again.
* ``run`` never has the network: the one command that may reach it is the dependency
  install of the deps phase's check, which the model does not run.
* ``knowledge`` is read-only and answered by whoever runs the build (the code index and
  the home's past runs live above this layer); it never fails a call.
* ``memory`` is answered by whoever runs the build too (the home's notes, lessons and
  skills live above this layer); a refusal (forgetting what a person saved, a bad name)
  is a :class:`CallError` like any malformed call.
* No result carries a control character raw: every result's text goes through
  :func:`orchestrator.sandbox.shown.output` (newlines and tabs stay; ESC, CR and the
  other C0 and C1 controls are escaped), and ``list_files`` escapes each name whole
  (:func:`~orchestrator.sandbox.shown.name`), so a file called ``a\nb`` is one line.
* ``finish_phase`` does not end anything here: it hands a :class:`FinishRequest` to the
  loop, which runs the phase's check.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel

from orchestrator.sandbox import shown
from orchestrator.sandbox.executor import CommandResult, ExecConfig, run_command
from orchestrator.sandbox.workspace import Workspace, WorkspaceError
from orchestrator.tools.schema import (
    ARGUMENTS,
    CallError,
    EditFile,
    FinishPhase,
    Knowledge,
    ListFiles,
    Memory,
    ReadFile,
    Run,
    WriteFile,
    parse_arguments,
)


class FinishRequest(BaseModel):
    """The model's claim that the phase is done."""

    summary: str
    applied_lessons: list[str]


class ToolOutcome(BaseModel):
    """The result of one call; ``content`` goes back to the model as the tool message."""

    name: str
    ok: bool
    content: str
    finish: FinishRequest | None = None
    command: CommandResult | None = None


class ToolBox:
    """Runs the model's tool calls against one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        exec_config: ExecConfig,
        path_prefix: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        stop: threading.Event | None = None,
        knowledge: Callable[[str, str], str] | None = None,
        memory: Callable[[Memory], str] | None = None,
    ):
        self.workspace = workspace
        self.knowledge = knowledge
        """Answers the read-only knowledge tool (the build's code index and its home's past)."""
        self.memory = memory
        """Answers the memory tool; raises CallError to refuse a call."""
        self.stop = stop
        """Once set, a running command is killed (cadillac was interrupted)."""
        self.exec_config = exec_config
        self.path_prefix = list(path_prefix)
        self.env = dict(env or {})
        """What cadillac sets for the project's commands (its virtual environment ...)."""

    def dispatch(self, name: str, arguments: str) -> ToolOutcome:
        """Run one call; a model mistake becomes ``ok=False`` with a message, never an exception."""
        if name not in ARGUMENTS:
            names = ", ".join(ARGUMENTS)
            return self._fail(name, f"There is no tool {name!r}. The tools are: {names}.")
        try:
            result = getattr(self, "_" + name)(parse_arguments(name, arguments))
            if isinstance(result, str):
                return ToolOutcome(name=name, ok=True, content=shown.output(result))
            return result.model_copy(update={"content": shown.output(result.content)})
        except (CallError, WorkspaceError) as exc:
            return self._fail(name, str(exc))
        except OSError as exc:
            return self._fail(name, f"{name} failed: {exc.strerror or exc}.")

    @staticmethod
    def _fail(name: str, message: str) -> ToolOutcome:
        return ToolOutcome(name=name, ok=False, content=shown.output(message))

    # Each handler takes its validated arguments and returns the text for the model (a
    # success), or a whole ToolOutcome; a CallError or WorkspaceError is a refusal.
    def _write_file(self, args: WriteFile) -> str:
        return self.workspace.write_file(args.path, args.content)

    def _edit_file(self, args: EditFile) -> str:
        return self.workspace.edit_file(args.path, args.old, args.new)

    def _read_file(self, args: ReadFile) -> str:
        return self.workspace.read_file(args.path)

    def _list_files(self, args: ListFiles) -> str:
        return self.workspace.list_files(args.path)

    def _run(self, args: Run) -> ToolOutcome:
        if not args.command.strip():
            raise CallError('run needs a non-empty \'command\', e.g. {"command": "pytest -q"}.')
        if args.timeout_s is not None and args.timeout_s <= 0:
            raise CallError(
                f"'timeout_s' must be a positive number of seconds, not {args.timeout_s:g}."
            )
        result = run_command(
            args.command,
            self.workspace.root,
            self.exec_config,
            timeout_s=args.timeout_s,
            path_prefix=self.path_prefix,
            env=self.env,
            stop=self.stop,
        )
        return ToolOutcome(name="run", ok=result.ok, content=result.for_model(), command=result)

    def _knowledge(self, args: Knowledge) -> str:
        if self.knowledge is None:
            return "knowledge is not available in this build; read the files instead"
        return self.knowledge(args.action, args.query)

    def _memory(self, args: Memory) -> str:
        if self.memory is None:
            return "memory is not available in this build"
        return self.memory(args)

    def _finish_phase(self, args: FinishPhase) -> ToolOutcome:
        finish = FinishRequest(summary=args.summary, applied_lessons=args.applied_lessons)
        content = "phase finish requested; the phase check runs now"
        return ToolOutcome(name="finish_phase", ok=True, content=content, finish=finish)
