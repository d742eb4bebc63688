"""Host-side file access to a folder the model controls, never following a link it made.

cadillac itself reads and writes files in a workspace: ``plan.json``, dependency files,
the virtual environment it makes, the copy of the project it scores. The model could
have put a symbolic link, a FIFO or a device node at any of those names. So every such
access here opens with ``O_NOFOLLOW`` (and ``O_NONBLOCK``, so a FIFO cannot hang the
host) and checks with ``fstat`` that it holds a regular file; a walk goes folder by folder
through descriptors (``dir_fd``), so a link swapped in for a folder is not followed
either. A refusal is an :class:`UnsafeFile` error naming the path and what was found there.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeFile(OSError):
    """A path holds a symbolic link or a special file where cadillac needs a regular file."""


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words ("a symbolic link", "a FIFO" ...)."""
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def what_is(path: Path) -> str | None:
    """None for a regular file; else what is there ("a symbolic link", "nothing" ...)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "nothing"
    return None if stat.S_ISREG(mode) else kind_of(mode)


def _open(path: Path, flags: int, mode: int = 0o644) -> int:
    try:
        fd = os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            found = what_is(path) or "not a regular file"
            raise UnsafeFile(
                exc.errno, f"{path} is {found}; cadillac needs a regular file"
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        found = kind_of(os.fstat(fd).st_mode)
        os.close(fd)
        raise UnsafeFile(errno.EINVAL, f"{path} is {found}; cadillac needs a regular file")
    return fd


def read_regular(path: Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit``), refusing links and special files."""
    fd = _open(Path(path), READ_FLAGS)
    with os.fdopen(fd, "rb") as fh:
        return fh.read() if limit is None else fh.read(limit)


def read_text(path: Path) -> str:
    return read_regular(path).decode("utf-8")


def write_regular(path: Path, data: bytes) -> None:
    """Create or replace the content of a regular file, refusing links and special files."""
    fd = _open(Path(path), WRITE_FLAGS)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


@dataclass
class CopyReport:
    files: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)
    """What was left behind and why (links, special files, files past the size limits)."""


def copy_tree(
    src: Path,
    dst: Path,
    skip_dirs: frozenset[str] = frozenset(),
    max_file_bytes: int = 50 * 1024**2,
    max_total_bytes: int = 500 * 1024**2,
    max_depth: int = 64,
) -> CopyReport:
    """Copy the regular files and folders under ``src`` into the new folder ``dst``.

    Links and special files are not followed and not copied; they are listed in the
    report's ``skipped``, as are folders deeper than ``max_depth`` and files over the
    limits. Folders named in ``skip_dirs`` are left out silently.
    """
    report = CopyReport()
    dst.mkdir(parents=True, exist_ok=False)
    top = os.open(src, DIR_FLAGS)
    try:
        limits = (skip_dirs, max_file_bytes, max_total_bytes, max_depth)
        _copy_dir(top, Path(dst), "", limits, report)
    finally:
        os.close(top)
    return report


def _copy_dir(dfd, dst: Path, rel: str, limits, report: CopyReport) -> None:
    skip, max_file, max_total, depth = limits
    with os.scandir(dfd) as entries:
        names = sorted((e.name, e.stat(follow_symlinks=False).st_mode) for e in entries)
    for name, mode in names:
        where = f"{rel}{name}"
        if stat.S_ISDIR(mode):
            if name in skip:
                continue
            if depth <= 0:
                report.skipped.append(f"{where}: a folder too deep, not copied")
                continue
            child = os.open(name, DIR_FLAGS, dir_fd=dfd)
            try:
                (dst / name).mkdir()
                deeper = (skip, max_file, max_total, depth - 1)
                _copy_dir(child, dst / name, f"{where}/", deeper, report)
            finally:
                os.close(child)
        elif stat.S_ISREG(mode):
            fd = os.open(name, READ_FLAGS, dir_fd=dfd)
            try:
                size = os.fstat(fd).st_size
                if size > max_file or report.bytes + size > max_total:
                    report.skipped.append(f"{where}: {size:,} bytes, over the size limit")
                    continue
                with os.fdopen(os.dup(fd), "rb") as fh:
                    data = fh.read()
            finally:
                os.close(fd)
            (dst / name).write_bytes(data)
            os.chmod(dst / name, stat.S_IMODE(mode) & 0o755 | 0o600)
            report.files += 1
            report.bytes += len(data)
        else:
            report.skipped.append(f"{where}: {kind_of(mode)}, not copied")


def remove_tree(path: Path) -> str:
    """Remove ``path`` whatever the model left there, never following a link it made.

    A link (or any file) at ``path`` is unlinked, not followed; a folder is removed with
    :func:`shutil.rmtree`, which walks by descriptors here and does not follow links
    inside. Folders the model made unreadable or unwritable are opened up first (a walk
    that does not enter links) so their entries can go. Returns "" or why something was left behind.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return ""
    if not stat.S_ISDIR(mode):
        os.unlink(path)
        return ""
    os.chmod(path, 0o700)
    for folder, subfolders, _ in os.walk(path):  # top-down, never into a link
        for name in subfolders:
            sub = os.path.join(folder, name)
            if not os.path.islink(sub):
                os.chmod(sub, 0o700)
    try:
        shutil.rmtree(path)
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    return ""
