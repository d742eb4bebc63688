"""Where cadillac keeps its state: one folder, moved by ``--home`` or ``CADILLAC_HOME``.

The home holds ``memory.jsonl`` (lessons), ``phase_budgets.jsonl`` (phase
history), ``runs/`` (one folder per run) and ``.cache/`` (templates builds copy; moved
by ``CADILLAC_CACHE_DIR``). Without either setting it is the
current directory, so a project carries its own memory. Commands that only read
refuse a home that does not exist (a mistyped path should not look like an
empty memory); commands that write create it, and refuse, before they start, a home
whose memory or budget history is read-only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import CadillacError

ENV_VAR = "CADILLAC_HOME"
GLOBAL_ENV_VAR = "CADILLAC_GLOBAL_DIR"
CACHE_ENV_VAR = "CADILLAC_CACHE_DIR"


def global_root() -> Path:
    """The global scope: what holds in every project (notes, skills). ``CADILLAC_GLOBAL_DIR``,
    else ``$XDG_CONFIG_HOME/cadillac``, else ``~/.config/cadillac``."""
    raw = os.environ.get(GLOBAL_ENV_VAR)
    if raw:
        return Path(raw).expanduser().absolute()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(config).expanduser().absolute() / "cadillac"


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def resolve(cls, flag: str | None = None) -> Home:
        raw = flag or os.environ.get(ENV_VAR) or "."
        try:
            return cls(Path(raw).expanduser().absolute())
        except FileNotFoundError:  # a relative home, and os.getcwd() of a deleted folder
            raise CadillacError(
                "the current folder no longer exists (it was deleted or moved): cd to one "
                f"that does, or give --home (or {ENV_VAR}) an absolute path"
            ) from None

    @property
    def memory_path(self) -> Path:
        return self.root / "memory.jsonl"

    @property
    def budgets_path(self) -> Path:
        return self.root / "phase_budgets.jsonl"

    @property
    def self_memory_path(self) -> Path:
        """The improve cycle's lessons about cadillac itself: recalled by the improver only."""
        return self.root / "self_memory.jsonl"

    @property
    def error_budget_path(self) -> Path:
        """The improve cycle's false-accept budget over each repository's life (a ledger,
        appended to, never rewritten: :mod:`orchestrator.improve.lifetime`)."""
        return self.root / "error_budget.jsonl"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def cache_dir(self) -> Path:
        """Template virtual environments builds copy: ``$CADILLAC_CACHE_DIR`` when it is set
        (one cache for several homes, each template made once), else the home's ``.cache``.
        What is in it is made from the interpreter alone, so homes can share it safely."""
        raw = os.environ.get(CACHE_ENV_VAR)
        if raw:
            return Path(raw).expanduser().absolute()
        return self.root / ".cache"

    @property
    def notes_dir(self) -> Path:
        """Notes of the home scope: what people (or builds) said about this project."""
        return self.root / "notes"

    @property
    def skills_dir(self) -> Path:
        return self.root / "skills"

    @property
    def global_notes_dir(self) -> Path:
        return global_root() / "notes"

    @property
    def global_skills_dir(self) -> Path:
        return global_root() / "skills"

    def check(self, write: bool = False) -> Home:
        """Raise CadillacError unless the home can be read (and written, or created)."""
        root = self.root
        if root.exists() and not root.is_dir():
            raise CadillacError(f"home {root} is not a folder (set --home or {ENV_VAR})")
        if root.is_symlink() and not root.exists():
            raise CadillacError(
                f"home {root} is a link to {os.readlink(root)}, which does not exist: make "
                f"that folder, or set --home or {ENV_VAR} to another"
            )
        if not root.exists():
            if not write:
                raise CadillacError(f"home {root} does not exist (set --home or {ENV_VAR})")
            try:
                root.mkdir(parents=True)
            except OSError as exc:
                raise CadillacError(f"cannot create home {root}: {exc.strerror}") from None
        if not os.access(root, os.R_OK | os.X_OK):
            raise CadillacError(f"home {root} is not readable")
        if write and not os.access(root, os.W_OK):
            raise CadillacError(f"home {root} is not writable")
        for path in (self.memory_path, self.budgets_path):
            if path.exists() and not path.is_file():
                raise CadillacError(f"{path} is not a file")
            if write and path.exists() and not _writable(path):  # the stores' own line
                via = f" (a link to {path.resolve()})" if path.is_symlink() else ""
                raise CadillacError(
                    f"read-only{via}, nothing was changed (make it writable, e.g. chmod u+w, "
                    f"and retry): {path}"
                )
        if write and self.runs_dir.is_dir() and not os.access(self.runs_dir, os.W_OK | os.X_OK):
            raise CadillacError(f"{self.runs_dir} is not writable; nothing was started")
        return self


def _writable(path: Path) -> bool:
    """Whether cadillac's stores would write ``path``: a file without any write permission bit
    is read-only even to root (see :mod:`memory.jsonl`), so it is checked before the first
    model call, not found after a phase was paid for."""
    return bool(path.stat().st_mode & 0o222) and os.access(path, os.W_OK)
