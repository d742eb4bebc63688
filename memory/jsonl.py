"""A JSONL file of pydantic records that several processes share safely.

What this module decides, and why:

* Every write happens under a ``filelock`` on ``<file>.lock``. An append is one
  ``write()`` on an ``O_APPEND`` descriptor; a rewrite (forget, merge, boost)
  writes a temporary file beside the original, fsyncs it, renames it into place
  and fsyncs the folder, so a reader sees the old file or the new one, never half.
* Reads are cached. ``refresh()`` stats the file; when its identity (device,
  inode) is unchanged and it only grew, just the new bytes are parsed. A rename
  (anybody's rewrite) gives a new inode and the file is read again from the top.
  The lock is taken only when the file changed, so unchanged recalls cost a stat;
  where the lock cannot be made (a read-only home), reading goes on without it.
* A line that is not a valid record is skipped with a :class:`CorruptLineWarning`
  naming its line number. It is not lost: a later rewrite moves it, verbatim,
  into ``<file>.rejected.jsonl`` (with its line number and the error) and says so.
* A torn last line (a writer killed mid-append) is such an invalid line. The next
  append starts with a newline so it never glues itself onto the fragment.
* A last line that is valid but lacks its newline (a hand edit) is a record; the
  next append adds the missing newline first.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from filelock import FileLock
from pydantic import BaseModel, ValidationError

from memory.gcpause import paused_gc

R = TypeVar("R", bound=BaseModel)


class CorruptLineWarning(UserWarning):
    """A line of a JSONL store could not be read as a record and was skipped."""


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


class JsonlFile(Generic[R]):
    """One JSONL file of ``model`` records, cached in memory and shared across processes."""

    def __init__(self, path: str | os.PathLike[str], model: type[R]):
        self.path = Path(path)
        self.model = model
        self.lock = FileLock(str(self.path) + ".lock")
        self.rejected_path = self.path.with_name(self.path.name + ".rejected.jsonl")
        self.records: list[R] = []
        self._raw: dict[int, bytes] = {}  # id(record) -> its line as read, reused by rewrites
        self.rejected: list[Rejected] = []
        self._stamp: tuple[int, int, int, int] | None = None  # dev, ino, size, mtime_ns
        self._offset = 0  # bytes consumed, always just after a newline or at a valid tail
        self._lines = 0  # lines consumed, for line numbers
        self._needs_newline = False
        self._torn_warned: set[int] = set()

    # ------------------------------------------------------------------ reading
    def refresh(self) -> Change[R]:
        """Bring ``records`` up to date with the file; cheap when nothing changed."""
        stamp = self._stat()
        if stamp == self._stamp:
            return Change(reset=False)
        try:
            self.lock.acquire()
        except OSError:  # a read-only home: read without the lock, as any reader may
            return self.refresh_locked()
        try:
            return self.refresh_locked()
        finally:
            self.lock.release()

    def _stat(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def invalidate(self) -> None:
        """Forget the cache so the next refresh reads the whole file (after a failed write)."""
        self._stamp = None
        self._offset = -1

    def refresh_locked(self) -> Change[R]:
        """``refresh`` for a caller that holds ``lock``."""
        stamp = self._stat()
        if stamp == self._stamp:
            return Change(reset=False)
        old = self._stamp
        same_file = (
            old is not None
            and stamp is not None
            and stamp[:2] == old[:2]
            and stamp[2] >= self._offset
        )
        if not same_file:
            self.records, self.rejected, self._raw = [], [], {}
            self._offset, self._lines, self._needs_newline = 0, 0, False
            self._torn_warned.clear()
        if stamp is None:
            self._stamp = None
            return Change(reset=not same_file)
        with open(self.path, "rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        added = self._parse(data)
        self._stamp = self._stat()
        return Change(reset=not same_file, added=added)

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
        self._offset += end
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
                self._offset += len(tail)
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
        if self._needs_newline or self._ends_without_newline():
            payload = b"\n" + payload
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, payload)
        finally:
            os.close(fd)
        if self._needs_newline:  # that newline ends a line we already counted
            self._offset += 1
            self._needs_newline = False
        # Read our own lines back (and a torn fragment before them, now a complete
        # invalid line), so records, offsets and line numbers follow the file exactly.
        return self.refresh_locked()

    def _ends_without_newline(self) -> bool:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell() == 0:
                    return False
                fh.seek(-1, os.SEEK_END)
                return fh.read(1) != b"\n"
        except FileNotFoundError:
            return False

    def rewrite_locked(self, records: list[R], changed: Iterable[R] = ()) -> None:
        """Replace the file's records; the caller holds the lock and refreshed first.

        A record read from the file and not listed in ``changed`` is written back
        as the very line it was read from, which keeps large rewrites cheap.
        """
        self._quarantine()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        stale = {id(r) for r in changed}
        raw = self._raw
        lines = []
        for r in records:
            line = None if id(r) in stale else raw.get(id(r))
            if line is None:
                line = raw[id(r)] = r.model_dump_json().encode()
            lines.append(line)
        lines.append(b"")
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
        try:
            os.fchmod(fd, _mode_of(self.path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(b"\n".join(lines))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self.records = list(records)
        self._raw = {id(r): raw[id(r)] for r in records}
        self.rejected = []
        self._lines = len(records)
        self._needs_newline = False
        self._torn_warned.clear()
        self._stamp = self._stat()
        self._offset = self._stamp[2] if self._stamp else 0

    def _quarantine(self) -> None:
        """Move invalid lines (and a torn tail) out of the way before a rewrite."""
        moved = list(self.rejected)
        stamp = self._stat()
        if stamp and stamp[2] > self._offset:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                tail = fh.read()
            if tail.strip():
                moved.append(Rejected(self._lines + 1, "torn last line", tail.rstrip(b"\n")))
        if not moved:
            return
        now = time.time()
        with open(self.rejected_path, "ab") as fh:
            for r in moved:
                entry = {
                    "ts": now,
                    "source": str(self.path),
                    "lineno": r.lineno,
                    "error": r.error,
                    "raw": r.raw.decode("utf-8", "replace"),
                }
                fh.write(json.dumps(entry).encode() + b"\n")
        warnings.warn(
            f"{self.path}: moved {len(moved)} invalid line(s) to {self.rejected_path}",
            CorruptLineWarning,
            stacklevel=3,
        )
