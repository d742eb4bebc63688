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

A change to an existing project (:func:`existing`) installs what the project itself
declares, for its primary stacks only (a Python project's ``package.json`` is tooling,
not installed unless the plan's stack names JavaScript), then what its tests need
(:func:`phases.suite.needed_by_tests`: the runner, its plugins, the test extras and groups) as
cadillac's own tooling: into ``.venv``, never into the project's files. A project
installed editable first has its build backend asked, offline, what an editable install
needs besides (hatchling's ``editables``), which is then installed from the index; a
backend that reads the version from git (hatch-vcs, setuptools-scm) is given the
repository's (:attr:`phases.base.Baseline.version`), as the sandbox shows it no git.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

from orchestrator.sandbox.files import what_is
from orchestrator.sandbox.installs import (
    DEPENDENCY_FILES,
    INSTALL_TIMEOUT_S,
    InstallError,
    InstallStep,
    install_steps,
    requirement_steps,
    subfolder_files,
)
from orchestrator.sandbox.venvs import make_venv
from phases.base import CheckResult, PhaseContext, Plan, PlanPhase, run_step
from phases.stacks import JS_TAGS, PYTHON_MANIFESTS
from phases.suite import needed_by_tests

BACKEND_PROBE = """
import importlib, json, os, sys, tomllib
system = tomllib.load(open("pyproject.toml", "rb")).get("build-system", {})
for folder in system.get("backend-path", []):
    sys.path.insert(0, os.path.abspath(folder))
name, _, attribute = system.get("build-backend", "setuptools.build_meta:__legacy__").partition(":")
backend = importlib.import_module(name)
for part in filter(None, attribute.split(".")):
    backend = getattr(backend, part)
hook = getattr(backend, "get_requires_for_build_editable", None)
print("\\ncadillac-requires:" + json.dumps(list(hook()) if hook else []))
"""
"""Asks the project's build backend, in the sandbox and offline, what an editable install
needs besides its build requirements (PEP 660's ``get_requires_for_build_editable``)."""
PROBE_MARK = "cadillac-requires:"


def check(ctx: PhaseContext, plan: Plan) -> CheckResult:
    if ctx.baseline is not None:
        return existing(ctx, plan)
    root = ctx.workspace.root
    declared = [n for n in DEPENDENCY_FILES if n in plan.files and what_is(root / n) is None]
    folders = subfolder_files(root, plan.files)
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


def project_files(root: Path, plan: Plan) -> list[str]:
    """The dependency files of an existing project that cadillac installs: those of its
    primary stacks (a Python project's ``package.json`` only when the plan's stack tags
    name JavaScript: Django's eslint is not the project)."""
    present = [n for n in DEPENDENCY_FILES if what_is(root / n) is None]
    python = any(n in PYTHON_MANIFESTS for n in present) or what_is(root / "setup.cfg") is None
    tags = {t.lower() for t in plan.stack}
    if python and not tags & JS_TAGS:
        present = [n for n in present if n != "package.json"]
    return present


def existing(ctx: PhaseContext, plan: Plan) -> CheckResult:
    """The deps check of a change to an existing project (see the module docstring)."""
    root, base = ctx.workspace.root, ctx.baseline
    assert base is not None
    declared = project_files(root, plan)
    failed = ensure_venv(ctx, root, fresh=True)
    if failed is not None:
        return failed
    try:
        steps = install_steps(root, declared, plan.dependencies, version=base.version)
    except (InstallError, UnicodeDecodeError, OSError) as exc:
        return CheckResult(passed=False, summary=f"cannot install from {declared[0]}: {exc}")
    for step in steps:
        if step.what == "the project itself" and what_is(root / "pyproject.toml") is None:
            failed = backend_needs(ctx, step)
            if failed is not None:
                return failed
        failed = run_step(ctx, f"installing {step.what}", step.command, INSTALL_TIMEOUT_S, step)
        if failed is not None:
            return failed
    shown = [n for n in declared if n != "setup.py" or "pyproject.toml" not in declared]
    done = [said(name) for name in shown] or ["no dependency file: .venv made"]
    done += install_test_tools(ctx)
    if plan.install_command and not repeats_an_install(plan.install_command, declared):
        failed = run_step(ctx, "the plan's install command (offline)", plan.install_command, 600)
        if failed is not None:
            return failed
    return CheckResult(passed=True, summary="; ".join(done))


def backend_needs(ctx: PhaseContext, project: InstallStep) -> CheckResult | None:
    """Install what the project's build backend says an editable install needs (asked
    offline, in the sandbox, with the version the install will have); a failing
    CheckResult or None. A backend that cannot be asked is left to the install to fail."""
    prefix = project.command.split(" .venv/bin/python", 1)[0]
    env = prefix if prefix.startswith("SETUPTOOLS_SCM_PRETEND_VERSION=") else ""
    probe = f"{env} python -c {shlex.quote(BACKEND_PROBE)}".strip()
    result = ctx.run(probe, timeout_s=120)
    lines = [ln for ln in result.output.splitlines() if ln.startswith(PROBE_MARK)]
    if not result.ok or not lines:
        return None
    try:
        wanted = json.loads(lines[-1][len(PROBE_MARK) :])
    except ValueError:
        return None
    wanted = [str(w) for w in wanted] if isinstance(wanted, list) else []
    root = ctx.workspace.root
    steps, refused = requirement_steps(
        root, "the build backend's editable requirements", wanted, "the build backend"
    )
    for step in steps:
        failed = run_step(ctx, f"installing {step.what}", step.command, INSTALL_TIMEOUT_S, step)
        if failed is not None:
            return failed
    for why in refused:
        ctx.note("install_refused", what="the build backend's editable requirements", why=why)
    return None


def install_test_tools(ctx: PhaseContext) -> list[str]:
    """Install what the project's tests need (:func:`phases.suite.needed_by_tests`) into
    ``.venv``; what was done, in words. A requirement pip finds no wheel for (Django's
    ``pylibmc``) is left out and the rest installed again, a few times at most; when the
    rest still fails, the runner alone is installed."""
    root, base = ctx.workspace.root, ctx.baseline
    needs = needed_by_tests(root, base.test_command if base else None)
    if not needs.all():
        return []
    where = ", ".join(needs.sources) or "the test runner's configuration"
    wanted, dropped, failure = needs.all(), [], ""
    for _ in range(WHEEL_RETRIES):
        failed = _install(ctx, wanted, f"the test tools ({where})", where)
        if failed is None:
            left = f"; without {', '.join(dropped)} (no wheel for this machine)" if dropped else ""
            return [f"the test tools ({where}) installed into .venv: {_listed(wanted)}{left}"]
        failure = failed.summary
        missing = {_name(m) for m in UNAVAILABLE.findall(failed.details)}
        kept = [r for r in wanted if _name(r) not in missing]
        if not missing or kept == wanted:
            break
        dropped += [r for r in wanted if _name(r) in missing]
        wanted = kept
    if (
        needs.declared
        and needs.runner
        and _install(ctx, needs.runner, "the test runner", where) is None
    ):
        return [f"the test runner installed into .venv: {_listed(needs.runner)} (the rest failed)"]
    ctx.note("test_tools_failed", why=failure[:500])
    return [f"the test tools could not be installed ({failure[:200]})"]


WHEEL_RETRIES = 4
UNAVAILABLE = re.compile(r"No matching distribution found for ([A-Za-z0-9][A-Za-z0-9._-]*)")


def _install(ctx: PhaseContext, wanted: list[str], what: str, where: str) -> CheckResult | None:
    steps, refused = requirement_steps(ctx.workspace.root, what, wanted, where)
    for why in refused:
        ctx.note("install_refused", what=what, why=why)
    for step in steps:
        failed = run_step(ctx, f"installing {what}", step.command, INSTALL_TIMEOUT_S, step)
        if failed is not None:
            return failed
    return None


def _name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else ""


def _listed(names: list[str], shown: int = 8) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


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
