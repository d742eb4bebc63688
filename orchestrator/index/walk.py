"""Which files of a tree are indexed, read without ever following a link the tree holds.

The tree may be a model's workspace, so the walk trusts nothing in it. It goes folder by
folder through descriptors (``os.scandir`` on a descriptor opened with ``O_NOFOLLOW``,
each entry's type taken with ``follow_symlinks=False``), and a file is opened relative
to its folder's descriptor with the flags of :mod:`orchestrator.sandbox.files`
(``O_NOFOLLOW | O_NONBLOCK``, then ``fstat`` must say regular file). A link swapped in
for a folder or a file between listing and opening is refused, never followed, and a
FIFO cannot hang the walk. Links and special files are listed in ``skipped``, never read.

What is left out, and why:

* folders named in ``IndexConfig.skip_dirs`` (version control, environments,
  dependencies, build output, caches) and ``*.egg-info``, silently;
* what ``.gitignore`` files say, root and nested, with git's rules
  (:mod:`orchestrator.index.ignore`); a folder ignored is not entered, so nothing in it
  comes back, as with git;
* files over ``max_file_bytes``, binaries (a NUL byte in the first 8 KiB) and names
  that are not UTF-8, listed in ``skipped``; the walk stops after ``max_files`` files
  or ``max_total_bytes`` bytes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.index.ignore import Rules, ignored, with_file
from orchestrator.index.records import IndexConfig
from orchestrator.sandbox.files import DIR_FLAGS, READ_FLAGS, UnsafeFile, kind_of

BINARY_PROBE = 8192
MAX_SKIPPED = 5000
GITIGNORE_LIMIT = 256 * 1024
ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(frozen=True)
class Entry:
    """A regular file the walk found; ``read`` works only while the walk stands on it."""

    rel: str
    name: str
    size: int
    mtime_ns: int
    dfd: int

    def read(self, limit: int) -> bytes:
        """At most ``limit + 1`` bytes of the file, opened beside its folder's descriptor."""
        fd = os.open(self.name, READ_FLAGS, dir_fd=self.dfd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UnsafeFile(f"{self.rel} is not a regular file")
            chunks, left = [], limit + 1
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_PROBE]


@dataclass
class Walk:
    """The regular files under ``root`` that pass the rules, in sorted order."""

    root: Path
    config: IndexConfig = field(default_factory=IndexConfig)
    exclude: frozenset[str] = frozenset()
    """Relative folder paths left out (the index's own output, when it sits in the tree)."""
    skipped: list[str] = field(default_factory=list)
    count: int = 0
    bytes: int = 0
    stopped: bool = False

    def __iter__(self) -> Iterator[Entry]:
        top = os.open(self.root, ROOT_FLAGS)
        try:
            yield from self._folder(top, "", [], 0)
        finally:
            os.close(top)

    def _folder(self, dfd: int, rel: str, rules: Rules, depth: int) -> Iterator[Entry]:
        with os.scandir(dfd) as listing:
            entries = sorted((e.name, e.stat(follow_symlinks=False)) for e in listing)
        rules = self._with_gitignore(dfd, rel, entries, rules)
        for name, st in entries:
            where = f"{rel}{name}"
            if self.count >= self.config.max_files or self.bytes > self.config.max_total_bytes:
                self._stop(where)
                return
            if not _plain(name):
                self.skip(f"{where!r}: a name that is not plain UTF-8, not read")
            elif stat.S_ISDIR(st.st_mode):
                yield from self._subfolder(dfd, name, where, rules, depth)
            elif not stat.S_ISREG(st.st_mode):
                self.skip(f"{where}: {kind_of(st.st_mode)}, not read")
            elif not ignored(rules, where, False):
                if st.st_size > self.config.max_file_bytes:
                    self.skip(f"{where}: {st.st_size:,} bytes, over the size limit")
                    continue
                self.count += 1
                self.bytes += st.st_size
                yield Entry(where, name, st.st_size, st.st_mtime_ns, dfd)

    def _subfolder(self, dfd, name, where, rules, depth) -> Iterator[Entry]:
        if self._left_out(name, where) or ignored(rules, where, True):
            return
        if depth >= self.config.max_depth:
            self.skip(f"{where}/: a folder too deep, not entered")
            return
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=dfd)
        except OSError as exc:
            self.skip(f"{where}/: {exc.strerror or exc}, not entered")
            return
        try:
            yield from self._folder(child, f"{where}/", rules, depth + 1)
        finally:
            os.close(child)

    def skip(self, why: str) -> None:
        """Say what was left out and why (up to ``MAX_SKIPPED`` lines, then that there is more)."""
        if len(self.skipped) < MAX_SKIPPED:
            self.skipped.append(why)
        elif len(self.skipped) == MAX_SKIPPED:
            self.skipped.append("… and more left out, not listed")

    def _stop(self, where: str) -> None:
        if not self.stopped:
            self.stopped = True
            done = f"{self.count:,} files, {self.bytes:,} bytes"
            self.skip(f"{where}: the walk stopped here, at the limit ({done})")

    def _left_out(self, name: str, where: str) -> bool:
        return name in self.config.skip_dirs or name.endswith(".egg-info") or where in self.exclude

    def _with_gitignore(self, dfd: int, rel: str, entries, rules: Rules) -> Rules:
        if not any(n == ".gitignore" and stat.S_ISREG(st.st_mode) for n, st in entries):
            return rules
        entry = Entry(f"{rel}.gitignore", ".gitignore", 0, 0, dfd)
        try:
            text = entry.read(GITIGNORE_LIMIT)[:GITIGNORE_LIMIT].decode("utf-8", "replace")
        except OSError:
            return rules
        return with_file(rules, rel, text)


def inside(out: Path, root: Path) -> frozenset[str]:
    """The folder ``out``'s path inside the tree at ``root``, when it is there (an index kept
    in the tree it indexes leaves itself out)."""
    try:
        rel = out.resolve().relative_to(root.resolve())
    except ValueError:
        return frozenset()
    return frozenset({rel.as_posix()}) if str(rel) != "." else frozenset()


def _plain(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\n" not in name and "\r" not in name
