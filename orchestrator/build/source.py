"""Where an enhance build's workspace comes from, and where its work goes.

``cadillac enhance`` changes a project that exists; the user's own files are never
touched while it does:

* a **git repository** gets a new worktree in the run folder on a new branch
  ``cadillac/<run-id>``, made from its HEAD; the checked-out tree and branch stay as they
  are;
* a **plain folder** (or, for ``cadillac iterate``, a finished run's workspace) is copied
  into the run folder (regular files only: links are listed, never followed) and gets a
  private repository of its own in ``runs/<id>/git``, so both kinds are recorded alike.

After each phase that passed, what changed is committed on that branch (one commit per
phase that changed something: the history reads as the build went), and the whole change
since the start is written to ``runs/<id>/changes.patch``. cadillac's own files
(``plan.json``, ``PLAN.md``) and installed environments are never committed. Those
commits are the build's checkpoints: a resumed build runs again the phase it stopped in,
from its start, so :func:`restore` first takes the workspace back to the last commit
(what the stopped phase half wrote is discarded and listed; environments and cadillac's
files stay).

The workspace is the model's, and a model can write a ``.git`` file or folder of its own
there, whose configuration could name commands git would run. So cadillac never lets
git discover a repository in the workspace: every git command here names the git
directory found before the model ran (``--git-dir``, ``--work-tree``), with hooks and
the file-system monitor switched off and no system or global configuration.

``apply`` brings a passed build's change into the user's tree: a fast-forward of the
checked-out branch when it is still at the commit the build started from and its tree is
clean, else ``git apply`` of the patch onto a clean tree; a plain folder gets the patch
when none of the files it touches changed since the copy.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from orchestrator.errors import CadillacError
from orchestrator.sandbox.files import copy_tree
from orchestrator.sandbox.installs import ENV_DIRS

CADILLAC_FILES = ("plan.json", "PLAN.md")
"""cadillac's own records in a workspace: never part of the change."""
COPY_SKIP = frozenset({".git", *ENV_DIRS, "__pycache__", ".pytest_cache", ".mypy_cache"})
AUTHOR = ("cadillac", "cadillac@localhost")
GIT_TIMEOUT_S = 120


class Source(BaseModel):
    """Where an enhance build came from (kept in its task.json)."""

    kind: Literal["git", "folder", "run"]
    path: str
    """The user's repository or folder, or the parent run's workspace."""
    parent_run: str | None = None
    """For ``cadillac iterate``: the run whose workspace this build continues."""
    git_dir: str
    """The git directory that records the work (the worktree's, or ``runs/<id>/git``)."""
    base: str
    """The commit the work starts from."""
    branch: str
    skipped: list[str] = []
    """Files of a copied folder that were not copied (links, special files, oversized)."""


class GitError(CadillacError):
    """A git command cadillac needed failed; the message has git's own words."""


def _env() -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_AUTHOR_NAME=AUTHOR[0],
        GIT_AUTHOR_EMAIL=AUTHOR[1],
        GIT_COMMITTER_NAME=AUTHOR[0],
        GIT_COMMITTER_EMAIL=AUTHOR[1],
    )
    return env


SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=", "-c", "commit.gpgsign=false")


def git(*args: str, cwd: Path | None = None, check: bool = True) -> str:
    """Run git with hooks and the file-system monitor off; its output, or GitError."""
    try:
        done = subprocess.run(
            ["git", *SAFE, *args],
            cwd=cwd,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]} could not run: {exc}") from None
    if check and done.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} failed: {done.stderr.strip()[-400:]}")
    return done.stdout


def repository_of(path: Path) -> Path | None:
    """The top of the git repository ``path`` is, when ``path`` is one's top; else None."""
    if not (path / ".git").exists():
        return None
    try:
        top = git("-C", str(path), "rev-parse", "--show-toplevel").strip()
    except GitError:
        return None
    return Path(top).resolve() if Path(top).resolve() == path.resolve() else None


def prepare(path: Path, workspace: Path, run_dir: Path, run_id: str, parent: str | None = None):
    """Fill the (empty) ``workspace`` from ``path``; the :class:`Source` that records it."""
    branch = f"cadillac/{run_id}"
    repo = None if parent else repository_of(path)
    if repo is not None:
        base = git("-C", str(repo), "rev-parse", "--verify", "HEAD^{commit}").strip()
        git("-C", str(repo), "worktree", "add", "-q", "-b", branch, str(workspace), base)
        git_dir = git("-C", str(workspace), "rev-parse", "--absolute-git-dir").strip()
        return Source(kind="git", path=str(repo), git_dir=git_dir, base=base, branch=branch)
    workspace.rmdir()  # made empty with the run; the copy makes it again
    copied = copy_tree(path, workspace, skip_dirs=COPY_SKIP)
    if parent:  # the parent run's plan is its own record: the next version plans afresh
        for name in CADILLAC_FILES:
            (workspace / name).unlink(missing_ok=True)
    git_dir = run_dir / "git"
    git(f"--git-dir={git_dir}", "init", "-q", "-b", branch)
    source = Source(
        kind="run" if parent else "folder",
        path=str(path),
        parent_run=parent,
        git_dir=str(git_dir),
        base="",
        branch=branch,
        skipped=copied.skipped,
    )
    source.base = commit(source, workspace, "the project as cadillac found it", allow_empty=True)
    return source


def _git(source: Source, workspace: Path, *args: str, check: bool = True) -> str:
    where = (f"--git-dir={source.git_dir}", f"--work-tree={workspace}")
    return git(*where, *args, cwd=workspace, check=check)


def _excluded() -> list[str]:
    return [f":(exclude){name}" for name in (*CADILLAC_FILES, *ENV_DIRS)] + [
        ":(exclude,glob)**/__pycache__/**"
    ]


def commit(source: Source, workspace: Path, message: str, allow_empty: bool = False) -> str:
    """Commit what changed in ``workspace`` (cadillac's own files left out); the new head.
    Nothing changed: no commit, the current head."""
    _git(source, workspace, "add", "-A", "--", ".", *_excluded())
    staged = _git(source, workspace, "diff", "--cached", "--name-only")
    if staged.strip() or allow_empty:
        _git(source, workspace, "commit", "-q", "--no-verify", "--allow-empty", "-m", message)
    return _git(source, workspace, "rev-parse", "HEAD").strip()


def restore(source: Source, workspace: Path) -> list[str]:
    """Take ``workspace`` back to its last commit: tracked files as committed, files made
    since removed (environments, caches and cadillac's own files kept). Returns the paths
    that were changed or made since, as they were discarded."""
    changed = _git(source, workspace, "status", "-z", "--porcelain", "--untracked-files=no", "--")
    keep = [*CADILLAC_FILES, *ENV_DIRS, "__pycache__"]
    exclude = [arg for name in keep for arg in ("-e", name)]
    made = _git(source, workspace, "clean", "-n", "-d", *exclude, "--")
    _git(source, workspace, "reset", "-q", "--hard", "HEAD")
    _git(source, workspace, "clean", "-q", "-f", "-d", *exclude, "--")
    lost, entries = [], iter(changed.split("\0"))
    for entry in entries:  # "XY path"; a rename or copy is followed by its old path alone
        if entry:
            lost.append(entry[3:])
            if "R" in entry[:2] or "C" in entry[:2]:
                next(entries, None)
    lost += [line.removeprefix("Would remove ") for line in made.splitlines() if line]
    return sorted(set(lost))


def write_patch(source: Source, workspace: Path, out: Path) -> str:
    """The whole change since the start, as a patch ``git apply`` takes; also written to
    ``out``. Returns the patch's ``--stat`` summary."""
    patch = _git(source, workspace, "diff", "--binary", f"{source.base}..HEAD")
    out.write_text(patch, encoding="utf-8")
    return _git(source, workspace, "diff", "--stat", f"{source.base}..HEAD").strip()


def changed_files(source: Source, workspace: Path) -> list[str]:
    """The files the committed change touches, relative to the project."""
    names = _git(source, workspace, "diff", "--name-only", f"{source.base}..HEAD")
    return [n for n in names.splitlines() if n]


def apply(source: Source, workspace: Path, patch: Path) -> str:
    """Bring the change into the user's tree (see the module docstring); what was done."""
    target = Path(source.path)
    if source.kind == "git":
        dirty = git("-C", str(target), "status", "--porcelain", "--untracked-files=no")
        if dirty.strip():
            raise CadillacError(
                f"{target} has uncommitted changes: commit or stash them, then apply "
                f"the branch {source.branch} (or {patch}) yourself"
            )
        head = git("-C", str(target), "rev-parse", "HEAD").strip()
        if head == source.base:
            git("-C", str(target), "merge", "-q", "--ff-only", source.branch)
            return f"fast-forwarded {target} to {source.branch}"
        git("-C", str(target), "apply", "--check", str(patch))
        git("-C", str(target), "apply", str(patch))
        return f"applied {patch.name} to {target} (its HEAD moved since the build began)"
    for name in changed_files(source, workspace):
        found = target / name
        if not found.exists() and not found.is_symlink():
            continue  # a file the change adds (git apply refuses one that appeared since)
        original = _git(source, workspace, "show", f"{source.base}:{name}", check=False)
        if found.is_symlink() or not found.is_file() or found.read_bytes() != original.encode():
            raise CadillacError(
                f"{found} changed since cadillac copied {target}: apply {patch} yourself"
            )
    _git(source, target, "apply", "--check", str(patch))
    _git(source, target, "apply", str(patch))
    return f"applied {patch.name} to {target}"


def discard(source: Source, workspace: Path) -> None:
    """Undo :func:`prepare` for a build that could not start: the worktree and its branch."""
    if source.kind != "git":
        return
    repo = Path(source.path)
    git("-C", str(repo), "worktree", "remove", "--force", str(workspace), check=False)
    git("-C", str(repo), "branch", "-D", source.branch, check=False)
