"""Trying a patch in isolation: a git worktree on a new branch, the project's tests, the matrix.

The user's checked-out work tree is never touched here. A trial makes a
worktree of the orchestrator's repository on a new branch (from the last
accepted commit), applies the edits there, runs the project's own test suite
with that code, and runs the matrix with that code in a subprocess whose
``PYTHONPATH`` starts at the worktree. Accepting commits on the branch;
rejecting removes the worktree and the branch; either way the worktree folder
is removed, also when the trial is interrupted.

One improve cycle at a time per repository: :func:`cycle_lock` holds a lock in
the repository's git folder, and a second cycle is refused with a clear error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from filelock import FileLock, Timeout

from orchestrator.errors import CadillacError
from orchestrator.matrix import MatrixResults

GIT_IDENTITY = ["-c", "user.name=cadillac improve", "-c", "user.email=cadillac@localhost"]


def git(repo: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *GIT_IDENTITY, *args], capture_output=True, text=True, timeout=300
    )
    if check and done.returncode != 0:
        raise CadillacError(f"git {' '.join(args)} failed: {done.stderr.strip()[:300]}")
    return done.stdout.strip()


def repo_root(path: Path) -> Path:
    """The top of the git checkout holding ``path``; CadillacError when there is none."""
    done = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise CadillacError(
            f"{path} is not a git checkout: improve patches a repository "
            "(clone cadillac with git, or pass --repo PATH)"
        )
    return Path(done.stdout.strip())


def cycle_lock(repo: Path) -> FileLock:
    """The lock of one improve cycle on this repository, acquired; raise if it is taken."""
    common = Path(git(repo, "rev-parse", "--git-common-dir"))
    lock = FileLock(str((repo / common).resolve() / "cadillac-improve.lock"), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise CadillacError(
            f"another improve cycle is running on {repo}; wait for it to end "
            "or stop it (a STOP file in its run folder)"
        ) from None
    return lock


def files_at(repo: Path, commit: str) -> Callable[[str], str | None]:
    """A reader of the repository's files as of ``commit``: text, or None when absent."""

    def read(path: str) -> str | None:
        done = subprocess.run(
            ["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True
        )
        if done.returncode != 0:
            return None
        try:
            return done.stdout.decode("utf-8")
        except UnicodeDecodeError:
            return None

    return read


def work_tree_clean(repo: Path) -> bool:
    return git(repo, "status", "--porcelain", "--untracked-files=no") == ""


class Worktree:
    """A worktree on a new branch (or detached); removed on exit, the branch unless kept."""

    def __init__(self, repo: Path, branch: str | None, base: str):
        self.repo, self.branch = repo, branch
        self.path = Path(tempfile.mkdtemp(prefix="cadillac-trial-")) / "tree"
        where = ["-b", branch] if branch else ["--detach"]
        git(repo, "worktree", "add", "-q", *where, str(self.path), base)
        self.keep_branch = False

    def diff(self) -> str:
        git(self.path, "add", "-A")
        return git(self.path, "diff", "--cached")

    def commit(self, message: str) -> str:
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "-m", message)
        self.keep_branch = True
        return git(self.path, "rev-parse", "HEAD")

    def close(self) -> None:
        git(self.repo, "worktree", "remove", "--force", str(self.path), check=False)
        shutil.rmtree(self.path.parent, ignore_errors=True)
        git(self.repo, "worktree", "prune", check=False)
        if self.branch and not self.keep_branch:
            git(self.repo, "branch", "-D", self.branch, check=False)

    def __enter__(self) -> Worktree:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
