"""Who a sandboxed command is on the host, and how its workspace becomes writable for it.

What this module decides, and why:

* **cadillac not root**: bubblewrap makes a user namespace in which the command is
  ``nobody`` (65534), mapped onto the user running cadillac. The kernel counts its
  processes against that user, so the process limit binds, and it reaches only what the
  user could.
* **cadillac root**: a user namespace would map ``nobody`` onto root (uid 0), which the
  kernel exempts from the process limit (``RLIMIT_NPROC``) and which owns the host's files
  (a root-owned file bound into the sandbox reads as the sandbox user's own). So no user
  namespace is made: bubblewrap, as root, builds the sandbox and starts the command with
  only ``CAP_SETUID`` and ``CAP_SETGID``, and ``setpriv`` makes it the unprivileged host
  user ``uid:gid`` (:class:`~orchestrator.sandbox.executor.ExecConfig`'s ``sandbox_uid``,
  65534) with no capabilities, no supplementary groups and no new privileges, before
  ``bash`` starts. Every command of every build runs as that one uid, so the process
  limit counts all of them together.
* That user must be able to change its workspace, whose files the host (root) made:
  :func:`hand_over`, before each command, gives it every file and folder in the
  workspace (and the other writable folders) it does not own yet, without following a
  link, and never a regular file with a second hard link (which could be a host file).
  Each top folder stays its owner's (git refuses a worktree another user owns) but gets
  the user's group and group write.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

NOBODY = 65534


def as_root() -> bool:
    """cadillac itself runs as root (a user namespace would map the sandbox onto root)."""
    return os.geteuid() == 0


def bwrap_args(root: bool) -> list[str]:
    """bubblewrap's namespace and identity arguments."""
    if not root:
        return ["--unshare-all", "--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL"]
    unshare = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    # bwrap as root keeps every capability unless told: only the two setpriv needs
    caps = ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return [*unshare, "--unshare-cgroup-try", *caps]


def command_prefix(root: bool, uid: int, gid: int) -> list[str]:
    """What the command starts under inside the sandbox: as root, ``setpriv`` to the
    unprivileged ``uid:gid`` with nothing kept; otherwise nothing."""
    if not root:
        return []
    setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
    return [
        setpriv,
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def hand_over(roots: Iterable[Path], uid: int, gid: int) -> None:
    """Make everything under each of ``roots`` writable by ``uid:gid`` (see the module
    docstring); links are never followed and a hard-linked file is never given away."""
    for root in roots:
        try:
            top = os.lstat(root)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(top.st_mode):
            continue
        if top.st_gid != gid:
            os.chown(root, -1, gid, follow_symlinks=False)
        if top.st_mode & 0o070 != 0o070:
            os.chmod(root, stat.S_IMODE(top.st_mode) | 0o070)
        for _folder, dirs, files, fd in os.fwalk(root, follow_symlinks=False):
            for name in (*dirs, *files):
                _give(name, fd, uid, gid)


def _give(name: str, fd: int, uid: int, gid: int) -> None:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    kind = stat.S_IFMT(st.st_mode)
    if st.st_uid == uid or kind in (stat.S_IFLNK, stat.S_IFCHR, stat.S_IFBLK):
        return
    if kind == stat.S_IFREG and st.st_nlink > 1:
        return  # maybe a host file linked in: read-only to the sandbox it stays
    os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
