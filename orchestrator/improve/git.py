"""Git, as the improve cycle uses it: the repository, its lock, its files, worktrees.

The user's checked-out work tree is never touched here. A :class:`Worktree` is a
separate checkout of the repository, on a new branch (a trial) or detached (the
baseline), removed on exit; its branch is deleted unless the trial was kept. One improve
cycle at a time per repository: :func:`cycle_lock` holds a lock in the repository's git
folder, and a second cycle is refused with a clear error.

Every git command goes through :mod:`orchestrator.sandbox.git`; one on a worktree (which a
trial's sandboxed commands could write) names the worktree's git directory, recorded
when it was made, and is guarded (no nested ``.git``, no new gitlink, no driver).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock, Timeout

from orchestrator.errors import CadillacError
from orchestrator.sandbox import git as safe
from orchestrator.sandbox.git import GitError, status_paths

IDENTITY = ("cadillac improve", "cadillac@localhost")
TIMEOUT_S = 300


def git(repo: Path, *args: str, check: bool = True, strip: bool = True) -> str:
    """git in the repository (cadillac's own checkout), through the safe runner."""
    out = safe.git(*args, repo=repo, check=check, identity=IDENTITY, timeout=TIMEOUT_S)
    return out.strip() if strip else out


def repo_root(path: Path) -> Path:
    """The top of the git checkout holding ``path``; CadillacError when there is none."""
    try:
        return Path(git(path, "rev-parse", "--show-toplevel"))
    except GitError:
        raise CadillacError(
            f"{path} is not a git checkout: improve patches a repository "
            "(clone cadillac with git, or pass --repo PATH)"
        ) from None


def _lock_path(repo: Path) -> Path:
    common = Path(git(repo, "rev-parse", "--git-common-dir"))
    return (repo / common).resolve() / "cadillac-improve.lock"


def cycle_running(repo: Path) -> bool:
    """Whether a live process holds this repository's improve lock (a killed cycle holds
    none); False when there is no repository there any more."""
    from orchestrator.loop.runs import lock_held

    try:
        return lock_held(_lock_path(repo))
    except GitError:
        return False


def cycle_lock(repo: Path) -> FileLock:
    """The lock of one improve cycle on this repository, acquired; raise if it is taken."""
    lock = FileLock(str(_lock_path(repo)), timeout=0)
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
        try:
            data = safe.run_git("cat-file", "blob", f"{commit}:{path}", repo=repo, binary=True)
            return bytes(data).decode("utf-8")
        except (GitError, UnicodeDecodeError):
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
        git_dir = git(self.path, "rev-parse", "--absolute-git-dir")  # before anything ran in it
        self.tree = safe.WorkTree(git_dir, self.path, identity=IDENTITY)
        """Every later command: with the recorded git directory, guarded."""

    def _git(self, *args: str, strip: bool = True) -> str:
        out = self.tree.git(*args)
        return out.strip() if strip else out

    def diff(self, files: list[str]) -> str:
        """The uncommitted change to ``files`` (a proposal edits files that exist)."""
        return self._git("diff", "--", *files)

    def changed_besides(self, files: list[str]) -> list[str]:
        """Paths changed, added or removed in the worktree other than ``files`` (what the
        guard removed counts too: a nested ``.git`` is a change)."""
        status = self._git("status", "--porcelain", "--untracked-files=all", "-z", strip=False)
        changed = status_paths(status) + self.tree.removed
        return sorted({p for p in changed if p not in files})

    def commit(self, message: str, files: list[str]) -> str:
        """Commit exactly ``files``; the commit's id."""
        self._git("add", "--", *files)
        self._git("commit", "-q", "-m", message, "--", *files)
        self.keep_branch = True
        return self._git("rev-parse", "HEAD")

    def show(self, commit: str) -> str:
        """The diff a commit made."""
        return self._git("show", "--format=", "--patch", commit)

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
