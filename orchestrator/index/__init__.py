"""The code index: what a source tree holds, for people and for the model that builds it.

``build_index(root, out)`` walks a tree (``.gitignore`` rules, no links followed, no
binaries or huge files), extracts each file's symbols and imports with tree-sitter
(Python, JavaScript, TypeScript/TSX, Go, Rust; a line scanner for other languages),
relates files (imports, tests, co-change from a trusted git history), and writes
``files.jsonl``, ``symbols.jsonl``, ``relations.jsonl``, ``digest.md`` and ``index.json``
into ``out``. Later builds reuse the records of unchanged files.
``CodeIndex.load(out)`` answers questions of an index and never raises.

Modules: ``walk`` and ``ignore`` (which files, read safely), ``languages`` (grammars),
``extract`` (one file -> records) with ``encoding`` (line endings, PEP 263),
``python_code``, ``declarations``, ``scan``, ``manifests``, ``nodes``, ``rust_paths``;
``resolve``, ``testmap``, ``history`` (relations); ``digest``; ``store`` (the folder's
files); ``build``; ``search`` (BM25); ``reader`` (``CodeIndex``); ``records`` (every
record, ``IndexConfig``); ``paths``.
"""

from orchestrator.index.build import build_index
from orchestrator.index.reader import CodeIndex
from orchestrator.index.records import (
    SCHEMA_VERSION,
    FileRecord,
    Hit,
    IndexConfig,
    IndexMeta,
    IndexReport,
    Related,
    Relation,
    Symbol,
)

__all__ = [
    "SCHEMA_VERSION",
    "CodeIndex",
    "FileRecord",
    "Hit",
    "IndexConfig",
    "IndexMeta",
    "IndexReport",
    "Related",
    "Relation",
    "Symbol",
    "build_index",
]
