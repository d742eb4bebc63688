"""Helpers the test modules share: one definition each, so every test checks the same thing."""

from __future__ import annotations

import json

from orchestrator.cli import main
from orchestrator.llm.client import LLMConfig
from orchestrator.loop.agent import BuildConfig


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``cadillac ARGV`` in this process: (exit status, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    """The one line of a refusal (fails the test unless ``err`` is exactly one line,
    ``cadillac: error: ...``, with no traceback); the line, for further checks."""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("cadillac: error: ") and "Traceback" not in err, err
    return err.rstrip("\n")


def build_config(model: str, **llm) -> BuildConfig:
    """A build's config for ``model``, with retry waits of hundredths of a second."""
    llm.setdefault("wait_initial_s", 0.01)
    llm.setdefault("wait_max_s", 0.02)
    return BuildConfig(llm=LLMConfig(model=model, **llm))


def events(run) -> list[dict]:
    """The records of a build's ``events.jsonl``, in order."""
    return [json.loads(x) for x in run.events_path.read_text().splitlines()]
