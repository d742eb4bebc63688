"""Where an enhance build's workspace comes from, and where its work goes.

``cadillac enhance`` changes a project that exists; the user's own files are never
touched while it does:

* a **git repository** gets a new worktree in the run folder on a new branch
  ``cadillac/<run-id>``, made from its HEAD; the checked-out tree and branch stay as they
  are. A **bare** repository is one too (its files are git's, never the project): the
  worktree is made from it alike, and the branch is where the change goes (there is no
  tree to apply it to). A repository with no commit yet has nothing to start from and is
  refused;
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
there (a nested repository whose configuration names a filter, a ``.git`` file pointing
elsewhere), or a ``.gitattributes`` naming drivers. So every git command here goes
through :mod:`orchestrator.sandbox.git` (outside the improve cycle's reach): a command on
the workspace names the git directory found before the model ran, after the guard
removed every nested ``.git`` and new gitlink, with no driver, hook or submodule that
could run a program.

Working from HEAD leaves out what the user has not committed, and a worktree leaves
submodules as empty folders: :func:`survey` finds both before the run starts (the
command line says so, and refuses ``--apply`` on a tree it could not apply to before the
build is paid for).

``apply`` brings a passed build's change into the user's tree: a fast-forward of the
checked-out branch when it is still at the commit the build started from and its tree is
clean, else ``git apply`` of the patch onto a clean tree; a plain folder gets the patch
when none of the files it touches changed since the copy.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from memory.tags import project_tags
from orchestrator.errors import CadillacError
from orchestrator.sandbox.files import copy_tree
from orchestrator.sandbox.git import GitError, WorkTree, git, status_entries, status_paths
from orchestrator.sandbox.installs import ENV_DIRS

CADILLAC_FILES = ("plan.json", "PLAN.md", "stories.json")
"""cadillac's own records in a workspace: never part of the change."""
COPY_SKIP = frozenset({".git", *ENV_DIRS, "__pycache__", ".pytest_cache", ".mypy_cache"})
__all__ = [
    "GitError",
    "RepoState",
    "Source",
    "apply",
    "changed_files",
    "commit",
    "prepare",
    "restore",
    "survey",
]
Said = Callable[[str], None] | None
LISTED = 10
"""How many left-out files a note names before it says how many more."""


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
    bare: bool = False
    """The repository is bare: the change stays on :attr:`branch`, nothing is applied."""
    tags: list[str] = []
    """The project's stacks, read from its files at the start (:func:`project_tags`)."""
    version: str | None = None
    """The project's version from its repository's tags (:func:`version_of`), for a build
    backend that reads it from git; None for a folder, or a repository with no such tag."""


class RepoState(BaseModel):
    """What a repository holds that a build from its HEAD leaves out (see :func:`survey`)."""

    path: str
    kind: Literal["git", "bare", "folder"]
    head: str = ""
    uncommitted: list[str] = []
    """Tracked files changed (or staged) since HEAD."""
    untracked: list[str] = []
    """Files git does not track and does not ignore."""
    submodules: list[str] = []
    """Submodules at HEAD: empty folders in the workspace."""
    refused: str = ""
    """Why git would not read the folder's ``.git`` (it is copied as a plain folder)."""

    def notes(self) -> list[str]:
        """What to tell the user at the start, one line each."""
        out = []
        if self.refused:
            out.append(
                f"git will not read {self.path} as a repository ({self.refused}): cadillac "
                "copies it as a plain folder; to build from its HEAD on a branch, trust it "
                f"in your git configuration (git config --global --add safe.directory "
                f"{self.path})"
            )
        if self.uncommitted or self.untracked:
            parts = [f"{len(self.uncommitted)} uncommitted change(s)"] if self.uncommitted else []
            parts += [f"{len(self.untracked)} untracked file(s)"] if self.untracked else []
            out.append(
                f"cadillac works from HEAD ({self.head[:12]}): {' and '.join(parts)} are left "
                f"out: {_listed(self.uncommitted + self.untracked)}"
            )
        if self.submodules:
            out.append(
                f"submodule(s) are empty folders in the workspace (cadillac does not check "
                f"them out): {_listed(self.submodules)}"
            )
        return out


def _listed(paths: list[str]) -> str:
    more = len(paths) - LISTED
    return ", ".join(paths[:LISTED]) + (f" and {more} more" if more > 0 else "")


def bare_repository(path: Path) -> Path | None:
    """``path`` when it is a bare repository's git directory; else None. The git directory
    of a repository with a tree (its ``.git`` folder) is refused: its files are git's."""
    if not ((path / "HEAD").is_file() and (path / "objects").is_dir()):
        return None
    try:
        bare = git("rev-parse", "--is-bare-repository", repo=path).strip() == "true"
        found = Path(git("rev-parse", "--absolute-git-dir", repo=path).strip()).resolve()
    except GitError:
        return None
    if found != path.resolve():
        return None
    if not bare:
        raise CadillacError(
            f"{path} is a repository's git directory, not a project: give the project's "
            "folder (the one that holds it)"
        )
    return found


def head_of(repo: Path) -> str:
    """The commit HEAD names; a one-line refusal when the repository has none yet."""
    head = git("rev-parse", "-q", "--verify", "HEAD^{commit}", repo=repo, check=False).strip()
    if not head:
        raise CadillacError(
            f"{repo} has no commit yet: cadillac works from HEAD, so commit the project first"
        )
    return head


def survey(path: Path) -> RepoState:
    """What :func:`prepare` would start from at ``path``, and what it would leave out."""
    bare = bare_repository(path)
    repo = bare or repository_of(path)
    if repo is None:
        return RepoState(path=str(path), kind="folder", refused=refusal(path))
    state = RepoState(path=str(repo), kind="bare" if bare else "git", head=head_of(repo))
    tree = git("ls-tree", "-r", "-z", "HEAD", repo=repo)
    state.submodules = [
        entry.split("\t", 1)[1] for entry in tree.split("\0") if entry.startswith("160000 ")
    ]
    if bare is None:
        status = git("status", "-z", "--porcelain", "--untracked-files=no", repo=repo)
        state.uncommitted = status_paths(status)
        others = git("ls-files", "-z", "--others", "--exclude-standard", repo=repo)
        state.untracked = [name for name in others.split("\0") if name]
    return state


def repository_of(path: Path) -> Path | None:
    """The top of the git repository ``path`` is, when ``path`` is one's top; else None."""
    if not (path / ".git").exists():
        return None
    try:
        top = git("rev-parse", "--show-toplevel", repo=path).strip()
    except GitError:
        return None
    return Path(top).resolve() if Path(top).resolve() == path.resolve() else None


def refusal(path: Path) -> str:
    """Why git refuses the repository at ``path`` (another user owns it and the user's
    configuration does not trust it), in git's words; "" when it does not."""
    if not (path / ".git").exists():
        return ""
    try:
        git("rev-parse", "--show-toplevel", repo=path)
    except GitError as exc:
        said = str(exc)
        return "another user owns it" if "dubious ownership" in said else said[-200:]
    return ""


def prepare(path: Path, workspace: Path, run_dir: Path, run_id: str, parent: str | None = None):
    """Fill the (empty) ``workspace`` from ``path``; the :class:`Source` that records it."""
    branch = f"cadillac/{run_id}"
    bare = None if parent else bare_repository(path)
    repo = bare or (None if parent else repository_of(path))
    if repo is not None:
        base = head_of(repo)
        git("worktree", "add", "-q", "-b", branch, str(workspace), base, repo=repo)
        git_dir = git("rev-parse", "--absolute-git-dir", repo=workspace).strip()
        return Source(
            kind="git",
            path=str(repo),
            git_dir=git_dir,
            base=base,
            branch=branch,
            bare=bare is not None,
            tags=sorted(project_tags(workspace)),
            version=version_of(repo, base),
        )
    workspace.rmdir()  # made empty with the run; the copy makes it again
    copied = copy_tree(path, workspace, skip_dirs=COPY_SKIP)
    if parent:  # the parent run's plan is its own record: the next version plans afresh
        for name in CADILLAC_FILES:
            (workspace / name).unlink(missing_ok=True)
    git_dir = run_dir / "git"
    git("init", "-q", "-b", branch, where=[f"--git-dir={git_dir}"])
    source = Source(
        kind="run" if parent else "folder",
        path=str(path),
        parent_run=parent,
        git_dir=str(git_dir),
        base="",
        branch=branch,
        skipped=copied.skipped,
        tags=sorted(project_tags(workspace)),
    )
    source.base, _ = commit(source, workspace, "the project as cadillac found it", allow_empty=True)
    return source


TAG_VERSION = re.compile(r"(\d+(?:\.\d+)*)((?:a|b|rc)\d+)?$")


def version_of(repo: Path, commit: str) -> str | None:
    """The version setuptools-scm and hatch-vcs would give ``commit``, from the nearest tag
    that ends in a version (``v1.2.0``, ``release-2.1``): the tag's version at the tag
    itself, else the next patch release's ``.devN+gHASH`` (N commits after the tag, as
    their default scheme says); None when no tag reads as a version."""
    described = git(
        "describe", "--tags", "--long", "--match", "*[0-9]*", commit, repo=repo, check=False
    ).strip()
    match = re.fullmatch(r"(.+)-(\d+)-g([0-9a-f]+)", described)
    found = TAG_VERSION.search(match.group(1)) if match else None
    if match is None or found is None:
        return None
    release, pre = found.group(1), found.group(2) or ""
    distance = int(match.group(2))
    if distance == 0:
        return release + pre
    if pre:
        return f"{release}{pre}.dev{distance}+g{match.group(3)}"
    parts = release.split(".")
    parts[-1] = str(int(parts[-1]) + 1)
    return f"{'.'.join(parts)}.dev{distance}+g{match.group(3)}"


def _tree(source: Source, workspace: Path, said: Said = None) -> WorkTree:
    """The workspace as git sees it: every command guarded (see orchestrator.sandbox.git)."""
    return WorkTree(source.git_dir, workspace, said=said)


NOT_THE_CHANGE = (
    *ENV_DIRS,
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".tox",
    ".nox",
    ".nyc_output",
    ".eggs",
)
"""Folders, at any depth, that installs, builds and test runs fill: never what a change touched."""
Products = Callable[[list[str], list[str]], list[str]]
"""products(paths, untracked) -> those of ``paths`` that cadillac's own commands left
(:meth:`orchestrator.loop.products.Products.of`): never committed."""


def _skipped() -> list[str]:
    """Pathspecs that leave out cadillac's own files and :data:`NOT_THE_CHANGE`."""
    skip = [f":(exclude,glob)**/{name}/**" for name in NOT_THE_CHANGE]
    skip += [":(exclude,glob)**/*.egg-info/**"]
    return skip + [f":(exclude,literal){name}" for name in CADILLAC_FILES]


def commit(
    source: Source,
    workspace: Path,
    message: str,
    allow_empty: bool = False,
    said: Said = None,
    products: Products | None = None,
) -> tuple[str, list[str]]:
    """Commit what changed in ``workspace``: the new head, and what was left out of the
    commit as cadillac's commands' (``products``). Nothing changed: no commit, the current
    head. ``said`` hears what the guard removed.

    What is committed is named path by path (literal pathspecs read from a file): tracked
    files changed or removed, and untracked files the project's ignore rules do not
    ignore, without cadillac's own files, :data:`NOT_THE_CHANGE` and ``products``. Naming
    an ignored path to ``git add`` fails ("The following paths are ignored"), so none is
    ever named: a ``.gitignore`` listing ``.venv/`` is what real repositories have."""
    tree = _tree(source, workspace, said)
    status = tree.git(
        "status", "-z", "--porcelain", "--untracked-files=all", "--", ".", *_skipped()
    )
    entries = status_entries(status)
    paths = [path for path, _ in entries]
    untracked = [path for path, code in entries if code == "??"]
    left = sorted(products(paths, untracked)) if products is not None else []
    wanted = [p for p in paths if p not in set(left)]
    if wanted:
        with tempfile.NamedTemporaryFile("wb", prefix="cadillac-add-", delete=False) as f:
            f.write(
                b"".join(
                    f":(literal){p}".encode("utf-8", "surrogateescape") + b"\0" for p in wanted
                )
            )
        try:
            tree.git("add", "-A", f"--pathspec-from-file={f.name}", "--pathspec-file-nul")
        finally:
            os.unlink(f.name)
    staged = tree.git("diff", "--cached", "--name-only", "-z")
    if staged.strip("\0") or allow_empty:
        tree.git("commit", "-q", "--no-verify", "--allow-empty", "-m", message)
    return tree.git("rev-parse", "HEAD").strip(), left


def restore(source: Source, workspace: Path, said: Said = None) -> list[str]:
    """Take ``workspace`` back to its last commit: tracked files as committed, files made
    since removed (environments, caches and cadillac's own files kept). Returns the paths
    that were changed or made since, as they were discarded."""
    tree = _tree(source, workspace, said)
    changed = tree.git("status", "-z", "--porcelain", "--untracked-files=no", "--")
    keep = [*CADILLAC_FILES, *ENV_DIRS, "__pycache__"]
    exclude = [arg for name in keep for arg in ("-e", name)]
    made = tree.git("clean", "-n", "-d", *exclude, "--")
    tree.git("reset", "-q", "--hard", "HEAD")
    tree.git("clean", "-q", "-f", "-d", *exclude, "--")
    lost = status_paths(changed)
    lost += [line.removeprefix("Would remove ") for line in made.splitlines() if line]
    return sorted(set(lost))


def write_patch(source: Source, workspace: Path, out: Path) -> str:
    """The whole change since the start, as a patch ``git apply`` takes; also written to
    ``out``. Returns the patch's ``--stat`` summary."""
    tree = _tree(source, workspace)
    patch = tree.git("diff", "--binary", f"{source.base}..HEAD")
    out.write_text(patch, encoding="utf-8", errors="surrogateescape")
    return tree.git("diff", "--stat", f"{source.base}..HEAD").strip()


def changed_files(source: Source, workspace: Path) -> list[str]:
    """The files the committed change touches, relative to the project."""
    names = _tree(source, workspace).git("diff", "--name-only", "-z", f"{source.base}..HEAD")
    return [n for n in names.split("\0") if n]


def apply(source: Source, workspace: Path, patch: Path) -> str:
    """Bring the change into the user's tree (see the module docstring); what was done."""
    target = Path(source.path)
    if source.bare:
        raise CadillacError(
            f"{target} is a bare repository: it has no tree to apply to; the change is on "
            f"its branch {source.branch}"
        )
    if source.kind == "git":
        dirty = git("status", "--porcelain", "--untracked-files=no", repo=target)
        if dirty.strip():
            raise CadillacError(
                f"{target} has uncommitted changes: commit or stash them, then apply "
                f"the branch {source.branch} (or {patch}) yourself"
            )
        head = git("rev-parse", "HEAD", repo=target).strip()
        if head == source.base:
            git("merge", "-q", "--ff-only", source.branch, repo=target)
            return f"fast-forwarded {target} to {source.branch}"
        git("apply", "--check", str(patch), repo=target)
        git("apply", str(patch), repo=target)
        return f"applied {patch.name} to {target} (its HEAD moved since the build began)"
    tree = _tree(source, workspace)
    for name in changed_files(source, workspace):
        found = target / name
        if not found.exists() and not found.is_symlink():
            continue  # a file the change adds (git apply refuses one that appeared since)
        original = tree.run("cat-file", "blob", f"{source.base}:{name}", check=False, binary=True)
        if found.is_symlink() or not found.is_file() or found.read_bytes() != original:
            raise CadillacError(
                f"{found} changed since cadillac copied {target}: apply {patch} yourself"
            )
    user = (f"--git-dir={source.git_dir}", f"--work-tree={target}")  # the user's folder: no guard
    git("apply", "--check", str(patch), where=user, cwd=target)
    git("apply", str(patch), where=user, cwd=target)
    return f"applied {patch.name} to {target}"


def discard(source: Source, workspace: Path) -> None:
    """Undo :func:`prepare` for a build that could not start: the worktree and its branch."""
    if source.kind != "git":
        return
    repo = Path(source.path)
    git("worktree", "remove", "--force", str(workspace), repo=repo, check=False)
    git("branch", "-D", source.branch, repo=repo, check=False)


def touched(source: Source, workspace: Path, said: Said = None) -> list[str]:
    """What the change touched since the build's start: tracked files that differ from
    ``source.base`` (committed or not; a rename is the old name gone and the new one
    added), and files git does not track. cadillac's own files, environments and caches
    are left out; deleted paths are listed too (the caller reads what exists).

    Untracked files count unless the project's ignore rules leave them out, as a commit
    does. Those rules are the model's to edit, though: when the change adds or edits a
    ``.gitignore`` (one that ignores itself included), every untracked file counts, so
    a module cannot be hidden from the build check by ignoring it. ``said`` hears what
    the guard removed first (a nested repository the model made)."""
    tree = _tree(source, workspace, said)
    skip = _skipped()

    def names(*args: str) -> list[str]:
        return [n for n in tree.git(*args, "--", ".", *skip).split("\0") if n]

    changed = names("diff", "--name-only", "-z", "--no-renames", source.base)
    untracked = names("ls-files", "-z", "--others", "--exclude-standard")
    ignores = [n for n in changed + names("ls-files", "-z", "--others") if _ignore_file(n)]
    if ignores:  # the ignore rules are the change's own: none is trusted
        untracked = names("ls-files", "-z", "--others")
    return sorted(set(changed) | set(untracked))


def _ignore_file(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == ".gitignore"
