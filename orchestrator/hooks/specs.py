"""The hooks a plugin may implement: where a user's own code reacts to what cadillac does.

Each hook is a pluggy hook specification; a plugin implements any of them with functions
(or methods) of the same name marked ``@hookimpl``, taking any subset of the hook's
arguments by name. Every payload is a plain JSON value (dicts, lists, strings, numbers),
a fresh copy for each plugin: what a plugin changes in it changes nothing of cadillac's.
What a hook returns is ignored.
"""

from __future__ import annotations

import pluggy

PROJECT = "cadillac"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
"""The marker of a plugin's hook implementations: ``from orchestrator.hooks import hookimpl``."""


@hookspec
def build_start(task: str, config: dict) -> None:
    """A build (new, resumed, or a change to a project) starts: its task and its config
    (without keys)."""


@hookspec
def phase_end(phase: str, summary: dict) -> None:
    """A phase ended (passed, out of rounds, or in error): its name and its summary."""


@hookspec
def lesson_saved(lesson: dict) -> None:
    """A build saved a lesson to the memory (a reflection's, or the model's own)."""


@hookspec
def build_end(summary: dict) -> None:
    """A build ended, whatever its status: the run's summary (run id, task, status, phases,
    seconds, tokens, cost ...)."""


@hookspec
def matrix_end(results: dict) -> None:
    """A matrix run ended (or was stopped): its results, as ``results.json`` holds them."""


@hookspec
def improve_decision(decision: dict) -> None:
    """An improve iteration was decided (accepted, rejected, no proposal, stopped): its
    record, as ``iter-<i>/decision.json`` holds it, with the improve run's id and repo."""
