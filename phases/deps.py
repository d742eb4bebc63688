"""deps: declare the dependencies and install them into the workspace's own virtual environment.

The check makes ``.venv`` in the workspace when it is missing (with the Python
running cadillac) and runs the plan's install command with that environment
first on PATH; the install step is the one command allowed to reach the
network inside the sandbox.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from phases.base import CheckResult, PhaseContext, Plan, PlanPhase, run_step

DEPENDENCY_FILES = (
    "requirements.txt",
    "pyproject.toml",
    "setup.py",
    "package.json",
    "Cargo.toml",
    "go.mod",
)


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    root = ctx.workspace.root
    present = [name for name in DEPENDENCY_FILES if (root / name).is_file()]
    if not present:
        return CheckResult(
            passed=False,
            summary=f"no dependency file: write one of {', '.join(DEPENDENCY_FILES)}",
        )
    if not (root / ".venv" / "bin" / "python").exists():
        made = make_venv(ctx)
        if made is not None:
            return made
    failed = run_step(ctx, "the install command", plan.install_command, timeout_s=900, network=True)
    if failed is not None:
        return failed
    return CheckResult(passed=True, summary=f"{present[0]} installed into .venv")


def make_venv(ctx: PhaseContext) -> CheckResult | None:
    """``.venv`` in the workspace: a copy of a cached template when there is a cache (0.1 s
    instead of 2-3 s of ensurepip per build), else a new one. None when it worked."""
    python = shlex.quote(sys.executable)
    if ctx.cache_dir is None:
        return run_step(ctx, "making the virtual environment", f"{python} -m venv .venv", 300)
    key = hashlib.blake2b(sys.executable.encode(), digest_size=4).hexdigest()
    template = ctx.cache_dir / f"venv-py{sys.version_info[0]}.{sys.version_info[1]}-{key}"
    template.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(template) + ".lock"):
        if not (template / "bin" / "python").exists():
            fresh = template.with_name(template.name + ".new")
            shutil.rmtree(fresh, ignore_errors=True)
            subprocess.run(
                [sys.executable, "-m", "venv", str(fresh)],
                check=True,
                capture_output=True,
                timeout=300,
            )
            shutil.rmtree(template, ignore_errors=True)
            os.replace(fresh, template)
    target = ctx.workspace.root / ".venv"
    shutil.copytree(template, target, symlinks=True)
    _repoint(target, template)
    return None


def _repoint(venv: Path, old: Path) -> None:
    """Make a copied venv's scripts name their own interpreter, not the template's."""
    for entry in [*(venv / "bin").iterdir(), venv / "pyvenv.cfg"]:
        if entry.is_symlink() or not entry.is_file():
            continue
        try:
            text = entry.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if str(old) in text:
            entry.write_text(text.replace(str(old), str(venv)), encoding="utf-8")


PHASE = PlanPhase("deps", check)
