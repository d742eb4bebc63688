"""Scoring one build by its hidden checks, without trusting anything in its workspace.

The workspace is the model's: any file in it, its ``.venv`` included, may be a forgery.
So a build is scored elsewhere, from scratch:

1. the project's regular files (not ``.venv``, caches or VCS folders; links and special
   files are never followed, only listed) are copied into a fresh scoring folder the
   model never saw (:func:`orchestrator.sandbox.files.copy_tree`);
2. a fresh virtual environment is made there from cadillac's own interpreter, and the
   dependency files the plan declares are installed into it by cadillac's own install
   commands (:mod:`orchestrator.sandbox.installs`);
3. the hidden checks and the judge (the standard-library runner and its wire to the
   project) are copied into the scoring folder beside the project, not into it, and are
   bound read-only into the sandbox: the project's code cannot change them;
4. two checks are added under random names (:class:`Canaries`), run after all the hidden
   checks: one that must pass and one that must fail;
5. the runner runs in the sandbox, without the network, from the project's folder, on
   cadillac's own interpreter with ``-I -S``; it never imports the project's code, which
   runs in a child process that answers the checks' proxies with plain data
   (:mod:`orchestrator.bench.acceptance_runner`);
6. the runner is handed a fresh secret in a file it removes before any project code runs,
   and signs its result line with it: only that line is read.

A task's hidden checks may also be user stories (``acceptance/stories.json``), driven
against the built artifact by cadillac's story driver with canaries of their own
(:mod:`orchestrator.bench.story_checks`); each story is one check beside the Python ones.

The verdict: ``scored`` when the runner's signed line reads and the canaries came out as
they must; ``tampered`` (score 0) when the must-fail check passed or the must-pass check
failed; ``broken`` (score 0) when no signed result could be read or the project could not
be set up (no valid plan, an install that fails). A build that is broken or tampered fails
its own task only, with the reason. A project that prints a forged result, patches what
it can reach or exits early is simply scored: its forgeries land in its own process and
its unsigned lines are ignored, and the checks it ended fail.
"""

from __future__ import annotations

import secrets
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from orchestrator.bench.story_checks import has_stories, score_stories
from orchestrator.bench.tasks import MatrixTask
from orchestrator.sandbox.executor import ExecConfig, run_command
from orchestrator.sandbox.files import copy_tree
from orchestrator.sandbox.installs import (
    DEPENDENCY_FILES,
    INSTALL_TIMEOUT_S,
    InstallError,
    install_steps,
    project_env,
    subfolder_files,
)
from orchestrator.sandbox.signing import (
    JUDGE_FILES,
    JUDGE_PYTHON,
    hand_key,
    last_report,
    new_key,
)
from orchestrator.sandbox.venvs import make_venv
from phases.base import PlanError, load_plan

RUNNER = JUDGE_FILES[0]
SKIP_DIRS = frozenset(
    {
        ".venv",
        "__pycache__",
        ".git",
        "node_modules",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".tox",
        ".cargo-home",
        ".gopath",
        "target",
    }
)
CHECKS_TIMEOUT_S = 600.0
Verdict = Literal["scored", "tampered", "broken"]


class Score(BaseModel):
    """What scoring one build found."""

    verdict: Verdict
    passed: int = 0
    """Hidden checks that passed (the canaries not counted)."""
    total: int = 0
    failures: str = ""
    """The first failing checks, or why the build is broken or tampered."""
    skipped: list[str] = []
    """Files of the workspace that were not copied (links, special files, oversized)."""

    @property
    def score(self) -> float:
        return self.passed / self.total if self.verdict == "scored" and self.total else 0.0


@dataclass
class Canaries:
    """A file of two checks with random names: ``good`` must pass, ``bad`` must fail."""

    file: str
    good: str
    bad: str

    @classmethod
    def new(cls) -> Canaries:
        return cls(
            f"test_{secrets.token_hex(4)}.py",
            f"test_{secrets.token_hex(4)}",
            f"test_{secrets.token_hex(4)}",
        )

    def source(self) -> str:
        return (
            f"def {self.good}():\n    assert sorted([3, 1, 2]) == [1, 2, 3]\n\n\n"
            f"def {self.bad}():\n    assert sorted([3, 1, 2]) == [3, 2, 1]\n"
        )

    def judge(self, report: dict) -> str:
        """Why the report cannot be true ("" when the canaries came out right)."""
        good, bad = f"{self.file}::{self.good}", f"{self.file}::{self.bad}"
        failed = {f.get("check") for f in report.get("failures", []) if isinstance(f, dict)}
        passed = set(report.get("passed_checks", []))
        if bad in passed or bad not in failed:
            return "a check that must fail was reported as passing"
        if good in failed or good not in passed:
            return "a check that must pass was reported as failing"
        return ""


def score_build(
    task: MatrixTask, workspace: Path, folder: Path, executor: ExecConfig, cache_dir: Path | None
) -> Score:
    """Score the project in ``workspace`` against ``task``'s hidden checks, in ``folder``."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    project = folder / "project"
    copied = copy_tree(workspace, project, skip_dirs=SKIP_DIRS)
    broken = _set_up(project, executor, cache_dir, every_file=task.kind == "enhance")
    if broken:
        return Score(verdict="broken", failures=broken, skipped=copied.skipped)
    stories = has_stories(task.dir)
    python = any(p.suffix == ".py" for p in (task.dir / "acceptance").iterdir())
    score = _python_checks(task, project, folder, executor) if python or not stories else None
    if not stories or (score is not None and score.verdict != "scored"):
        return score.model_copy(update={"skipped": copied.skipped})
    told = score_stories(task.dir, project, folder, executor, cache_dir)
    if told.why:
        verdict = "tampered" if told.tampered else "broken"
        return Score(verdict=verdict, failures=told.why, skipped=copied.skipped)
    score = score or Score(verdict="scored")
    return Score(
        verdict="scored",
        passed=score.passed + told.passed,
        total=score.total + told.total,
        failures="; ".join(filter(None, [score.failures, *(told.failures or [])[:5]])),
        skipped=copied.skipped,
    )


def _python_checks(task: MatrixTask, project: Path, folder: Path, executor: ExecConfig) -> Score:
    """The task's Python checks, run by the acceptance runner in the set-up ``project``."""
    checks, last = folder / "checks", folder / "last"
    shutil.copytree(task.dir / "acceptance", checks)
    last.mkdir()
    canaries = Canaries.new()
    (last / canaries.file).write_text(canaries.source(), encoding="utf-8")
    judge = folder / "judge"
    judge.mkdir()
    for source in JUDGE_FILES:
        shutil.copy(source, judge / source.name)
    key = new_key()
    key_file = hand_key(project, key)
    argv = [
        JUDGE_PYTHON, "-I", "-S", judge / RUNNER.name,
        "--python", project / ".venv" / "bin" / "python",
        "--key-file", key_file, checks, last,
    ]  # fmt: skip
    result = run_command(
        shlex.join(map(str, argv)),
        project,
        executor,
        timeout_s=CHECKS_TIMEOUT_S,
        path_prefix=[project / ".venv" / "bin"],
        env=project_env(project),
        visible=[checks, last, judge],
    )
    report = last_report(result.output, key)
    if report is None:
        why = f"the acceptance runner printed no result: {result.for_model()[-300:]}"
        return Score(verdict="broken", failures=why)
    tampered = canaries.judge(report)
    if tampered:
        return Score(verdict="tampered", failures=tampered)
    failures = [
        f for f in report.get("failures", []) if not str(f.get("check")).startswith(canaries.file)
    ]
    return Score(
        verdict="scored",
        passed=int(report.get("passed", 0)) - 1,
        total=int(report.get("total", 0)) - 2,
        failures="; ".join(f"{f['check']}: {str(f.get('error'))[:120]}" for f in failures[:5]),
    )


def _set_up(
    project: Path, executor: ExecConfig, cache_dir: Path | None, every_file: bool = False
) -> str:
    """A fresh environment with the declared dependencies; "" or why it cannot be made.

    A build's plan declares its dependency files; a changed project (``every_file``) has
    its own, which its plan need not list when the change leaves them alone."""
    try:
        plan = load_plan(project)
        declared = DEPENDENCY_FILES if every_file else plan.files
        steps = install_steps(project, declared, plan.dependencies)
        for folder, names in [] if every_file else subfolder_files(project, plan.files):
            steps += install_steps(project, names, folder=folder)
    except (PlanError, InstallError, OSError, UnicodeDecodeError) as exc:
        return f"the project cannot be set up: {exc}"
    failed = make_venv(project / ".venv", cache_dir)
    if failed:
        return failed
    for step in steps:
        done = run_command(
            step.command,
            project,
            executor,
            timeout_s=INSTALL_TIMEOUT_S,
            path_prefix=[project / ".venv" / "bin"],
            env=project_env(project),
            install=step,
        )
        if not done.ok:
            return f"installing {step.what} failed: {done.for_model()[-300:]}"
    return ""
