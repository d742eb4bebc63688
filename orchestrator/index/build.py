"""Building an index: walk the tree, extract what changed, recompute the rest, write it.

Incremental by default. A file whose content hash matches its record in the last index
of the same folder keeps that record and its symbols without being parsed again; any
other file is extracted; files gone are dropped. As git does, a file whose size and
modification time still match its record is not even read, unless it was modified less
than ``RACY_NS`` before the last walk began (a later write within the same tick of the
clock would leave the time unchanged): then its hash decides. ``full=True``, an index
written under another ``SCHEMA_VERSION`` or a damaged one rebuild everything. Relations
and the digest are always recomputed from the records: that is cheap, and it keeps them
true when a file they point at appears or goes. Files are written atomically,
``index.json`` last.

An unchanged file's lines are carried over as they were written, not serialised again,
and its symbol lines are not even validated (that would be most of an incremental
build's time): only the leading ``name``, ``kind`` and ``path`` of each are read, which
the digest needs. A line that does not start that way means a damaged index, and a full
rebuild. The reader still validates every line it loads.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memory.gcpause import paused_gc
from orchestrator.errors import CadillacError
from orchestrator.index import store
from orchestrator.index.digest import Head, digest
from orchestrator.index.extract import extract
from orchestrator.index.history import cochange_relations
from orchestrator.index.records import (
    SCHEMA_VERSION,
    FileRecord,
    IndexConfig,
    IndexMeta,
    IndexReport,
    Relation,
)
from orchestrator.index.resolve import Tree, import_relations
from orchestrator.index.testmap import test_relations
from orchestrator.index.walk import Entry, Walk, inside, is_binary
from orchestrator.sandbox.files import replace_file

MAX_SKIPPED_KEPT = 500
_STRING = r'([^"\\\n]*(?:\\.[^"\\\n]*)*)'  # the inside of a JSON string, escapes and all
_HEAD = re.compile(rf'^\{{"name":"{_STRING}","kind":"([a-z]+)","path":"{_STRING}"', re.M)


@dataclass
class Carried:
    """One file's symbols as ``symbols.jsonl`` lines, and their heads for the digest."""

    lines: list[str] = field(default_factory=list)
    heads: list[Head] = field(default_factory=list)


@dataclass
class Known:
    """A file as the last index wrote it: its record and line, and its symbols."""

    record: FileRecord
    line: str
    symbols: Carried = field(default_factory=Carried)


@dataclass
class Gathered:
    """What the walk collected: records and their lines, symbol lines, what was parsed."""

    files: list[FileRecord] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    symbols: Carried = field(default_factory=Carried)
    parsed: int = 0


@dataclass
class Previous:
    """The last index of the folder: its files by path, and since when a stat is trusted."""

    files: dict[str, Known] = field(default_factory=dict)
    settled_ns: int = 0
    """A file modified before this whose size and time match its record is unchanged."""

    def unchanged(self, entry: Entry) -> Known | None:
        old = self.files.get(entry.rel)
        if old is None or (old.record.size, old.record.mtime_ns) != (entry.size, entry.mtime_ns):
            return None
        return old if entry.mtime_ns < self.settled_ns else None


RACY_NS = 2_000_000_000


Progress = Callable[[int, int], None]
"""Told ``(files walked, files parsed)`` now and then while a tree is walked."""
PROGRESS_EVERY_S = 0.25


def build_index(
    root: Path,
    out: Path,
    *,
    full: bool = False,
    config: IndexConfig | None = None,
    progress: Progress | None = None,
) -> IndexReport:
    """Index the tree at ``root`` into the folder ``out`` (see the module's docstring);
    ``progress`` hears how far the walk is, at most every ``PROGRESS_EVERY_S``."""
    started = time.perf_counter()
    config = config or IndexConfig()
    root, out = Path(root).absolute(), Path(out).absolute()
    if not root.is_dir():
        raise CadillacError(f"{root} is not a folder to index")
    store.prepare(out)
    walked_ns = time.time_ns()
    with paused_gc():  # many small objects, no cycles: the collector's scans only cost
        previous = Previous() if full else load_previous(out)
        walk = Walk(root, config, exclude=inside(out, root))
        got = gather(walk, previous, config, progress)
        relations = relate(root, got.files, config)
    store.write_lines(out / store.FILES, got.lines)
    store.write_lines(out / store.SYMBOLS, got.symbols.lines)
    store.write_jsonl(out / store.RELATIONS, relations)
    text = digest(root.name, got.files, got.symbols.heads)
    replace_file(out / store.DIGEST, text, durable=False)
    report = IndexReport(
        files=len(got.files),
        symbols=len(got.symbols.lines),
        relations=len(relations),
        languages=_languages(got.files),
        seconds=round(time.perf_counter() - started, 3),
        parsed=got.parsed,
        reused=len(got.files) - got.parsed,
        removed=len(previous.files.keys() - {f.path for f in got.files}),
        skipped=walk.skipped,
        out=out,
    )
    _write_meta(root, out, report, config, walked_ns)
    return report


def gather(
    walk: Walk, previous: Previous, config: IndexConfig, progress: Progress | None = None
) -> Gathered:
    got = Gathered()
    told = time.monotonic()
    for entry in walk:
        if progress is not None and time.monotonic() - told >= PROGRESS_EVERY_S:
            progress(len(got.files), got.parsed)
            told = time.monotonic()
        if (settled := previous.unchanged(entry)) is not None:
            got.files.append(settled.record)
            got.lines.append(settled.line)
            got.symbols.lines += settled.symbols.lines
            got.symbols.heads += settled.symbols.heads
            continue
        data = _content(entry, config, walk.skip)
        if data is None:
            continue
        sha = hashlib.sha256(data).hexdigest()
        old = previous.files.get(entry.rel)
        if old is not None and old.record.sha256 == sha:
            record, line, carried = old.record, old.line, old.symbols
            if record.mtime_ns != entry.mtime_ns:
                record.mtime_ns = entry.mtime_ns
                line = store.dump(record, compact=True)
        else:
            record, symbols = extract(entry.rel, data, entry.mtime_ns, sha)
            line = store.dump(record, compact=True)
            carried = Carried(
                [store.dump(s) for s in symbols], [(s.path, s.kind, s.name) for s in symbols]
            )
            got.parsed += 1
        got.files.append(record)
        got.lines.append(line)
        got.symbols.lines += carried.lines
        got.symbols.heads += carried.heads
    return got


def _content(entry: Entry, config: IndexConfig, skip: Callable[[str], None]) -> bytes | None:
    """The file's bytes, or None when it is not indexed after all (unreadable, changed
    into a link, larger than the limit, binary), said through ``skip``."""
    try:
        data = entry.read(config.max_file_bytes)
    except OSError as exc:
        skip(f"{entry.rel}: {exc.strerror or exc}, not read")
        return None
    if len(data) > config.max_file_bytes:
        skip(f"{entry.rel}: over {config.max_file_bytes:,} bytes, over the size limit")
        return None
    if is_binary(data):
        skip(f"{entry.rel}: a binary file, not read")
        return None
    return data


def load_previous(out: Path) -> Previous:
    """The files of the last index in ``out`` by path, or nothing when there is none, it
    was written under another schema, or any of it is damaged."""
    try:
        meta = IndexMeta.model_validate_json(store.read_bytes(out / store.META))
        if meta.schema_version != SCHEMA_VERSION:
            return Previous()
        lines = store.read_lines(out / store.FILES)
        records, bad = store.parse_lines(lines, FileRecord)
        symbols = store.read_lines(out / store.SYMBOLS)
    except (OSError, ValueError):
        return Previous()
    heads = _HEAD.findall("\n".join(symbols))
    if bad or len(heads) != len(symbols):
        return Previous()
    by_path = {r.path: Known(r, line) for r, line in zip(records, lines, strict=True)}
    for line, (name, kind, path) in zip(symbols, heads, strict=True):
        if "\\" in name or "\\" in path:
            try:
                name, path = json.loads(f'["{name}", "{path}"]')
            except ValueError:
                return Previous()
        if (known := by_path.get(path)) is not None:
            known.symbols.lines.append(line)
            known.symbols.heads.append((path, kind, name))
    return Previous(by_path, meta.walked_ns - RACY_NS)


def relate(root: Path, files: list[FileRecord], config: IndexConfig) -> list[Relation]:
    """Every relation of the records: imports, tests, and co-change when history is given."""
    tree = Tree(files)
    imports = import_relations(files, tree)
    tests = test_relations(files, imports)
    return imports + tests + cochange_relations(root, tree.paths, config)


def _write_meta(root: Path, out: Path, report: IndexReport, config: IndexConfig, walked_ns: int):
    meta = IndexMeta(
        root=str(root),
        walked_ns=walked_ns,
        built=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=report.seconds,
        counts={
            "files": report.files,
            "symbols": report.symbols,
            "relations": report.relations,
            "skipped": len(report.skipped),
        },
        languages=report.languages,
        parsed=report.parsed,
        reused=report.reused,
        removed=report.removed,
        skipped=report.skipped[:MAX_SKIPPED_KEPT],
        config=config,
    )
    replace_file(out / store.META, meta.model_dump_json(indent=1), durable=False)


def _languages(files: list[FileRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in files:
        counts[f.language] = counts.get(f.language, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
