"""Reading an index: the API the model's ``knowledge`` tool and the CLI are built on.

It fails open. A missing, partial or damaged index loads as what could be read, and
``problems`` says what was missing or unreadable; every question then answers from
what is there (empty lists at worst), never with an exception, so a tool call about
the code never breaks a build.
"""

from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from orchestrator.index import paths, store
from orchestrator.index.records import (
    SCHEMA_VERSION,
    FileRecord,
    Hit,
    IndexConfig,
    IndexMeta,
    Related,
    Relation,
    Symbol,
)
from orchestrator.index.search import SearchIndex
from orchestrator.index.testmap import is_test
from orchestrator.index.walk import Walk, inside, is_binary


def _fail_open(empty: Callable[[], object]):
    """A question that raises answers ``empty()`` instead, and says why in ``problems``."""

    def wrap(method):
        @functools.wraps(method)
        def answer(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:  # fail open: a question about code never breaks a build
                self.problems.append(f"{method.__name__} failed: {type(exc).__name__}: {exc}")
                return empty()

        return answer

    return wrap


class CodeIndex:
    """The records of one index folder, with the questions people and models ask of them."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.problems: list[str] = []
        self.meta: IndexMeta | None = self._meta()
        whole = self.meta is not None
        self.files: list[FileRecord] = self._records(store.FILES, FileRecord, whole)
        self.symbols: list[Symbol] = self._records(store.SYMBOLS, Symbol, whole)
        self.relations: list[Relation] = self._records(store.RELATIONS, Relation, whole)
        self.digest: str = self._digest(whole)

    @classmethod
    def load(cls, out: Path) -> CodeIndex:
        """The index in ``out``; never raises (see ``problems``)."""
        try:
            return cls(out)
        except Exception as exc:  # fail open: a question about code never breaks a build
            empty = cls.__new__(cls)
            empty.out, empty.meta, empty.files, empty.symbols = Path(out), None, [], []
            empty.relations, empty.digest = [], ""
            empty.problems = [f"the index in {out} could not be read: {exc}"]
            return empty

    # --- loading --------------------------------------------------------------------------

    def _meta(self) -> IndexMeta | None:
        path = self.out / store.META
        try:
            meta = IndexMeta.model_validate_json(store.read_bytes(path))
        except FileNotFoundError:
            self.problems.append(f"no index in {self.out}: build one with `cadillac index`")
            return None
        except (OSError, ValueError) as exc:
            self.problems.append(f"{path} is unreadable ({_why(exc)}): rebuild the index")
            return None
        if meta.schema_version != SCHEMA_VERSION:
            self.problems.append(
                f"the index in {self.out} has schema {meta.schema_version}, this cadillac "
                f"reads {SCHEMA_VERSION}: rebuild it"
            )
        return meta

    def _records(self, name: str, model: type, whole: bool) -> list:
        try:
            records, bad = store.read_jsonl(self.out / name, model)
        except FileNotFoundError:
            if whole:
                self.problems.append(f"{self.out / name} is missing: rebuild the index")
            return []
        except OSError as exc:
            self.problems.append(f"{self.out / name} is unreadable ({_why(exc)})")
            return []
        if bad:
            self.problems.append(f"{self.out / name}: {bad} records did not validate, left out")
        return records

    def _digest(self, whole: bool) -> str:
        try:
            return store.read_bytes(self.out / store.DIGEST).decode("utf-8", "replace")
        except OSError as exc:
            if whole:
                self.problems.append(f"{self.out / store.DIGEST} is unreadable ({_why(exc)})")
            return ""

    # --- questions ------------------------------------------------------------------------

    @functools.cached_property
    def _search(self) -> SearchIndex:
        return SearchIndex(self.symbols, self.files)

    @functools.cached_property
    def _by_path(self) -> dict[str, FileRecord]:
        return {f.path: f for f in self.files}

    @_fail_open(list)
    def search(self, query: str, limit: int = 10, path: str | None = None) -> list[Hit]:
        """BM25 over symbols and files; ``path`` keeps hits whose path starts with it."""
        if not query.strip():
            return []
        return self._search.search(query, limit, path)

    @_fail_open(list)
    def symbol(self, name: str) -> list[Symbol]:
        """By exact name, then ``Class.method`` / ``module.func``, then ignoring case."""
        name = name.strip()
        exact = [s for s in self.symbols if s.name == name]
        if exact or not name:
            return exact
        qualified = self._qualified(name.replace("::", "."))
        if qualified:
            return qualified
        lower = name.lower()
        return [s for s in self.symbols if s.name.lower() == lower]

    def _qualified(self, name: str) -> list[Symbol]:
        if "." not in name:
            return []
        head, tail = name.rsplit(".", 1)
        modules = self._modules
        return [
            s
            for s in self.symbols
            if s.name == tail and (s.parent == head or head in modules.get(s.path, ()))
        ]

    @functools.cached_property
    def _modules(self) -> dict[str, set[str]]:
        """The names a file goes by: its module's dotted name and tails, its stem."""
        names: dict[str, set[str]] = defaultdict(set)
        for f in self.files:
            names[f.path].add(paths.stem(f.path))
        for s in self.symbols:
            if s.kind == "module":
                parts = s.name.split(".")
                names[s.path] |= {".".join(parts[i:]) for i in range(len(parts))}
        return names

    @_fail_open(lambda: Related(path=""))
    def related(self, path: str) -> Related:
        path = path.strip().removeprefix("./")
        groups: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for r in self.relations:
            for group, other in _sides(r, path):
                groups[group][other] += r.weight
        ranked = {
            g: sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))
            for g, weights in groups.items()
        }
        return Related(path=path, **ranked)

    @_fail_open(list)
    def tests_for(self, target: str) -> list[str]:
        """The test files covering a file, or the files defining a symbol of that name
        (and the tests named after it: ``test_parse`` for ``parse``)."""
        target = target.strip().removeprefix("./")
        if target in self._by_path:
            return [p for p, _ in self.related(target).tests]
        defined = self.symbol(target)
        found = {p for s in defined for p, _ in self.related(s.path).tests}
        word = target.replace("::", ".").rsplit(".", 1)[-1].lower()
        named = {
            s.path
            for s in self.symbols
            if s.kind in ("function", "method", "class")
            and word in s.name.lower()
            and s.name.lower() != word
            and is_test(s.path)
        }
        return sorted(found | named) if defined else []

    @_fail_open(list)
    def stale(self, root: Path) -> list[str]:
        """The files that changed, appeared or went since the index was built. Size and
        modification time first; a file whose stat differs is hashed before it counts."""
        root = Path(root)
        config = self.meta.config if self.meta is not None else IndexConfig()
        known = self._by_path
        seen, changed = set(), []
        walk = Walk(root, config, exclude=inside(self.out.absolute(), root.absolute()))
        for entry in walk:
            old = known.get(entry.rel)
            if old is not None:
                seen.add(entry.rel)
                if old.size == entry.size and old.mtime_ns == entry.mtime_ns:
                    continue
            try:
                data = entry.read(config.max_file_bytes)
            except OSError:
                continue
            if old is None and (len(data) > config.max_file_bytes or is_binary(data)):
                continue
            if old is None or hashlib.sha256(data).hexdigest() != old.sha256:
                changed.append(entry.rel)
        return sorted(changed + [p for p in known if p not in seen])


def _sides(r: Relation, path: str) -> list[tuple[str, str]]:
    """Which groups of ``related(path)`` the relation ``r`` adds to, and with which file."""
    if r.kind == "cochange":
        if path in (r.source, r.target):
            return [("cochanged", r.target if r.source == path else r.source)]
        return []
    out_group, in_group = ("imports", "imported_by") if r.kind == "imports" else ("covers", "tests")
    sides = []
    if r.source == path:
        sides.append((out_group, r.target))
    if r.target == path:
        sides.append((in_group, r.source))
    return sides


def _why(exc: Exception) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
