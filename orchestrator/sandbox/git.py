"""The one git runner of cadillac: git never runs a program a model chose.

Git runs programs named in configuration (hooks, the file-system monitor, clean, smudge
and process filters, textconv and external diff drivers, merge drivers, ssh, pagers,
editors, credential helpers) and enters nested repositories (a submodule's status runs
git inside it, with that repository's own configuration). A model's command can write
anything in its workspace, so every git command of cadillac goes through here, and:

* git reads no configuration a sandboxed process could write: no system or global file,
  HOME and XDG_CONFIG_HOME point at nothing, no ``GIT_*`` variable of the caller's (but
  the user's own ``safe.directory`` entries, read once from their system and global
  configuration by :func:`user_safe_directories` and given on the command line, so a
  repository the user trusts though another user owns it is still read), and a
  work tree a sandbox could write is run with ``--git-dir``/``--work-tree`` naming the
  git directory cadillac recorded, which lies outside the sandbox's reach
  (:class:`WorkTree` refuses one inside its tree);
* whatever the repository's own configuration (the user's, or cadillac's) names as a
  filter, diff or merge driver is switched off on the command line, so a
  ``.gitattributes`` naming ``filter=x``, ``diff=x`` or ``merge=x`` finds no program to
  run, known name or not; hooks, fsmonitor, ssh, the external diff, credential helpers,
  pagers and editors are switched off; ``diff``/``show``/``log``/``format-patch`` get
  ``--no-ext-diff --no-textconv``, ``status``/``diff`` ``--ignore-submodules=all``;
* before every command on a work tree a sandbox could write, :meth:`WorkTree.guard`
  removes every ``.git`` file, folder or link below its top (a nested repository, or a
  pointer to one elsewhere), puts the top's own pointer back as cadillac made it, and
  drops from the index any gitlink HEAD does not hold; what it removed is said.

:func:`status_entries` is the one parser of ``git status -z``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from orchestrator.errors import CadillacError
from orchestrator.sandbox.files import read_regular, remove_tree, write_regular

GIT_TIMEOUT_S = 120
AUTHOR = ("cadillac", "cadillac@localhost")

SETTINGS = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=",
    "core.sshCommand=false",
    "core.askPass=",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.pager=cat",
    "core.editor=false",
    "core.alternateRefsCommand=",
    "core.quotePath=off",
    "sequence.editor=false",
    "credential.helper=",
    "diff.external=",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "protocol.allow=never",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "log.showSignature=false",
    "gc.auto=0",
    "maintenance.auto=false",
)
"""Settings on every command line; the command line outranks every configuration file."""
SAFE = tuple(arg for setting in SETTINGS for arg in ("-c", setting))

DRIVER_KEYS = {
    "filter": {"clean": "", "smudge": "", "process": "", "required": "false"},
    "diff": {"command": "", "textconv": "", "cachetextconv": "false"},
    "merge": {"driver": "", "recursive": ""},
}
"""For each driver a repository's configuration names: what switches it off."""
NO_DRIVERS = ("diff", "show", "log", "format-patch")
NO_SUBMODULES = ("status", "diff")

ENV = {
    "HOME": os.devnull,
    "XDG_CONFIG_HOME": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_SYSTEM": os.devnull,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_SSH_COMMAND": "false",
    "GIT_SSH": "false",
    "GIT_ASKPASS": "false",
    "GIT_PAGER": "cat",
    "GIT_EDITOR": "false",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
}
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")


class GitError(CadillacError):
    """A git command cadillac needed failed; the message has git's own words."""


def _env(identity: tuple[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
    name, email = identity
    return (
        env
        | ENV
        | {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }
    )


def _call(command: list[str], cwd: Path | None, identity, timeout: float):
    try:
        return subprocess.run(
            command,
            cwd=cwd,
            env=_env(identity),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git could not run: {exc}") from None


def _drivers_off(where: list[str], cwd: Path | None, identity) -> list[str]:
    """``-c`` settings switching off every filter, diff and merge driver the repository's
    configuration names (nothing outside a repository)."""
    trusted = [
        arg for value in user_safe_directories() for arg in ("-c", f"safe.directory={value}")
    ]
    config = ["git", *SAFE, *trusted, *where, "config", "--list", "-z"]
    done = _call(config, cwd, identity, GIT_TIMEOUT_S)
    if done.returncode != 0:
        return []
    names = set()
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        key = item.split("\n", 1)[0]
        section, _, rest = key.partition(".")
        subsection, _, _ = rest.rpartition(".")
        if section.lower() in DRIVER_KEYS and subsection:
            names.add((section.lower(), subsection))
    return [
        arg
        for section, name in sorted(names)
        for key, value in DRIVER_KEYS[section].items()
        for arg in ("-c", f"{section}.{name}.{key}={value}")
    ]


_SAFE_DIRECTORIES: tuple[str, ...] | None = None
USER_CONFIG_ENV = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM")
USER_CONFIG_ENV += ("GIT_CONFIG_NOSYSTEM",)


def user_safe_directories() -> tuple[str, ...]:
    """The ``safe.directory`` values of the user's own git configuration (system and
    global, with what they include), read once per process, outside any repository. The
    user's configuration is theirs, never a sandbox's; only this one setting is taken
    from it, since git takes it from there alone (a repository's own cannot name it)."""
    global _SAFE_DIRECTORIES
    if _SAFE_DIRECTORIES is None:
        env = {k: v for k, v in os.environ.items() if k in KEEP_ENV or k in USER_CONFIG_ENV}
        env |= {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_PARAMETERS": "", "GIT_CONFIG_COUNT": "0"}
        try:
            done = subprocess.run(
                ["git", "config", "--get-all", "-z", "safe.directory"],
                cwd="/",
                env=env,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=GIT_TIMEOUT_S,
            )
            found = done.stdout.decode("utf-8", "surrogateescape").split("\0")
        except (OSError, subprocess.TimeoutExpired):
            found = []
        _SAFE_DIRECTORIES = tuple(v for v in found if v and "\n" not in v)
    return _SAFE_DIRECTORIES


def run_git(
    *args: str,
    repo: Path | None = None,
    where: Sequence[str] = (),
    cwd: Path | None = None,
    check: bool = True,
    binary: bool = False,
    identity: tuple[str, str] = AUTHOR,
    timeout: float = GIT_TIMEOUT_S,
) -> str | bytes:
    """Run ``git <args>`` safely (see the module docstring): in ``repo`` (``-C``), or with
    the global options ``where`` (``--git-dir=...``). Its output, or GitError."""
    where = [*(("-C", str(repo)) if repo is not None else ()), *where]
    sub, *rest = args
    extra = [*(("--no-ext-diff", "--no-textconv") if sub in NO_DRIVERS else ())]
    extra += ["--ignore-submodules=all"] if sub in NO_SUBMODULES else []
    drivers = _drivers_off(where, cwd, identity)
    trusted = [
        arg for value in user_safe_directories() for arg in ("-c", f"safe.directory={value}")
    ]
    command = ["git", *SAFE, *trusted, *drivers, *where, sub, *extra, *rest]
    done = _call(command, cwd, identity, timeout)
    if check and done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {' '.join(args[:2])} failed: {said[-400:]}")
    return done.stdout if binary else done.stdout.decode("utf-8", "surrogateescape")


def git(*args: str, repo: Path | None = None, **kw) -> str:
    """:func:`run_git`'s text output (for a trusted repository: the user's, cadillac's)."""
    out = run_git(*args, repo=repo, **kw)
    assert isinstance(out, str)
    return out


def status_entries(status: str) -> list[tuple[str, str]]:
    """The paths a ``git status -z --porcelain`` output names, each with its two-letter
    code (``??`` untracked): ``XY path``, and for a rename or copy the new path's entry is
    followed by the old path alone (both count, with the rename's code)."""
    out, entries = [], iter(status.split("\0"))
    for entry in entries:
        if not entry:
            continue
        out.append((entry[3:], entry[:2]))
        if "R" in entry[:2] or "C" in entry[:2]:
            old = next(entries, "")
            if old:
                out.append((old, entry[:2]))
    return out


def status_paths(status: str) -> list[str]:
    """The paths of :func:`status_entries`."""
    return [path for path, _ in status_entries(status)]


class WorkTree:
    """A work tree a sandboxed process could write, recorded in a git directory outside
    it. ``said`` hears what :meth:`guard` removed (for the run's events)."""

    def __init__(
        self,
        git_dir: Path | str,
        path: Path,
        *,
        identity: tuple[str, str] = AUTHOR,
        said: Callable[[str], None] | None = None,
    ):
        self.git_dir, self.path = Path(git_dir).resolve(), Path(path)
        self.identity, self.said = identity, said
        top = self.path.resolve()
        if self.git_dir == top or self.git_dir.is_relative_to(top):
            raise GitError(f"the git directory {self.git_dir} is inside {top}: not used")
        self.linked = (self.git_dir / "commondir").is_file()
        """A linked worktree's git directory: the tree's top keeps its ``.git`` pointer."""
        self.removed: list[str] = []

    def run(self, *args: str, check: bool = True, binary: bool = False) -> str | bytes:
        """``git <args>`` on this tree, after :meth:`guard`."""
        self.guard()
        return run_git(*args, **self._how(check, binary))

    def git(self, *args: str, check: bool = True) -> str:
        out = self.run(*args, check=check)
        assert isinstance(out, str)
        return out

    def _how(self, check: bool = True, binary: bool = False) -> dict:
        where = (f"--git-dir={self.git_dir}", f"--work-tree={self.path}")
        return dict(where=where, cwd=self.path, check=check, binary=binary, identity=self.identity)

    def guard(self) -> list[str]:
        """Remove every nested ``.git`` and every gitlink HEAD does not hold; put the top's
        pointer back. What was removed (also said, and kept in ``removed``)."""
        removed = [p for p in _dot_gits(self.path) if p != ".git" or not self.linked]
        for rel in removed:
            remove_tree(self.path / rel)
        if self.linked and not self._pointer_intact():
            remove_tree(self.path / ".git")
            write_regular(self.path / ".git", f"gitdir: {self.git_dir}\n".encode())
            removed.append(".git")  # put back as cadillac made it
        for link in self._new_gitlinks():
            run_git("update-index", "--force-remove", "--", link, **self._how())
            removed.append(link)  # a gitlink in the index
        if removed:
            self.removed += removed
            if self.said is not None:
                names = ", ".join(repr(p) for p in removed)
                self.said(f"removed before running git (nested repositories, gitlinks): {names}")
        return removed

    def _pointer_intact(self) -> bool:
        try:
            found = read_regular(self.path / ".git", limit=4096)  # never through a link
        except OSError:
            return False
        return found.strip() == f"gitdir: {self.git_dir}".encode()

    def _new_gitlinks(self) -> list[str]:
        staged = run_git("ls-files", "-s", "-z", **self._how())
        links = {e.split("\t", 1)[1] for e in str(staged).split("\0") if e.startswith("160000 ")}
        if not links:
            return []
        head = run_git("ls-tree", "-r", "-z", "HEAD", **self._how(check=False))
        kept = {e.split("\t", 1)[1] for e in str(head).split("\0") if e.startswith("160000 ")}
        return sorted(links - kept)


def _dot_gits(top: Path) -> list[str]:
    """Every entry named ``.git`` under ``top`` (itself included), never entering a link."""
    found, stack = [], [""]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(top / rel if rel else top))
        except OSError:
            continue
        for entry in entries:
            path = f"{rel}/{entry.name}" if rel else entry.name
            if entry.name == ".git":
                found.append(path)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(path)
    return sorted(found)
