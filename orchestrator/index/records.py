"""What the code index holds on disk, one pydantic model per record, and its configuration.

An index folder holds ``files.jsonl`` (:class:`FileRecord`), ``symbols.jsonl``
(:class:`Symbol`), ``relations.jsonl`` (:class:`Relation`), ``digest.md`` and
``index.json`` (:class:`IndexMeta`), written last so that its presence says the rest is
whole. A file's record carries everything later steps need from its content (its
imports, what a manifest declares), so relations and the digest are recomputed from the
records alone and an unchanged file is never read twice. ``SCHEMA_VERSION`` names the
layout: an index written under another version is rebuilt, never patched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 2
"""Bump when a record changes shape or extraction changes meaning: old indexes rebuild.
2: Python definitions under a module's or class's ``if``/``try``/``with``, PEP 263
encodings, and lines of ``\\r`` files (the records' shape is 1's)."""

SymbolKind = Literal[
    "module",
    "class",
    "function",
    "method",
    "interface",
    "type",
    "enum",
    "struct",
    "trait",
    "constant",
    "variable",
    "macro",
]
RelationKind = Literal["imports", "tests", "cochange"]

SKIP_DIRS = frozenset(
    """
    .git .hg .svn .venv venv .env node_modules bower_components target dist build out-tsc
    __pycache__ .pytest_cache .mypy_cache .ruff_cache .tox .nox .eggs .cargo-home .cargo
    .gopath .idea .vscode coverage htmlcov .coverage .next .nuxt .svelte-kit .parcel-cache
    .turbo .cache .gradle .terraform site-packages vendor
    """.split()
)
"""Folders never walked: version control, environments, dependencies, build output, caches."""


class IndexConfig(BaseModel):
    """How a tree is walked and what is read from it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_file_bytes: int = 1024 * 1024
    """A file larger than this is listed as skipped, never read."""
    max_files: int = 20_000
    """The walk stops after this many files (and says so in ``skipped``)."""
    max_total_bytes: int = 256 * 1024 * 1024
    """... or after this many bytes of files."""
    max_depth: int = 48
    """Folders deeper than this are not entered."""
    skip_dirs: frozenset[str] = SKIP_DIRS
    """Folder names never walked, at any depth (``*.egg-info`` is skipped too)."""
    history: Path | None = None
    """A trusted git checkout to read co-change history from; None: no history is read.
    Never the model's workspace: its ``.git/config`` could name commands git would run."""
    git_commits: int = 300
    git_timeout: float = 10.0
    max_commit_files: int = 50
    """A commit touching more files than this says nothing about which files belong together."""
    min_cochange: int = 2
    """A pair of files must change together this often to be related."""


class Import(BaseModel):
    """One import as written in a file, before it is resolved to a file of the tree."""

    module: str
    """``a.b`` (Python), ``./x`` (JS/TS), ``example.com/m/pkg`` (Go), ``crate::a::b`` (Rust)."""
    names: list[str] = Field(default_factory=list)
    level: int = 0
    """Python's relative level: 1 for ``from . import x``."""
    kind: Literal["import", "require", "use", "mod"] = "import"
    line: int = 0


class Facts(BaseModel):
    """What a manifest, README or program file declares about the project."""

    name: str = ""
    """The project, module or crate name (pyproject, package.json, go.mod, Cargo.toml)."""
    main: bool = False
    """The file is a program's entry (``__main__`` guard, Go ``func main``, Rust ``fn main``)."""
    entries: list[str] = Field(default_factory=list)
    """Entry points a manifest declares, as ``name -> target`` lines."""
    commands: list[str] = Field(default_factory=list)
    """Commands a person runs: README code lines, ``make`` targets, scripts."""
    frameworks: list[str] = Field(default_factory=list)
    """Test frameworks a manifest names (pytest, jest, vitest ...)."""


class FileRecord(BaseModel):
    path: str
    """Relative to the root, with ``/``."""
    language: str
    size: int
    lines: int
    sha256: str
    mtime_ns: int
    parse_errors: bool
    """No default, like the fields above: always written, even in the compact lines of
    ``files.jsonl`` that leave out the rest of what is at its default."""
    doc: str = ""
    """The module docstring's or the README's first line."""
    imports: list[Import] = Field(default_factory=list)
    facts: Facts | None = None


class Symbol(BaseModel):
    name: str
    kind: SymbolKind
    path: str
    start_line: int
    end_line: int
    signature: str = ""
    doc: str = ""
    parent: str | None = None
    """The enclosing class, impl type or module of a method."""


class Relation(BaseModel):
    kind: RelationKind
    source: str
    target: str
    weight: int = 1
    via: str
    """``import``, ``name`` (naming convention) or ``git``."""


class IndexMeta(BaseModel):
    """``index.json``: what was indexed, when, with which rules."""

    schema_version: int = SCHEMA_VERSION
    root: str
    built: str
    """UTC, ISO 8601."""
    walked_ns: int = 0
    """When the walk began, in nanoseconds since the epoch (compared with files' times)."""
    seconds: float
    counts: dict[str, int] = Field(default_factory=dict)
    languages: dict[str, int] = Field(default_factory=dict)
    parsed: int = 0
    reused: int = 0
    removed: int = 0
    skipped: list[str] = Field(default_factory=list)
    config: IndexConfig = Field(default_factory=IndexConfig)


class IndexReport(BaseModel):
    """What one ``build_index`` did."""

    files: int
    symbols: int
    relations: int = 0
    languages: dict[str, int]
    seconds: float
    parsed: int
    """Files read and extracted this time."""
    reused: int
    """Files whose content was unchanged, their records kept."""
    removed: int
    skipped: list[str]
    """Links, special files, binaries, oversized files, each with why."""
    out: Path


class Hit(BaseModel):
    kind: Literal["symbol", "file"]
    score: float
    path: str
    line: int
    symbol: Symbol | None = None
    file: FileRecord | None = None

    @property
    def record(self) -> Symbol | FileRecord:
        """The symbol or the file record the hit is (whichever ``kind`` says)."""
        return self.symbol if self.symbol is not None else self.file  # type: ignore[return-value]


class Related(BaseModel):
    """A file's neighbours, each as ``(path, weight)``, heaviest first."""

    path: str
    imports: list[tuple[str, int]] = Field(default_factory=list)
    imported_by: list[tuple[str, int]] = Field(default_factory=list)
    tests: list[tuple[str, int]] = Field(default_factory=list)
    """Test files that cover this file."""
    covers: list[tuple[str, int]] = Field(default_factory=list)
    """For a test file: the files it covers."""
    cochanged: list[tuple[str, int]] = Field(default_factory=list)
