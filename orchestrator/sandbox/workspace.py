"""The run's workspace folder: the only place the model's file tools may read or write.

What this module decides, and why:

* A path from the model is relative to the workspace root and stays inside it.
  Absolute paths, ``..`` components, empty paths and NUL bytes are refused
  before the file system is touched; then the path's real path (symlinks
  followed, including symlinked parent folders, and for a file that does not
  exist yet the real path of its nearest existing parent) must lie under the
  root. So a symlink the model (or a package) made cannot carry a write outside.
* Every refusal is a :class:`WorkspaceError` whose message is written for the
  model: it says what was wrong and what is allowed, and goes back as the tool's
  error so the model can correct the call.
* Listings skip folders of tools and caches (``.venv``, ``__pycache__`` ...), so
  a prompt or a run record shows the project, not its installed dependencies.
* Reads are capped at 100 KB so one large file cannot flood the context.
* Files are opened without following a last link and only when they are regular files
  (:mod:`orchestrator.sandbox.files`): a FIFO the model made cannot hang the host.
* A write that would take the workspace past its limits (:mod:`orchestrator.sandbox.footprint`:
  how many files, how many bytes) is refused with ``limit reached: workspace holds N
  files, the limit is M``.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from orchestrator.sandbox import footprint, shown
from orchestrator.sandbox.files import read_regular, write_regular
from orchestrator.sandbox.footprint import WorkspaceLimits

SKIP_DIRS = frozenset({".venv", "__pycache__", ".git", "node_modules", ".pytest_cache"})
READ_CAP_BYTES = 100_000
LIST_CAP = 500


class WorkspaceError(Exception):
    """A file tool call the workspace refuses; the message is shown to the model."""


def _lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


class Workspace:
    """A folder the model builds in; every path it names is confined to ``root``."""

    def __init__(self, root: str | os.PathLike[str], limits: WorkspaceLimits | None = None):
        Path(root).mkdir(parents=True, exist_ok=True)
        self.root = Path(root).resolve()
        self.limits = limits or WorkspaceLimits()
        """How much the workspace may hold: a write past it is refused."""

    # ------------------------------------------------------------------ paths
    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (relative to the root), or a WorkspaceError if it escapes."""
        if not isinstance(path, str) or not path.strip():
            raise WorkspaceError(
                "The path is empty. Give a path relative to the workspace root, e.g. 'src/app.py'."
            )
        if "\0" in path:
            raise WorkspaceError(f"The path {path!r} contains a NUL byte, which no file name may.")
        pure = PurePosixPath(path)
        if pure.is_absolute():
            raise WorkspaceError(
                f"The path {path!r} is absolute. Only paths relative to the workspace root are "
                f"allowed, e.g. {str(pure).lstrip('/') or 'app.py'!r}."
            )
        if ".." in pure.parts:
            raise WorkspaceError(
                f"The path {path!r} contains '..'. Paths must stay inside the workspace; "
                "name files relative to its root without '..'."
            )
        real = Path(os.path.realpath(self.root / pure))
        if real != self.root and not real.is_relative_to(self.root):
            raise WorkspaceError(
                f"The path {path!r} leads outside the workspace through a symbolic link "
                f"(to {real}). Only files inside the workspace can be used."
            )
        return real

    def _rel(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix() or "."

    def _room(self, real: Path, size: int) -> None:
        """Refuse a write of ``size`` bytes at ``real`` that would pass the limits."""
        new = [p for p in (real, *real.parents) if p.is_relative_to(self.root)]
        new_files = sum(1 for p in new if not os.path.lexists(p))
        old_size = real.stat().st_size if real.is_file() else 0
        usage = footprint.measure(self.root)
        full = footprint.over(usage, self.limits, new_files, max(0, size - old_size))
        if full:
            raise WorkspaceError(
                f"limit reached: {full}. Delete files you do not need (run rm) before writing more."
            )

    # ------------------------------------------------------------------ tools
    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a text file, making its folders; returns a short confirmation."""
        real = self.resolve(path)
        if real.is_dir():
            raise WorkspaceError(f"{path!r} is a folder; write_file needs a file path inside it.")
        data = content.encode("utf-8")
        self._room(real, len(data))
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
            write_regular(real, data)
        except OSError as exc:
            raise WorkspaceError(f"Could not write {path!r}: {exc.strerror or exc}.") from None
        return f"wrote {self._rel(real)} ({len(data):,} bytes, {_lines(content)} lines)"

    def edit_file(self, path: str, old: str, new: str) -> str:
        """Replace the one exact occurrence of ``old`` with ``new``."""
        if not old:
            raise WorkspaceError(
                "edit_file needs a non-empty 'old' text to find. To create or replace a whole "
                "file, use write_file."
            )
        real = self.resolve(path)
        text = self._read_text(path, real, cap=None)
        count = text.count(old)
        if count == 0:
            hint = "read_file it to see the current text, then copy 'old' exactly"
            if old.strip() and old.strip() in text:
                hint = "the text occurs with different surrounding whitespace; " + hint
            raise WorkspaceError(
                f"'old' was found 0 times in {path!r}; it must match exactly once, including "
                f"whitespace and indentation. Hint: {hint}."
            )
        if count > 1:
            raise WorkspaceError(
                f"'old' was found {count} times in {path!r}; it must match exactly once. "
                "Hint: include more of the surrounding lines in 'old' so it is unique."
            )
        data = text.replace(old, new, 1).encode("utf-8")
        self._room(real, len(data))
        try:
            write_regular(real, data)
        except OSError as exc:
            raise WorkspaceError(f"Could not write {path!r}: {exc.strerror or exc}.") from None
        return f"edited {self._rel(real)} (replaced {_lines(old)} lines with {_lines(new)} lines)"

    def read_file(self, path: str) -> str:
        """The file's text, cut at 100 KB with a note saying so."""
        return self._read_text(path, self.resolve(path), cap=READ_CAP_BYTES)

    def _read_text(self, path: str, real: Path, cap: int | None) -> str:
        if real.is_dir():
            raise WorkspaceError(f"{path!r} is a folder, not a file; use list_files to see inside.")
        if not real.exists():
            raise WorkspaceError(f"There is no file {path!r}; use list_files to see what exists.")
        try:
            size = real.stat().st_size
            data = read_regular(real, cap)
        except OSError as exc:
            raise WorkspaceError(f"Could not read {path!r}: {exc.strerror or exc}.") from None
        cut = cap is not None and size > cap
        try:
            if b"\0" in data[:8192]:
                raise UnicodeDecodeError("utf-8", data, 0, 1, "NUL byte")
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not (cut and exc.start >= len(data) - 3):  # not just a character split by the cap
                raise WorkspaceError(
                    f"{path!r} is a binary file ({size:,} bytes), not UTF-8 text; the file tools "
                    "handle text only. Inspect it with run (e.g. 'file' or 'xxd | head')."
                ) from None
            text = data[: exc.start].decode("utf-8")
        if cut:
            text += (
                f"\n[... file cut at {cap:,} of {size:,} bytes; read the rest with run, "
                f"e.g. tail -c +{cap + 1} {self._rel(real)} | head -c {cap}]"
            )
        return text

    def list_files(self, path: str = ".") -> str:
        """Files under ``path``, relative to the root, one per line, at most 500."""
        real = self.resolve(path)
        if real.is_file():
            return shown.name(self._rel(real))
        if not real.is_dir():
            raise WorkspaceError(f"There is no folder {path!r}; use list_files('.') to see all.")
        names = self._walk(real)
        if not names:
            return f"(no files under {shown.name(self._rel(real))})"
        lines = [shown.name(n) for n in names[:LIST_CAP]]  # one name, one line
        if len(names) > LIST_CAP:
            more = len(names) - LIST_CAP
            lines.append(f"[... {more:,} more files not shown; list a subfolder to see them]")
        return "\n".join(lines)

    def files(self) -> list[str]:
        """Sorted relative paths of every file in the workspace, skipping tool and cache folders."""
        return self._walk(self.root)

    def _walk(self, top: Path) -> list[str]:
        found: list[str] = []
        for folder, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            base = Path(folder)
            for name in filenames:
                if name != ".git":  # a worktree's pointer to its repository, not the project's
                    found.append(self._rel(base / name))
            for name in dirnames:  # os.walk does not descend into symlinked folders
                if (base / name).is_symlink():
                    found.append(self._rel(base / name))
        return sorted(found)
