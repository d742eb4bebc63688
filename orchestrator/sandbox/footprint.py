"""How much a workspace holds, and the limits on it.

What this module decides, and why:

* A workspace may hold at most :class:`WorkspaceLimits` ``max_files`` entries (files,
  folders and links alike: each takes an inode) and ``max_bytes`` on disk (a hard-linked
  file counted once, a sparse file by what it really takes), its installed environments
  included.
* It is measured after every command (:mod:`orchestrator.sandbox.executor`) and before
  every write of the file tools (:mod:`orchestrator.sandbox.workspace`). Past a limit the
  model reads ``limit reached: workspace holds N files, the limit is M`` and the command's
  record names the limit; a write that would pass it is refused. A command can overshoot
  while it runs (by at most what it writes in that time: each file is capped by the file
  size limit); the next one is told, and nothing more is written by the file tools
  until files are deleted.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

GIB = 1024**3


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", GIB), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


class WorkspaceLimits(BaseModel):
    """How much one workspace may hold."""

    model_config = ConfigDict(extra="forbid")

    max_files: int = Field(default=200_000, ge=16)
    """Files, folders and links in the workspace, its environments (.venv, node_modules) too."""
    max_bytes: int = Field(default=20 * GIB, ge=1024**2)
    """Bytes the workspace takes on disk."""


class Usage(BaseModel):
    """What a workspace holds."""

    files: int
    bytes: int


def measure(root: Path) -> Usage:
    """Count every entry under ``root`` and the disk it takes, following no link."""
    files = size = 0
    seen: set[tuple[int, int]] = set()
    for _folder, dirs, names, fd in os.fwalk(root, follow_symlinks=False):
        for name in (*dirs, *names):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            files += 1
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
            size += st.st_blocks * 512
    return Usage(files=files, bytes=size)


def over(
    usage: Usage, limits: WorkspaceLimits, new_files: int = 0, new_bytes: int = 0
) -> str | None:
    """The limit ``usage`` passes (with ``new_files`` of ``new_bytes`` more), said for the
    model; None within both."""
    if usage.files + new_files > limits.max_files:
        return f"workspace holds {usage.files:,} files, the limit is {limits.max_files:,}"
    if usage.bytes + new_bytes > limits.max_bytes:
        held, most = human_bytes(usage.bytes), human_bytes(limits.max_bytes)
        return f"workspace holds {held}, the limit is {most}"
    return None
