"""Git, as the improve cycle uses it: the repository, its lock, its files, worktrees.

The user's checked-out work tree is never touched here. A :class:`Worktree` is a
separate checkout of the repository, on a new branch (a trial) or detached (the
baseline), removed on exit; its branch is deleted unless the trial was kept. One improve
cycle at a time per repository: :func:`cycle_lock` holds a lock in the repository's git
folder, and a second cycle is refused with a clear error.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock, Timeout

from orchestrator.errors import CadillacError

GIT_IDENTITY = ["-c", "user.name=cadillac improve", "-c", "user.email=cadillac@localhost"]


def git(repo: Path, *args: str, check: bool = True, strip: bool = True) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *GIT_IDENTITY, *args], capture_output=True, text=True, timeout=300
    )
    if check and done.returncode != 0:
        raise CadillacError(f"git {' '.join(args)} failed: {done.stderr.strip()[:300]}")
    return done.stdout.strip() if strip else done.stdout


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

    def diff(self, files: list[str]) -> str:
        """The uncommitted change to ``files`` (a proposal edits files that exist)."""
        return git(self.path, "diff", "--", *files)

    def changed_besides(self, files: list[str]) -> list[str]:
        """Paths changed, added or removed in the worktree other than ``files``."""
        status = git(self.path, "status", "--porcelain", "--untracked-files=all", "-z", strip=False)
        changed = [entry[3:] for entry in status.split("\0") if entry]
        return sorted(p for p in changed if p not in files)

    def commit(self, message: str, files: list[str]) -> str:
        """Commit exactly ``files``; the commit's id."""
        git(self.path, "add", "--", *files)
        git(self.path, "commit", "-q", "-m", message, "--", *files)
        self.keep_branch = True
        return git(self.path, "rev-parse", "HEAD")

    def show(self, commit: str) -> str:
        """The diff a commit made."""
        return git(self.path, "show", "--format=", "--patch", commit)

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
