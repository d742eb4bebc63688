"""Helpers the test modules share: one definition each, so every test checks the same thing."""

from __future__ import annotations

import json
from pathlib import Path

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


def phase_context(ws, cache=None, records=None, emit=None):
    """A PhaseContext for the workspace ``ws`` whose commands run as the build loop runs
    them (``Agent._run_command``): in the sandbox, the workspace's ``.venv/bin`` first on
    PATH, the project's environment, the network and the package managers' settings only
    where an issued install step asks."""
    from orchestrator.sandbox.executor import ExecConfig, run_command
    from orchestrator.sandbox.installs import project_env
    from orchestrator.sandbox.workspace import Workspace
    from phases.base import PhaseContext

    def run(command, timeout_s=None, install=None, visible=(), writable=()):
        return run_command(
            command,
            ws,
            ExecConfig(),
            timeout_s=timeout_s,
            path_prefix=[ws / ".venv" / "bin"],
            env=project_env(ws),
            install=install,
            visible=visible,
            writable=writable,
        )

    return PhaseContext(
        task="t",
        workspace=Workspace(ws),
        run=run,
        cache_dir=cache,
        records=records,
        emit=emit,
    )


def write_files(root, files: dict[str, str]):
    """Write ``files`` (relative path -> text) under ``root``, folders made; ``root``."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


QUICK_RULE_FILE = Path(__file__).parent / "fixtures" / "quick_rule.toml"
"""The keep-or-drop rule of the cycles whose builder is scripted (``--decision-rule``)."""


def quick_rule():
    """The rule of :data:`QUICK_RULE_FILE`, read as ``--decision-rule`` reads it: per train
    task the baseline 2 (the weakness's 1 per candidate build, afresh), the candidate 1, 2,
    then 3; more builds of a deterministic builder would only cost time."""
    from orchestrator.improve.setup import read_rule

    return read_rule(QUICK_RULE_FILE)
