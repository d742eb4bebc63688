"""A JSONL file of pydantic records that several processes share safely.

What this module decides, and why:

Writing

* Every write happens under a ``filelock`` on ``<file>.lock``. An append is one
  ``write()`` on an ``O_APPEND`` descriptor; a rewrite (forget, merge, boost)
  writes a temporary file beside the original (a fresh name, made with
  ``O_EXCL|O_NOFOLLOW`` by :func:`orchestrator.sandbox.files.replacing`), fsyncs it,
  renames it into place and fsyncs the folder, so a reader sees the old file or the
  new one, never half.
* The file may be a symlink (one memory shared by several homes). A rewrite
  resolves the link anew and replaces the *target* (temporary file in the
  target's folder, rename onto the target, fsync of that folder), so the link
  stays a link. The lock and the rejected lines live beside the target too
  (``<target>.lock``, ``<target>.rejected.jsonl``): every home that links to one
  memory then takes the same lock, and a plain file is unaffected (its target
  is itself).
* A read-only file is never changed, not even by root (who may write any file,
  and whose rename would silently replace one): a file with no write permission
  bit, or one this user may not write, makes ``append`` and a rewrite raise
  :class:`ReadOnlyFile`, a ``PermissionError``. A rewrite that cannot make its
  temporary file, or fails while writing it, raises :class:`RewriteFailed`, an
  ``OSError``. Both say in one line which file, that nothing was changed, and
  what to do; ``cadillac`` prints them as its one error line. Nothing is lost:
  those checks and the temporary file come before the file is touched.

Reading: the cache

* ``refresh()`` brings ``records`` up to date. The file that was read is kept
  open, one descriptor per :class:`JsonlFile`. An inode cannot be freed, and so
  its number cannot be given to another file, while a descriptor holds it;
  "the path's (device, inode) is the held descriptor's" therefore means exactly
  "the same file". (Comparing the numbers of two ``stat`` calls does not: ext4
  hands a freed inode number to the next new file, so a file another process
  rewrote twice and then appended to looks like the old file, grown, and its
  forgotten records would be served and written back.)
* So: an unchanged stat means nothing to do (a recall costs one ``stat``); the
  same inode, grown, means only the new bytes are read, through the held
  descriptor (``pread``: no race with a rename between a stat and an open); a
  different inode, a shrunk file or a missing one means the cache is dropped,
  the old descriptor closed and the file read from the top through a new one.
  Before an incremental read the last bytes already read are read again and
  compared, so an editor that saved over the file in place (same inode) is
  caught too, unless it left those bytes as they were (cadillac never writes
  in place; this is a guard, not a proof). The lock is taken only when the file
  changed; where the lock cannot be made (a read-only home), reading goes on
  without it.
* Descriptors are bounded by live objects: the held one is closed when the file
  is replaced (by anyone's rewrite: ours adopts the descriptor of the file it
  wrote), vanishes, on :meth:`JsonlFile.invalidate` and :meth:`JsonlFile.close`,
  and when the object is garbage-collected. They are opened close-on-exec, so
  commands started by a build do not inherit them.

Invalid lines

* A line that is not a valid record (bad JSON, bad UTF-8, a bad field) is skipped
  with a :class:`CorruptLineWarning` naming its line number. It is not lost: a
  later rewrite moves it, byte for byte, into ``<file>.rejected.jsonl`` and says
  so. That file is JSONL too (one JSON object a line, readable with ``jq``):
  ``ts``, ``source`` (the file), ``lineno``, ``error``, and ``raw``, the line as
  text. When the line is not valid UTF-8, ``raw`` is only a readable rendering
  (bad bytes as U+FFFD) and ``raw_b64`` holds the exact bytes in base64. The
  original line is ``b64decode(raw_b64)`` when that field is there, else
  ``raw.encode("utf-8")``. The rejected file is fsynced before the rename, so a
  crash or a failed rewrite can leave a line in both files (a repeat in the
  rejected file), never in neither.
* A torn last line (a writer killed mid-append) is such an invalid line. The next
  append starts with a newline so it never glues itself onto the fragment.
* A last line that is valid but lacks its newline (a hand edit) is a record; the
  next append adds the missing newline first.
* A UTF-8 byte-order mark at the very start of the file (some Windows editors
  write one) is skipped when reading, so the first record is read, not
  rejected. A rewrite drops it: rewritten files are plain UTF-8 without a BOM,
  as JSON Lines and ``jq`` expect. Appends leave the file's start alone.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import stat
import time
import warnings
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from filelock import FileLock
from pydantic import BaseModel, ValidationError

from memory.gcpause import paused_gc
from orchestrator.sandbox.files import replacing

R = TypeVar("R", bound=BaseModel)

BOM = b"\xef\xbb\xbf"
EDGE = 64
"""Bytes before the read offset that are read again and compared before an incremental read."""
_STALE = (-1,)
"""A stamp no file has: the next refresh reads the file from the top."""


class CorruptLineWarning(UserWarning):
    """A line of a JSONL store could not be read as a record and was skipped."""


class ReadOnlyFile(PermissionError):
    """The file may not be written; nothing was changed. ``str()`` is one line."""

    def __init__(self, path: Path, target: Path):
        via = f" (a link to {target})" if path.is_symlink() else ""
        what = f"read-only{via}, nothing was changed (make it writable, e.g. chmod u+w, and retry)"
        super().__init__(errno.EACCES, what, str(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class RewriteFailed(OSError):
    """A rewrite could not be made or written; the file is as it was. ``str()`` is one line."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


@dataclass
class Rejected:
    """A line that is kept aside because it is not a valid record."""

    lineno: int
    error: str
    raw: bytes


@dataclass
class Change(Generic[R]):
    """What ``refresh`` found: the file was replaced (``reset``) or grew (``added``)."""

    reset: bool
    added: list[R] = field(default_factory=list)


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "record"
        return f"{where}: {err.get('msg', 'invalid')}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _mode_of(path: Path) -> int:
    """The permission bits a rewrite keeps: the file's own, else what umask allows."""
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _read_from(fd: int, pos: int, size_hint: int = 0) -> bytes:
    """Every byte from ``pos`` to the end, read with ``pread`` (no shared file offset).

    ``size_hint`` is the file's size as last seen: the first call asks for a
    little more than that, the next (small) one confirms the end.
    """
    want = max(size_hint - pos, 0) + 4096
    chunks = []
    while chunk := os.pread(fd, want, pos):
        chunks.append(chunk)
        pos += len(chunk)
        want = 1 << 20 if len(chunk) == want else 4096
    if len(chunks) == 1:
        return chunks[0]
    return b"".join(chunks)


def _rejected_path(target: Path) -> Path:
    return target.with_name(target.name + ".rejected.jsonl")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_folder(folder: Path) -> None:
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _rejected_entry(r: Rejected, source: str, ts: float) -> dict:
    """The JSON object a rejected line is kept as (see the module docstring)."""
    entry: dict = {"ts": ts, "source": source, "lineno": r.lineno, "error": r.error}
    try:
        entry["raw"] = r.raw.decode("utf-8")
    except UnicodeDecodeError:
        entry["raw"] = r.raw.decode("utf-8", "replace")
        entry["raw_b64"] = base64.b64encode(r.raw).decode("ascii")
    return entry


class JsonlFile(Generic[R]):
    """One JSONL file of ``model`` records, cached in memory and shared across processes."""

    def __init__(self, path: str | os.PathLike[str], model: type[R]):
        self.path = Path(path)
        self.model = model
        self.lock = FileLock(os.path.realpath(self.path) + ".lock")
        self.records: list[R] = []
        self._raw: dict[int, bytes] = {}  # id(record) -> its line as read, reused by rewrites
        self.rejected: list[Rejected] = []
        self._fd: int | None = None  # the file that was read, held open (see the docstring)
        self._ident: tuple[int, int] | None = None  # its (dev, ino)
        self._stamp: tuple[int, ...] | None = None  # dev, ino, size, mtime_ns; None: no file
        self._offset = 0  # bytes consumed, always just after a newline or at a valid tail
        self._edge = b""  # the last bytes before _offset, to notice an in-place edit
        self._lines = 0  # lines consumed, for line numbers
        self._needs_newline = False
        self._torn_warned: set[int] = set()

    @property
    def target(self) -> Path:
        """The file the data is in: ``path`` with every symlink resolved."""
        return Path(os.path.realpath(self.path))

    @property
    def rejected_path(self) -> Path:
        return _rejected_path(self.target)

    # ------------------------------------------------------------------ descriptors
    def close(self) -> None:
        """Release the held descriptor; the next refresh reads the file from the top."""
        self._close_fd()
        self._stamp = _STALE

    def invalidate(self) -> None:
        """Forget the cache so the next refresh reads the whole file (after a failed write)."""
        self.close()

    def _close_fd(self) -> None:
        fd, self._fd, self._ident = self._fd, None, None
        if fd is not None:
            os.close(fd)

    def _hold(self, fd: int) -> os.stat_result:
        self._close_fd()
        st = os.fstat(fd)
        self._fd, self._ident = fd, (st.st_dev, st.st_ino)
        return st

    def __del__(self) -> None:
        fd = self.__dict__.get("_fd")
        if fd is not None:
            try:  # noqa: SIM105 - at interpreter exit contextlib may be gone already
                os.close(fd)
            except Exception:
                pass

    # ------------------------------------------------------------------ reading
    def refresh(self) -> Change[R]:
        """Bring ``records`` up to date with the file; cheap when nothing changed."""
        if self._stat() == self._stamp:
            return Change(reset=False)
        try:
            self.lock.acquire()
        except OSError:  # a read-only home: read without the lock, as any reader may
            return self.refresh_locked()
        try:
            return self.refresh_locked()
        finally:
            self.lock.release()

    def _stat(self) -> tuple[int, ...] | None:
        try:
            return _stamp(os.stat(self.path))
        except FileNotFoundError:
            return None

    def refresh_locked(self) -> Change[R]:
        """``refresh`` for a caller that holds ``lock``."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        if st is None:
            if self._stamp is None:
                return Change(reset=False)
            self._drop()
            self._stamp = None
            return Change(reset=True)
        if _stamp(st) == self._stamp:
            return Change(reset=False)
        data = None
        if (
            self._fd is not None
            and (st.st_dev, st.st_ino) == self._ident
            and st.st_size >= self._offset
        ):
            # The very file that was read (its descriptor holds the inode), at least as long.
            edge = len(self._edge)
            data = _read_from(self._fd, self._offset - edge, st.st_size)
            # Unless rewritten in place (an editor): then it is read again from the top.
            data = data[edge:] if data[:edge] == self._edge else None
        same = data is not None
        if not same:
            self._drop()
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:  # removed since the stat
                self._stamp = None
                return Change(reset=True)
            st = self._hold(fd)
            if stat.S_ISDIR(st.st_mode):
                self._close_fd()
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(self.path))
            data = _read_from(fd, 0, st.st_size)
            if data.startswith(BOM):
                data = data[len(BOM) :]
                self._offset = len(BOM)
                self._edge = BOM
        added = self._parse(data)
        self._stamp = _stamp(st)  # from before the read: what was appended since is looked at
        return Change(reset=not same, added=added)

    def _drop(self) -> None:
        self._close_fd()
        self.records, self.rejected, self._raw = [], [], {}
        self._offset, self._lines, self._needs_newline, self._edge = 0, 0, False, b""
        self._torn_warned.clear()

    def _consumed(self, data: bytes, end: int) -> None:
        """``data[:end]`` was consumed: advance the offset and keep its last bytes."""
        if not end:
            return
        self._offset += end
        if end >= EDGE:
            self._edge = data[end - EDGE : end]
        else:
            self._edge = (self._edge + data[:end])[-EDGE:]

    def _parse(self, data: bytes) -> list[R]:
        """Parse bytes read from ``_offset``; advance past every complete line."""
        added: list[R] = []
        if not data:
            return added
        end = data.rfind(b"\n") + 1
        body, tail = data[:end], data[end:]
        validate = self.model.model_validate_json
        lineno = self._lines
        with paused_gc():
            for line in body.split(b"\n")[:-1]:
                lineno += 1
                self._accept(line, lineno, validate, added)
        self._lines = lineno
        self._consumed(data, end)
        if tail.strip():
            try:
                record = validate(tail)
            except (ValidationError, ValueError) as exc:
                # A torn tail: skip it, but keep the offset so a completed line is re-read.
                if lineno + 1 not in self._torn_warned:
                    self._torn_warned.add(lineno + 1)
                    self._warn(lineno + 1, f"torn or invalid last line ({_first_error(exc)})")
            else:
                added.append(record)
                self.records.append(record)
                self._raw[id(record)] = tail
                self._lines += 1
                self._consumed(data, len(data))
                self._needs_newline = True
        return added

    def _accept(self, line: bytes, lineno: int, validate, added: list[R]) -> None:
        if not line.strip():
            return
        try:
            record = validate(line)
        except (ValidationError, ValueError) as exc:
            error = _first_error(exc)
            self.rejected.append(Rejected(lineno, error, line))
            if lineno not in self._torn_warned:
                self._warn(lineno, f"invalid line skipped ({error})")
            self._torn_warned.discard(lineno)
            return
        added.append(record)
        self.records.append(record)
        self._raw[id(record)] = line

    def _warn(self, lineno: int, what: str) -> None:
        warnings.warn(f"{self.path}:{lineno}: {what}", CorruptLineWarning, stacklevel=4)

    # ------------------------------------------------------------------ writing
    def _refuse_read_only(self) -> None:
        """Raise ReadOnlyFile when the file exists and may not be written (see the docstring)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        if not st.st_mode & 0o222 or not os.access(self.path, os.W_OK):
            raise ReadOnlyFile(self.path, self.target)

    def append(self, records: Iterable[R]) -> Change[R]:
        """Append records under the lock; the change holds them as read back from the file."""
        with self.lock:
            self.refresh_locked()
            return self.append_locked(list(records))

    def append_locked(self, records: list[R]) -> Change[R]:
        """Write records after what was read; the change holds them as parsed back."""
        if not records:
            return Change(reset=False)
        payload = b"".join(r.model_dump_json().encode() + b"\n" for r in records)
        self._refuse_read_only()
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
        try:
            fd = os.open(self.path, flags, 0o644)
        except FileNotFoundError:  # no folder yet (for a link: none where it points)
            self.target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, flags, 0o644)
        try:
            size = os.fstat(fd).st_size
            if self._needs_newline or (size and os.pread(fd, 1, size - 1) != b"\n"):
                payload = b"\n" + payload
            _write_all(fd, payload)
        finally:
            os.close(fd)
        if self._needs_newline:  # that newline ends a line we already counted
            self._offset += 1
            self._edge = (self._edge + b"\n")[-EDGE:]
            self._needs_newline = False
        # Read our own lines back (and a torn fragment before them, now a complete
        # invalid line), so records, offsets and line numbers follow the file exactly.
        return self.refresh_locked()

    def rewrite_locked(self, records: list[R], changed: Iterable[R] = ()) -> None:
        """Replace the file's records; the caller holds the lock and refreshed first.

        A record read from the file and not listed in ``changed`` is written back
        as the very line it was read from, which keeps large rewrites cheap. On a
        symlink the target is replaced and the link kept. Raises ReadOnlyFile or
        RewriteFailed, with the file unchanged, when it cannot be done.
        """
        self._refuse_read_only()
        target = self.target
        folder = target.parent
        stale = {id(r) for r in changed}
        raw = self._raw
        lines = []
        for r in records:
            line = None if id(r) in stale else raw.get(id(r))
            if line is None:
                line = raw[id(r)] = r.model_dump_json().encode()
            lines.append(line)
        lines.append(b"")
        payload = b"\n".join(lines)
        fresh = ExitStack()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fh = fresh.enter_context(replacing(target, _mode_of(target)))  # never via a link
        except OSError as exc:
            raise RewriteFailed(
                exc.errno,
                f"cannot make a temporary file in {folder} ({exc.strerror}), nothing was"
                " changed (make that folder writable and retry)",
                str(self.path),
            ) from None
        fd = -1
        try:
            with fresh:  # renamed over the target (and fsynced, with its folder) at the end
                moved = self._quarantine(target)  # durable before the rename: never in neither
                _write_all(fh.fileno(), payload)
                fd = os.dup(fh.fileno())
        except BaseException as exc:
            if fd >= 0:
                os.close(fd)
            if isinstance(exc, OSError) and not isinstance(exc, RewriteFailed):
                where = f" on {exc.filename}" if exc.filename else ""
                raise RewriteFailed(
                    exc.errno,
                    f"rewrite failed ({exc.strerror or exc}{where}), nothing was changed",
                    str(self.path),
                ) from exc
            raise
        st = self._hold(fd)  # the file just written is the file now read
        self.records = list(records)
        self._raw = {id(r): raw[id(r)] for r in records}
        self.rejected = []
        self._lines = len(records)
        self._needs_newline = False
        self._torn_warned.clear()
        self._offset = st.st_size
        self._edge = payload[-EDGE:]
        self._stamp = _stamp(st)
        if moved:
            warnings.warn(
                f"{self.path}: moved {moved} invalid line(s) to {_rejected_path(target)}",
                CorruptLineWarning,
                stacklevel=2,
            )

    def _quarantine(self, target: Path) -> int:
        """Copy invalid lines (and a torn tail) to the rejected file; how many."""
        moved = list(self.rejected)
        if self._fd is not None:
            tail = _read_from(self._fd, self._offset)
            if tail.strip():
                moved.append(Rejected(self._lines + 1, "torn last line", tail))
        if not moved:
            return 0
        path = _rejected_path(target)
        created = not path.exists()
        now = time.time()
        payload = b"".join(
            json.dumps(_rejected_entry(r, str(self.path), now)).encode() + b"\n" for r in moved
        )
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            _fsync_folder(path.parent)
        return len(moved)
