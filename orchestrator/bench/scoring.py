"""Scoring one build: its hidden checks, copied in after the build, run by its own Python.

The acceptance folder of the task is copied into the workspace, with the
standard-library runner (:mod:`orchestrator.bench.acceptance_runner`), and the task's
acceptance command runs in the sandbox with the workspace's virtual environment first
on ``PATH``. The runner's last JSON line gives the checks passed and their total.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from orchestrator.bench.tasks import ACCEPTANCE_DIR, RUNNER_NAME, MatrixTask
from orchestrator.build.agent import BuildConfig
from orchestrator.sandbox.executor import run_command

RUNNER = Path(__file__).resolve().parent / "acceptance_runner.py"


def score_workspace(task: MatrixTask, workspace: Path, build: BuildConfig) -> tuple[int, int, str]:
    """Copy the hidden checks in and run them with the workspace's Python: passed, total, why."""
    shutil.copytree(task.dir / "acceptance", workspace / ACCEPTANCE_DIR, dirs_exist_ok=True)
    shutil.copy(RUNNER, workspace / RUNNER_NAME)
    venv_bin = workspace / ".venv" / "bin"
    result = run_command(
        task.acceptance_command,
        workspace,
        build.executor,
        timeout_s=600,
        path_prefix=[venv_bin],
        env={"VIRTUAL_ENV": str(venv_bin.parent)},
    )
    for line in reversed(result.output.strip().splitlines()):
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict) and "total" in report:
            failures = "; ".join(
                f"{f['check']}: {f['error'][:120]}" for f in report.get("failures", [])[:5]
            )
            return int(report.get("passed", 0)), int(report["total"]), failures
    return 0, 0, f"the acceptance runner printed no result: {result.for_model()[-300:]}"
