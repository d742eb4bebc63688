"""deps: declare the dependencies; cadillac installs them into the workspace's own environment.

The check makes ``.venv`` in the workspace afresh (a copy of a cached template made
with the Python running cadillac), then runs cadillac's own install commands for the
dependency files the plan declares (:mod:`orchestrator.sandbox.installs`): the only
commands of a build that reach the network, and ones that run no code of the project
or of what it depends on while they do. The environment is made anew before every
install because the model can write into it: a ``bin/python`` it replaced (or linked to
a script of its own) or a ``.pth`` file it planted in ``site-packages`` would otherwise
run with the network on. A plan's own ``install_command``, if it has one, runs
afterwards without the network, unless all it does is install the ``requirements.txt``
cadillac has just installed (:func:`repeats_an_install`).
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from orchestrator.sandbox.files import what_is
from orchestrator.sandbox.installs import (
    DEPENDENCY_FILES,
    INSTALL_TIMEOUT_S,
    InstallError,
    install_steps,
    subfolder_files,
)
from orchestrator.sandbox.venvs import make_venv
from phases.base import CheckResult, PhaseContext, Plan, PlanPhase, run_step


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    root = ctx.workspace.root
    listed = plan.files if ctx.baseline is None else DEPENDENCY_FILES  # a project has its own
    declared = [n for n in DEPENDENCY_FILES if n in listed and what_is(root / n) is None]
    folders = [] if ctx.baseline is not None else subfolder_files(root, plan.files)
    if not declared and ctx.baseline is not None:
        failed = ensure_venv(ctx, root)
        return failed or CheckResult(passed=True, summary="no dependency file: .venv made")
    if not declared and not folders:
        return CheckResult(
            passed=False,
            summary=f"no dependency file: write one of {', '.join(DEPENDENCY_FILES)} and list it "
            "in plan.json's files",
        )
    failed = ensure_venv(ctx, root, fresh=True)
    if failed is not None:
        return failed
    try:
        steps = install_steps(root, declared, plan.dependencies)
    except (InstallError, UnicodeDecodeError, OSError) as exc:
        return CheckResult(passed=False, summary=f"cannot install from {declared[0]}: {exc}")
    installed = [said(name) for name in declared]
    for folder, names in folders:
        try:
            steps += install_steps(root, names, folder=folder)
        except (InstallError, UnicodeDecodeError, OSError) as exc:
            return CheckResult(passed=False, summary=f"cannot install from {folder}/: {exc}")
        installed += [said(name, folder) for name in names]
    for step in steps:
        what = f"installing {step.what}"
        failed = run_step(ctx, what, step.command, INSTALL_TIMEOUT_S, install=step)
        if failed is not None:
            return failed
    done = "; ".join(installed)
    if plan.install_command and repeats_an_install(plan.install_command, declared):
        return CheckResult(passed=True, summary=f"{done}; the plan's install command repeats it")
    if plan.install_command:
        failed = run_step(ctx, "the plan's install command (offline)", plan.install_command, 600)
        if failed is not None:
            return failed
    return CheckResult(passed=True, summary=done)


def said(name: str, folder: str = ".") -> str:
    """What installing one dependency file did, in the words of its stack."""
    where = "" if folder == "." else f"{folder}/"
    if name == "package.json":
        return f"{where}package.json installed into {where}node_modules"
    if name == "Cargo.toml":
        return f"{where}Cargo.toml's crates fetched"
    if name == "go.mod":
        return f"{where}go.mod's modules downloaded"
    return f"{where}{name} installed into .venv"


PYTHONS = {"python", "python3", ".venv/bin/python", ".venv/bin/python3"}


def repeats_an_install(command: str, declared: list[str]) -> bool:
    """Whether a plan's install command only installs a requirements file that cadillac
    has just installed itself (``pip install -r requirements.txt``, the commonest one):
    run again offline it could do nothing more, and costs a second a build."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if words[:2] in (["pip", "install"], ["pip3", "install"]):
        rest = words[2:]
    elif len(words) > 4 and words[0] in PYTHONS and words[1:4] == ["-m", "pip", "install"]:
        rest = words[4:]
    else:
        return False
    rest = [w for w in rest if w not in ("-q", "--quiet")]
    return (
        len(rest) == 2
        and rest[0] in ("-r", "--requirement")
        and rest[1] in ("requirements.txt", "./requirements.txt")
        and "requirements.txt" in declared
    )


def ensure_venv(ctx: PhaseContext, root: Path, fresh: bool = False) -> CheckResult | None:
    """``root/.venv`` ready to use, made by cadillac (``fresh``: made anew even when one is
    there, before a step with the network); a failing CheckResult, or None."""
    venv = root / ".venv"
    found = what_is(venv)
    usable = what_is(venv / "bin" / "python") in (None, "a symbolic link")
    if found == "a folder" and usable and not fresh:
        return None
    if found not in ("nothing", "a folder"):
        return CheckResult(
            passed=False, summary=f".venv in the workspace is {found}; remove it, cadillac makes it"
        )
    if found == "a folder":
        shutil.rmtree(venv)  # half-made, or the model's (rmtree never follows links)
    failed = make_venv(venv, ctx.cache_dir)
    return None if failed is None else CheckResult(passed=False, summary=failed[:300])


PHASE = PlanPhase("deps", check)
