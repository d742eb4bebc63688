"""What cadillac's own commands leave in an existing project's workspace: never the change.

A change to a user's project must hold what the model changed on purpose, and nothing
that cadillac's installs, builds and test runs made: an ``npm install`` writes a
``package-lock.json`` the project never had (8,583 lines of minimist's change once), a
test run leaves ``.nyc_output/`` and ``coverage/``, an editable install a
``*.egg-info`` and hatch-vcs a ``_version.py``. A project's ignore rules often miss
them, and they are the model's to edit anyway, so they cannot decide.

So every command cadillac runs itself in the workspace (the installs, the checks, the
project's tests before the first phase) is watched (:meth:`Products.watch`): what a
command made, changed or removed is recorded with its size and modification time, in
``products.json`` of the run's folder (out of the sandbox's reach, kept for a resume).
When a phase's work is committed (:func:`orchestrator.loop.source.commit`), the paths
those commands made are left out, even when a later test run (the model's own included)
wrote them again, and the paths they changed or removed are left out while still exactly
as they left them. The model's file tools are what it changes on purpose: a path it
writes with one (:meth:`Products.claim`) is its own from then on. The folders that
installs and test runs fill (:data:`orchestrator.loop.source.NOT_THE_CHANGE`) are never
walked here, and never committed.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from orchestrator.sandbox.files import UnsafeFile, read_regular, replace_file

RECORD = "products.json"
MAX_FILES = 200_000
"""A walk stops counting after this many files (a tree that large is not a project)."""
State = tuple[int, int, int]
"""A path's (file type, size, modification time in ns), as ``lstat`` says."""
GONE = (0, 0, 0)
"""The state of a path a command removed."""
Entry = tuple[int, int, int, int]
"""A recorded path: its :data:`State` as the command left it, and 1 when the command made
it (it was not there before), 0 when it changed or removed it."""


class Products:
    """The record of what cadillac's own commands left in one workspace."""

    def __init__(self, workspace: Path, folder: Path, skip: Sequence[str]):
        self.workspace, self.path, self.skip = workspace, folder / RECORD, frozenset(skip)
        self.left: dict[str, Entry] = self._load()

    def _load(self) -> dict[str, Entry]:
        try:
            data = json.loads(read_regular(self.path))
        except (OSError, UnsafeFile, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {
            str(k): (int(v[0]), int(v[1]), int(v[2]), int(v[3]))
            for k, v in data.items()
            if isinstance(v, list) and len(v) == 4 and all(isinstance(x, int) for x in v)
        }

    def state(self) -> dict[str, State]:
        """Every file and link of the workspace (skipped folders left out), never entering a
        link, with its :data:`State`."""
        found: dict[str, State] = {}
        stack = [""]
        while stack and len(found) < MAX_FILES:
            rel = stack.pop()
            try:
                entries = list(os.scandir(self.workspace / rel if rel else self.workspace))
            except OSError:
                continue
            for entry in entries:
                path = f"{rel}/{entry.name}" if rel else entry.name
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    if entry.name not in self.skip and entry.name != ".git":
                        stack.append(path)
                    continue
                if path == ".git":
                    continue
                found[path] = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime_ns)
        return found

    @contextmanager
    def watch(self) -> Iterator[None]:
        """Record what the commands run inside this block make, change or remove."""
        before = self.state()
        try:
            yield
        finally:
            after = self.state()
            left: dict[str, Entry] = {}
            for path, now in after.items():
                if before.get(path) != now:
                    made = path not in before or self.left.get(path, GONE + (0,))[3]
                    left[path] = (*now, 1 if made else 0)
            left |= {p: (*GONE, 0) for p in before if p not in after}
            if left:
                self.left.update(left)
                self._save()

    def claim(self, path: str) -> None:
        """The model wrote ``path`` with a file tool: it is the model's, whoever made it."""
        rel = os.path.normpath(path).removeprefix("./")
        if os.path.isabs(rel):
            try:
                rel = str(Path(rel).relative_to(self.workspace))
            except ValueError:
                return
        if self.left.pop(rel, None) is not None:
            self._save()

    def _save(self) -> None:
        text = json.dumps({k: list(v) for k, v in sorted(self.left.items())})
        replace_file(self.path, text.encode())

    def of(self, paths: Sequence[str], untracked: Sequence[str] = ()) -> list[str]:
        """Those of ``paths`` that are cadillac's commands' (see the module docstring).
        A path of ``untracked`` that a command changed but did not make is the model's:
        it made the file, the command only wrote into it."""
        out, new = [], set(untracked)
        for path in paths:
            left = self.left.get(path)
            if left is None:
                continue
            if left[3]:  # made by cadillac's command, never written by the model's tools
                out.append(path)
                continue
            if path in new:
                continue
            try:
                info = os.lstat(self.workspace / path)
                now = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime_ns)
            except FileNotFoundError:
                now = GONE
            except OSError:
                continue
            if now == left[:3]:
                out.append(path)
        return out
