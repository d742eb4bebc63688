"""Trying code in isolation: the project's own tests, and the matrix, with the code in a folder.

A trial runs in a worktree (:mod:`orchestrator.improve.git`) holding the patched code:
the project's own test suite runs there first, then the matrix runs in a subprocess
whose ``PYTHONPATH`` starts at the worktree, so the builds use the patched orchestrator.
:class:`MatrixRunner` is what the cycle needs of a matrix; :class:`SubprocessMatrix`
is the real one (tests give the cycle others).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Protocol

from orchestrator.bench.results import MatrixResults
from orchestrator.errors import CadillacError


def code_env(code: Path) -> dict[str, str]:
    """An environment whose Python imports cadillac from ``code`` first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_tests(code: Path, command: list[str], log: Path, timeout_s: float = 1800) -> bool:
    """The project's own tests with the code in ``code``; output to ``log``; True if they pass."""
    try:
        done = subprocess.run(
            command, cwd=code, env=code_env(code), capture_output=True, text=True, timeout=timeout_s
        )
        log.write_text(
            f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}\nexit {done.returncode}\n"
        )
        return done.returncode == 0
    except subprocess.TimeoutExpired:
        log.write_text(f"$ {' '.join(command)}\ntimed out after {timeout_s:g} s\n")
        return False


class MatrixRunner(Protocol):
    def run(self, code: Path, label: str) -> MatrixResults:
        """The matrix (train and holdout, K repeats) with the orchestrator code in ``code``."""
        ...


class SubprocessMatrix:
    """Runs ``cadillac matrix run`` in a subprocess that imports from the given code."""

    def __init__(
        self,
        home: Path,
        matrix: Path,
        model: str,
        repeats: int,
        jobs: int = 1,
        api_base: str | None = None,
        timeout_s: float = 6 * 3600,
    ):
        self.home, self.matrix, self.model = home, matrix, model
        self.repeats, self.jobs, self.api_base, self.timeout_s = repeats, jobs, api_base, timeout_s

    def run(self, code: Path, label: str) -> MatrixResults:
        command = [
            sys.executable,
            "-m",
            "orchestrator",
            "matrix",
            "run",
            "--home",
            str(self.home),
            "--matrix",
            str(self.matrix),
            "--model",
            self.model,
            "--repeats",
            str(self.repeats),
            "--jobs",
            str(self.jobs),
            "--split",
            "all",
            "--no-learn",
            "--json",
        ]
        if self.api_base:
            command += ["--api-base", self.api_base]
        done = subprocess.run(
            command,
            cwd=code,
            env=code_env(code),
            capture_output=True,
            text=True,
            timeout=self.timeout_s,
        )
        if done.returncode != 0:
            raise CadillacError(f"the {label} matrix run failed: {done.stderr.strip()[-500:]}")
        return MatrixResults.model_validate_json(done.stdout)
