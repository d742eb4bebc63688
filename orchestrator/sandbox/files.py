"""Host-side file access to a folder the model controls, never following a link it made.

cadillac itself reads and writes files in a workspace: ``plan.json``, dependency files,
the virtual environment it makes, the copy of the project it scores. The model could
have put a symbolic link, a FIFO or a device node at any of those names. So every such
access here opens with ``O_NOFOLLOW`` (and ``O_NONBLOCK``, so a FIFO cannot hang the
host) and checks with ``fstat`` that it holds a regular file; a walk goes folder by folder
through descriptors (``dir_fd``), so a link swapped in for a folder is not followed
either. A refusal is an :class:`UnsafeFile` error naming the path and what was found there.

It is also the one way cadillac writes a file anywhere (records, memory, indexes, logs),
so no writer needs to know whether a sandbox could reach its folder: :func:`replace_file`
(and :func:`replacing`, for a writer that needs the open file) writes a fresh name made
with ``O_EXCL|O_NOFOLLOW`` in the folder (opened ``O_DIRECTORY|O_NOFOLLOW``) and renames
it over the target, so a link at the target is replaced, never written through, and a
reader sees the old file or the new one; :func:`append_file` opens ``O_APPEND|O_NOFOLLOW``
and refuses anything but a regular file. This module imports nothing of cadillac's, so
every layer, ``memory/`` included, may use it.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
FRESH_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
READ_CHUNK = 1 << 20


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


def _open(path: Path, flags: int, mode: int = 0o644, dir_fd: int | None = None) -> int:
    try:
        fd = os.open(path.name if dir_fd is not None else path, flags, mode, dir_fd=dir_fd)
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


def read_regular(path: Path, limit: int | None = None, offset: int = 0) -> bytes:
    """The bytes of a regular file from ``offset`` on (at most ``limit``), refusing links
    and special files.

    A limit is read a chunk at a time: ``read(limit)`` would set aside the whole limit
    (a gibibyte for the code index) before reading a few bytes."""
    fd = _open(Path(path), READ_FLAGS)
    with os.fdopen(fd, "rb") as fh:
        if offset:
            fh.seek(offset)
        if limit is None:
            return fh.read()
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = fh.read(min(left, READ_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def read_text(path: Path) -> str:
    return read_regular(path).decode("utf-8")


def write_regular(path: Path, data: bytes) -> None:
    """Create or replace the content of a regular file, refusing links and special files."""
    fd = _open(Path(path), WRITE_FLAGS)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _folder(path: Path) -> int:
    """A descriptor of ``path``'s folder, refusing a link (or anything else) at its name."""
    try:
        return os.open(path.parent, DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            found = what_is(path.parent) or "a file"
            raise UnsafeFile(
                exc.errno, f"{path.parent} is {found}; cadillac writes only into a real folder"
            ) from None
        raise


@contextmanager
def replacing(path: Path, mode: int = 0o644, durable: bool = True) -> Iterator[BinaryIO]:
    """A fresh file beside ``path`` (open for reading and writing), renamed over ``path``
    when the block ends without an error, removed when it raises.

    The fresh name is made with ``O_CREAT|O_EXCL|O_NOFOLLOW`` inside the folder opened
    with ``O_DIRECTORY|O_NOFOLLOW``, so nothing is written through a link at either name;
    a link (or FIFO) at ``path`` is replaced by the rename, not followed. ``durable``
    fsyncs the file before the rename and the folder after it (after a crash a reader
    sees the old file or the new one, whole). UnsafeFile when the folder is a link.
    """
    path = Path(path)
    dfd = _folder(path)
    try:
        while True:
            tmp = f".{path.name}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(tmp, FRESH_FLAGS, 0o600, dir_fd=dfd)
                break
            except FileExistsError:  # a name someone (a sandbox) made first: another one
                continue
        try:
            with os.fdopen(fd, "w+b") as fh:
                os.fchmod(fd, mode)
                yield fh
                fh.flush()
                if durable:
                    os.fsync(fd)
            os.rename(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:  # noqa: SIM105 - keep the original error
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
        if durable:
            os.fsync(dfd)
    finally:
        os.close(dfd)


def replace_file(path: Path, data: bytes | str, mode: int = 0o644, durable: bool = True) -> None:
    """Write ``path`` anew, whole, never through a link (see :func:`replacing`)."""
    with replacing(path, mode, durable) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def append_file(path: Path, data: bytes | str) -> None:
    """Add ``data`` at the end of the regular file ``path`` (made when missing), never
    through a link: a link, FIFO, device or folder at ``path`` (or a link at its folder's
    name) is refused with UnsafeFile, and a FIFO never makes the host wait.

    A hard link is not refused: a sandbox cannot make one to a file outside its own
    mounts (``link`` across mounts is EXDEV), and backups made with ``cp -al`` hold them."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    dfd = _folder(path)
    try:
        fd = _open(path, APPEND_FLAGS, dir_fd=dfd)
    finally:
        os.close(dfd)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


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
